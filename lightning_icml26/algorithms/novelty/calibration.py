"""Empirical-CDF calibration of a seen detector on a held-out slice of the buffer.

:class:`CalibratedSeenDetector` splits the buffered embeddings at random into a fitting part and a held-out
part (``holdout`` share), fits the detector on the first and records the detector's scores on the second.
The calibrated "how seen" of a new input is the empirical CDF of those held-out scores at its score,
``F(s) = #{held-out scores <= s} / n_holdout``, so for held-out buffer items it is (close to) uniform on
``[0, 1]`` whatever the detector's raw scale, and novelty is ``1 - F(s)``.

The empty-buffer rule: with fewer than ``min_buffer`` buffered items the detector is not fitted and
:meth:`CalibratedSeenDetector.novelty` returns zeros (no novelty signal until there is a history), while
:meth:`CalibratedSeenDetector.fit` with fewer items raises. The split is drawn from ``seed`` and the number of
fits so far, so refitting the same buffer after a checkpoint gives the same detector.
"""

from __future__ import annotations

import torch
from torch import Tensor

from lightning_icml26.algorithms.novelty.detectors import SeenDetector, check_embeddings

__all__ = ["CalibratedSeenDetector", "EmpiricalCDF"]


class EmpiricalCDF:
    """Right-continuous empirical CDF of reference scores.

    Args:
        reference: the 1-D reference scores (at least one, finite).

    Example:
        >>> EmpiricalCDF(torch.tensor([1.0, 2.0, 3.0, 4.0]))(torch.tensor([0.0, 2.0, 2.5, 9.0]))
        tensor([0.0000, 0.5000, 0.5000, 1.0000], dtype=torch.float64)
    """

    def __init__(self, reference: Tensor) -> None:
        if not isinstance(reference, Tensor) or reference.ndim != 1 or reference.numel() == 0:
            raise ValueError(
                f"reference must be a non-empty 1-D tensor, got {getattr(reference, 'shape', reference)!r}"
            )
        if not bool(torch.isfinite(reference).all()):
            raise ValueError("reference holds non-finite values")
        self.sorted = torch.sort(reference.detach().to("cpu", torch.float64)).values

    def __call__(self, scores: Tensor) -> Tensor:
        """``F(scores)``: the share of reference scores ``<=`` each score (float64)."""
        s = scores.detach().to("cpu", torch.float64).contiguous()
        return torch.searchsorted(self.sorted, s, right=True).to(torch.float64) / self.sorted.numel()


