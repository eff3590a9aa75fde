"""Self-normalised importance sampling for Boltzmann generators: weights, chirality fix, clipping, resampling."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from lightning_icml26._checks import check_energies, check_log_weights

__all__ = ["BoltzmannReweighter", "ChiralityFix", "ReweightResult", "effective_sample_size", "signed_volumes"]


def effective_sample_size(log_weights: Tensor, normalize: bool = True) -> Tensor:
    """Kish effective sample size ``exp(2 LSE(log w) - LSE(2 log w))`` (divided by ``N`` when ``normalize``).

    ``-inf`` entries are zero weights (they count in ``N``).

    Args:
        log_weights: unnormalised log importance weights ``(N,)``.
        normalize: return ESS / N.

    Raises:
        TypeError: if ``log_weights`` is not a tensor.
        ValueError: if it is not 1-D, is empty or contains ``nan``/``+inf``.

    Example:
        >>> round(float(effective_sample_size(torch.log(torch.tensor([1.0, 1.0, 2.0])))), 4)  # 16 / 6 / 3
        0.8889
    """
    lw = check_log_weights(log_weights)
    if not bool(torch.isfinite(lw).any()):
        return torch.tensor(0.0, dtype=torch.float64)
    ess = torch.exp(2 * torch.logsumexp(lw, 0) - torch.logsumexp(2 * lw, 0))
    return ess / lw.numel() if normalize else ess


def signed_volumes(x: Tensor, centres: Sequence[tuple[int, int, int, int]]) -> Tensor:
    """Signed volumes ``det[a - c, b - c, d - c]`` of chiral centres ``(c, a, b, d)``: ``(N, len(centres))``.

    Example:
        >>> x = torch.tensor([[[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]])
        >>> signed_volumes(x, [(0, 1, 2, 3)]).tolist(), signed_volumes(-x, [(0, 1, 2, 3)]).tolist()
        ([[1.0]], [[-1.0]])
    """
    idx = torch.tensor(list(centres), dtype=torch.long)
    c = x[:, idx[:, 0]]
    m = torch.stack([x[:, idx[:, 1]] - c, x[:, idx[:, 2]] - c, x[:, idx[:, 3]] - c], dim=-2)
    return torch.linalg.det(m)


@dataclass
class ChiralityFix:
    """Fix the handedness of generated peptides: mirror ``x -> -x`` when a chiral centre is wrong, drop if still wrong.

    Args:
        centres: chiral centres as ``(centre, a, b, c)`` atom indices (for an L-amino acid: ``(CA, N, C, CB)``).
        signs: the reference sign (+1 / -1) of each centre's signed volume.

    Example:
        >>> fix = ChiralityFix(centres=[(0, 1, 2, 3)], signs=[1.0])
        >>> x = -torch.tensor([[[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]])
        >>> y, keep = fix(x)
        >>> signed_volumes(y, fix.centres).tolist(), keep.tolist()
        ([[1.0]], [True])
    """

    centres: Sequence[tuple[int, int, int, int]]
    signs: Sequence[float]

    def __post_init__(self) -> None:
        if len(self.centres) != len(self.signs) or not self.centres:
            raise ValueError(
                f"centres and signs must be non-empty and of equal length, got {self.centres}, {self.signs}"
            )

    @classmethod
    def from_reference(cls, reference: Tensor, centres: Sequence[tuple[int, int, int, int]]) -> ChiralityFix:
        """Take the majority sign of each centre in reference conformations."""
        signs = torch.sign(torch.sign(signed_volumes(reference.double(), centres)).sum(0))
        return cls(list(centres), [float(s) if s != 0 else 1.0 for s in signs])

    def correct(self, x: Tensor) -> Tensor:
        """Boolean ``(N,)``: every centre of ``x`` has the reference handedness."""
        signs = torch.tensor(list(self.signs), dtype=x.dtype, device=x.device)
        return (torch.sign(signed_volumes(x, self.centres)) == signs).all(dim=1)

    def __call__(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Return ``(fixed x, keep mask)``."""
        ok = self.correct(x)
        fixed = torch.where(ok[:, None, None], x, -x)
        return fixed, self.correct(fixed)


@dataclass
class ReweightResult:
    """Outcome of :meth:`BoltzmannReweighter.reweight`.

    Attributes:
        samples: conformations after the chirality fix (dropped ones removed).
        energies: their reduced energies.
        log_weights: normalised-free log importance weights (clipped entries are ``-inf``).
        kept: indices into the input of the rows in ``samples``.
        ess: Kish effective sample size over ``log_weights``, divided by the number of input samples.
        resampled: ``samples[indices]`` for the multinomial resample (SNIS), or ``None``.
        resampled_energies: energies of the resample, or ``None``.
    """

    samples: Tensor
    energies: Tensor
    log_weights: Tensor
    kept: Tensor
    ess: float
    resampled: Tensor | None = None
    resampled_energies: Tensor | None = None


class BoltzmannReweighter:
    """Importance weights ``log w = -E(x) - log q(x)`` towards ``exp(-E)``, with the ArBG evaluation protocol.

    Protocol (docs/arbg.md): optional chirality fix (mirror, drop if still wrong); ``log w = -E - log q``
    (``-|com|^2 / (2 com_std^2)`` is added to the target when ``com_std`` is set: the generators are trained with
    a Gaussian centre of mass, so the translation-invariant Boltzmann density needs that factor to be proper);
    weights above the ``1 - clip_quantile`` quantile are dropped (set to ``-inf``); the Kish ESS; resampling with
    replacement with probabilities ``softmax(log w)``. Note: as in the official code, a mirrored sample keeps the
    ``log q`` of the drawn sample.

    Args:
        energy_fn: an :class:`~lightning_icml26.data.boltzmann.energies.Energy` (reduced energies, in kT).
        clip_quantile: fraction of the largest log weights to drop, in ``[0, 1)`` (0.002 in the paper).
        chirality: optional :class:`ChiralityFix`.
        com_std: centre-of-mass standard deviation of the proposal's training augmentation (``None``: no term).
        on_nonfinite: ``"raise"`` (default) or ``"drop"`` (conformations with non-finite energy get zero weight;
            their number is in ``ReweightResult.log_weights`` as ``-inf`` entries).

    Example:
        >>> rw = BoltzmannReweighter(lambda x: 0.5 * x.pow(2).sum(dim=(1, 2)), clip_quantile=0.0)
        >>> x = torch.randn(1000, 1, 1, dtype=torch.float64)
        >>> res = rw.reweight(x, -0.5 * x.pow(2).sum(dim=(1, 2)))  # proposal == target
        >>> round(res.ess, 6)
        1.0
    """

    def __init__(
        self,
        energy_fn: Callable[[Tensor], Tensor],
        clip_quantile: float = 0.002,
        chirality: ChiralityFix | None = None,
        com_std: float | None = None,
        on_nonfinite: str = "raise",
    ) -> None:
        if not callable(energy_fn):
            raise TypeError(f"energy_fn must be callable, got {type(energy_fn).__name__}")
        if not 0.0 <= clip_quantile < 1.0:
            raise ValueError(f"clip_quantile must be in [0, 1), got {clip_quantile}")
        if com_std is not None and not com_std > 0:
            raise ValueError(f"com_std must be None or positive, got {com_std}")
        if on_nonfinite not in ("raise", "drop"):
            raise ValueError(f"on_nonfinite must be 'raise' or 'drop', got {on_nonfinite!r}")
        self.energy_fn, self.clip_quantile, self.chirality = energy_fn, clip_quantile, chirality
        self.com_std, self.on_nonfinite = com_std, on_nonfinite

    def energies(self, x: Tensor) -> Tensor:
        """Reduced energies of ``x`` with shape and finiteness checks (per ``on_nonfinite``)."""
        with torch.no_grad():
            e = self.energy_fn(x)
        name = getattr(self.energy_fn, "__name__", type(self.energy_fn).__name__)
        return check_energies(e, x.shape[0], name=name, allow_nonfinite=self.on_nonfinite == "drop").double()

    def log_target(self, x: Tensor, energies: Tensor) -> Tensor:
        """Unnormalised log target density ``-E(x)`` (plus the centre-of-mass Gaussian when ``com_std`` is set)."""
        out = -energies
        if self.com_std is not None:
            com = x.double().mean(dim=1)
            out = out - com.pow(2).sum(-1) / (2 * self.com_std**2)
        return out

    def clip(self, log_w: Tensor) -> Tensor:
        """Set log weights above the ``1 - clip_quantile`` quantile (of the finite ones) to ``-inf``.

        Example:
            >>> BoltzmannReweighter(lambda x: x, clip_quantile=0.25).clip(torch.tensor([0.0, 1, 2, 3])).tolist()
            [0.0, 1.0, 2.0, -inf]
        """
        if self.clip_quantile == 0:
            return log_w
        finite = log_w[torch.isfinite(log_w)]
        if finite.numel() == 0:
            return log_w
        threshold = torch.quantile(finite.double(), 1 - self.clip_quantile)
        return torch.where(log_w > threshold, torch.full_like(log_w, float("-inf")), log_w)

    @staticmethod
    def resample(log_w: Tensor, num: int, generator: torch.Generator | None = None) -> Tensor:
        """``num`` indices drawn with replacement with probabilities ``softmax(log_w)``.

        Raises:
            ValueError: if every weight is zero.
        """
        if not bool(torch.isfinite(log_w).any()):
            raise ValueError("cannot resample: every log weight is -inf (no sample has non-zero weight)")
        probs = torch.softmax(log_w.double(), dim=0)
        return torch.multinomial(probs, num, replacement=True, generator=generator)

    def reweight(
        self, x: Tensor, log_q: Tensor, num_resample: int | None = None, generator: torch.Generator | None = None
    ) -> ReweightResult:
        """Run the protocol on samples ``x`` (``(N, n_atoms, dim)``) with proposal log densities ``log_q``.

        Args:
            x: generated conformations.
            log_q: their log densities under the proposal (same sampling settings).
            num_resample: size of the SNIS resample (``None``: no resampling; 0: ``N``).
            generator: optional generator for resampling.
        """
        if log_q.shape != (x.shape[0],):
            raise ValueError(f"log_q must have shape ({x.shape[0]},), got {tuple(log_q.shape)}")
        n = x.shape[0]
        kept = torch.arange(n)
        if self.chirality is not None:
            x, keep = self.chirality(x)
            kept, x, log_q = kept[keep], x[keep], log_q[keep]
        energies = self.energies(x)
        log_w = self.log_target(x, energies) - log_q.double()
        log_w = torch.where(torch.isfinite(log_w), log_w, torch.full_like(log_w, float("-inf")))
        log_w = self.clip(log_w)
        # ESS relative to the number of drawn samples (dropped samples count as zero weight)
        ess = float(effective_sample_size(log_w, normalize=False)) / n if log_w.numel() else 0.0
        result = ReweightResult(x, energies, log_w, kept, ess)
        if num_resample is not None:
            idx = self.resample(log_w, num_resample or n, generator)
            result.resampled, result.resampled_energies = x[idx], energies[idx]
        return result