class CalibratedSeenDetector:
    """A seen detector plus its empirical-CDF calibration on a held-out slice of the buffer.

    Args:
        detector: any :class:`~lightning_icml26.algorithms.novelty.SeenDetector`.
        holdout: share of the buffer held out for calibration, in ``(0, 1)``.
        min_buffer: buffered items needed before the detector is fitted (at least 4).
        seed: seed of the held-out split.

    Attributes:
        fitted: whether a detector and calibration are in place.
        dim: embedding width of the last fit.

    Example:
        >>> from lightning_icml26.algorithms.novelty import KNNDistanceDetector
        >>> cal = CalibratedSeenDetector(KNNDistanceDetector(k=3), min_buffer=8)
        >>> cal.novelty(torch.zeros(2, 2))  # nothing buffered yet: no novelty signal
        tensor([0., 0.], dtype=torch.float64)
        >>> g = torch.Generator().manual_seed(0)
        >>> _ = cal.fit(torch.randn(40, 2, generator=g))
        >>> bool(cal.novelty(torch.full((1, 2), 8.0)) == 1.0)
        True
    """

    def __init__(self, detector: SeenDetector, holdout: float = 0.25, min_buffer: int = 16, seed: int = 0) -> None:
        if not isinstance(detector, SeenDetector):
            raise TypeError(f"detector must offer fit and score (SeenDetector), got {type(detector).__name__}")
        if not 0.0 < float(holdout) < 1.0:
            raise ValueError(f"holdout must lie in (0, 1), got {holdout!r}")
        if isinstance(min_buffer, bool) or not isinstance(min_buffer, int) or min_buffer < 4:
            raise ValueError(f"min_buffer must be an int >= 4, got {min_buffer!r}")
        self.detector = detector
        self.holdout = float(holdout)
        self.min_buffer = min_buffer
        self.seed = int(seed)
        self.cdf: EmpiricalCDF | None = None
        self.dim: int | None = None
        self.num_fits = 0

    @property
    def fitted(self) -> bool:
        """Whether :meth:`fit` has run."""
        return self.cdf is not None

    def fit(self, embeddings: Tensor) -> CalibratedSeenDetector:
        """Split, fit the detector and calibrate.

        Args:
            embeddings: ``(n, d)`` embeddings of the buffered problems, ``n >= min_buffer``.

        Returns:
            ``self``.

        Raises:
            ValueError: with fewer than ``min_buffer`` rows (an empty buffer included).
        """
        x = check_embeddings(embeddings)
        n = x.shape[0]
        if n < self.min_buffer:
            raise ValueError(
                f"embeddings has {n} rows; the seen detector is fitted from min_buffer={self.min_buffer} buffered "
                "problems (below that, novelty is zero)"
            )
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + self.num_fits)
        perm = torch.randperm(n, generator=gen)
        n_hold = max(1, round(self.holdout * n))
        held, rest = perm[:n_hold], perm[n_hold:]
        self.detector.fit(x[rest])
        self.cdf = EmpiricalCDF(self.detector.score(x[held]))
        self.dim = int(x.shape[1])
        self.num_fits += 1
        return self

    def seen(self, embeddings: Tensor) -> Tensor:
        """Calibrated "how seen" ``F(D(x))`` in ``[0, 1]`` (ones while unfitted, so that novelty is zero)."""
        if self.cdf is None:
            x = check_embeddings(embeddings)
            return torch.ones(x.shape[0], dtype=torch.float64)
        x = check_embeddings(embeddings, self.dim)
        return self.cdf(self.detector.score(x))

    def novelty(self, embeddings: Tensor) -> Tensor:
        """``1 - F(D(x))``; zeros while fewer than ``min_buffer`` problems are buffered (the detector is unfitted)."""
        return 1.0 - self.seen(embeddings)

    def flags(self, embeddings: Tensor, threshold: float = 0.05) -> Tensor:
        """Boolean "flagged as seen": the calibrated score is above ``threshold`` (all False while unfitted).

        With ``threshold=0.05`` an input is flagged when its raw score is above the 5 % quantile of held-out
        buffer items, i.e. it would pass as a buffered problem at a 5 % false-rejection rate.
        """
        if not 0.0 <= threshold < 1.0:
            raise ValueError(f"threshold must lie in [0, 1), got {threshold!r}")
        if self.cdf is None:
            return torch.zeros(check_embeddings(embeddings).shape[0], dtype=torch.bool)
        return self.seen(embeddings) > threshold

    def state_dict(self) -> dict[str, int]:
        """The fit counter (the detector itself is refitted from the buffer on load; see the module docstring)."""
        return {"num_fits": self.num_fits}

    def load_state_dict(self, state: dict[str, int], embeddings: Tensor | None) -> None:
        """Restore from :meth:`state_dict` by refitting on the same buffer with the same split.

        Args:
            state: what :meth:`state_dict` returned.
            embeddings: the buffer the last fit used (``None`` or too few rows when it had not been fitted).
        """
        saved = int(state.get("num_fits", 0))
        self.cdf, self.dim = None, None
        if saved == 0 or embeddings is None or embeddings.shape[0] < self.min_buffer:
            self.num_fits = saved
            return
        self.num_fits = saved - 1
        self.fit(embeddings)
