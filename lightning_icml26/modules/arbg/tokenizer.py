"""Centring, scaling and uniform binning of Cartesian coordinates into tokens (ArBG representation)."""

from __future__ import annotations

import math

import torch
from torch import Tensor

__all__ = ["CoordinateTokenizer"]


class CoordinateTokenizer(torch.nn.Module):
    """Map conformations ``(N, n_atoms, dim)`` to token sequences ``(N, n_atoms * dim)`` and back.

    ``u = x / scale`` (the caller centres), then ``tok = floor((u - lo) / delta)`` with ``delta = (hi - lo) / B``;
    decoding draws ``u`` uniformly inside the bin (uniform dequantisation), so the continuous density of a
    decoded sample is ``P(tok) / (delta * scale)^d``.

    Deviation from the official code (see docs/arbg.md): the code bins with spacing
    ``(hi - lo) / (B - 1)`` (rounding) but dequantises with width ``(hi - lo) / B``; here both use
    ``delta = (hi - lo) / B`` so the density is exact.

    Empirical dequantisation (``dequantization="empirical"``): instead of a uniform offset, the position inside a
    bin is drawn from the within-bin offsets seen in training data (:meth:`fit_offsets`). Each bin keeps a
    histogram of ``offset_resolution`` equal sub-bins of its offsets (pooled over all coordinates), plus a
    pseudo-count ``offset_prior`` per sub-bin (bins without data dequantise uniformly); the offset is drawn from
    that histogram, uniformly inside the chosen sub-bin. The within-bin density ``h_b(f)`` (``f`` in ``[0, 1)``)
    enters the exact density, ``P(tok) * prod_j h(f_j) / (delta * scale)^d``, so importance weights stay valid
    (:meth:`offset_log_density`). The authors' code offers dequantisation from empirical within-bin offsets;
    the histogram form (sub-bins, pseudo-count, pooling over coordinates) is this project's reconstruction.

    Args:
        num_bins: number of bins ``B`` (at least 2).
        coord_range: ``(lo, hi)`` in units of ``scale``.
        scale: the scalar standard deviation ``sigma`` (set it from data with :meth:`fit_scale`).
        dequantization: ``"uniform"`` (default) or ``"empirical"``.
        offset_resolution: sub-bins per bin of the empirical offset histogram.
        offset_prior: pseudo-count added to every sub-bin (``>= 0``; 0 allows zero density inside a bin).

    Raises:
        ValueError: on bad settings; :meth:`encode` raises when coordinates fall outside the range.

    Example:
        >>> tok = CoordinateTokenizer(num_bins=8, coord_range=(-2.0, 2.0), scale=1.0)
        >>> tok.encode(torch.tensor([[[-2.0, 1.99]]])).tolist()
        [[0, 7]]
    """

    scale: Tensor
    offset_counts: Tensor

    def __init__(
        self,
        num_bins: int = 1024,
        coord_range: tuple[float, float] = (-3.0, 3.0),
        scale: float = 1.0,
        dequantization: str = "uniform",
        offset_resolution: int = 16,
        offset_prior: float = 1.0,
    ):
        super().__init__()
        if dequantization not in ("uniform", "empirical"):
            raise ValueError(f"dequantization must be 'uniform' or 'empirical', got {dequantization!r}")
        if not isinstance(offset_resolution, int) or offset_resolution < 1:
            raise ValueError(f"offset_resolution must be an integer >= 1, got {offset_resolution!r}")
        if not offset_prior >= 0:
            raise ValueError(f"offset_prior must be >= 0, got {offset_prior!r}")
        if not isinstance(num_bins, int) or num_bins < 2:
            raise ValueError(f"num_bins must be an integer >= 2, got {num_bins!r}")
        lo, hi = (float(v) for v in coord_range)
        if not hi > lo:
            raise ValueError(f"coord_range must be (lo, hi) with lo < hi, got {tuple(coord_range)}")
        if not scale > 0:
            raise ValueError(f"scale must be positive, got {scale}")
        self.num_bins, self.lo, self.hi = num_bins, lo, hi
        self.register_buffer("scale", torch.tensor(float(scale), dtype=torch.float64))
        self.dequantization, self.offset_resolution, self.offset_prior = dequantization, offset_resolution, offset_prior
        if dequantization == "empirical":
            self.register_buffer("offset_counts", torch.zeros(num_bins, offset_resolution, dtype=torch.float64))

    @property
    def bin_width(self) -> float:
        """Bin width ``delta`` in scaled units."""
        return (self.hi - self.lo) / self.num_bins

    def log_volume(self, d: int) -> float:
        """``d * log(delta * scale)``: subtract from the summed token log-probabilities to get a density."""
        return d * math.log(self.bin_width * float(self.scale))

    def fit_scale(self, x: Tensor) -> float:
        """Set ``scale`` to the standard deviation of centred coordinates ``x`` and return it.

        Example:
            >>> t = CoordinateTokenizer()
            >>> round(t.fit_scale(torch.tensor([[[1.0], [-1.0]]])), 3)
            1.0
        """
        centred = x - x.mean(dim=1, keepdim=True)
        value = float(centred.double().pow(2).mean().sqrt())
        if not value > 0:
            raise ValueError(f"cannot fit scale: centred coordinates have standard deviation {value}")
        self.scale.fill_(value)
        return value

    def encode(self, x: Tensor) -> Tensor:
        """Tokens ``(N, d)`` (int64) of coordinates ``(N, n_atoms, dim)`` or ``(N, d)``.

        Raises:
            ValueError: if coordinates lie outside ``coord_range * scale``; the message gives how many, the
                extreme value and the options that widen the range (``coord_range`` or ``num_bins``).
        """
        return self._positions(x).floor().long().clamp_(0, self.num_bins - 1)

    def _positions(self, x: Tensor) -> Tensor:
        """Continuous bin positions ``(u - lo) / delta`` ``(N, d)``; raises outside the range (see :meth:`encode`)."""
        u = x.reshape(x.shape[0], -1).double() / self.scale
        pos = (u - self.lo) / self.bin_width
        bad = (pos < 0) | (pos >= self.num_bins) | ~torch.isfinite(pos)
        if bool(bad.any()):
            worst = float(u[bad].abs().max())
            raise ValueError(
                f"{int(bad.sum())} coordinates (in {int(bad.any(dim=1).sum())} of {u.shape[0]} conformations) lie "
                f"outside the binning range coord_range=({self.lo}, {self.hi}) "
                f"in units of scale={float(self.scale):.4g} "
                f"(largest |value| {worst:.3g}); widen it with the coord_range option (e.g. "
                f"coord_range=({-math.ceil(worst + 0.5)}, {math.ceil(worst + 0.5)})) and raise num_bins to keep the "
                "resolution"
            )
        return pos

    def _offset_probs(self) -> Tensor:
        """Sub-bin probabilities ``(B, K)`` of the empirical within-bin offset histogram."""
        counts = self.offset_counts + self.offset_prior
        total = counts.sum(dim=1, keepdim=True)
        uniform = torch.full_like(counts, 1.0 / self.offset_resolution)
        return torch.where(total > 0, counts / total.clamp_min(1e-300), uniform)

    def fit_offsets(self, x: Tensor) -> None:
        """Fit the empirical within-bin offset histogram on coordinates ``x`` (``(N, n_atoms, dim)`` or ``(N, d)``).

        Raises:
            ValueError: if the tokenizer was built with ``dequantization="uniform"`` or ``x`` is out of range.

        Example:
            >>> t = CoordinateTokenizer(num_bins=2, coord_range=(0.0, 2.0), dequantization="empirical",
            ...                         offset_resolution=2, offset_prior=0.0)
            >>> t.fit_offsets(torch.tensor([[0.1], [0.2], [1.7]]))
            >>> t.offset_counts.tolist()
            [[2.0, 0.0], [0.0, 1.0]]
        """
        if self.dequantization != "empirical":
            raise ValueError(f"fit_offsets needs dequantization='empirical', got {self.dequantization!r}")
        pos = self._positions(x).reshape(-1)
        tok = pos.floor().long().clamp_(0, self.num_bins - 1)
        sub = ((pos - tok) * self.offset_resolution).floor().long().clamp_(0, self.offset_resolution - 1)
        counts = torch.zeros(self.num_bins * self.offset_resolution, dtype=torch.float64, device=pos.device)
        counts.index_add_(0, tok * self.offset_resolution + sub, torch.ones_like(pos))
        self.offset_counts.copy_(counts.reshape(self.num_bins, self.offset_resolution))

    def offset_log_density(self, x: Tensor) -> Tensor:
        """``sum_j log h(f_j)`` ``(N,)``: log density of the within-bin offsets (0 for uniform dequantisation).

        Example:
            >>> t = CoordinateTokenizer(num_bins=4, coord_range=(0.0, 4.0))
            >>> t.offset_log_density(torch.tensor([[0.3, 2.9]])).tolist()
            [0.0]
        """
        pos = self._positions(x)
        if self.dequantization == "uniform":
            return torch.zeros(pos.shape[0], dtype=torch.float64, device=pos.device)
        tok = pos.floor().long().clamp_(0, self.num_bins - 1)
        sub = ((pos - tok) * self.offset_resolution).floor().long().clamp_(0, self.offset_resolution - 1)
        probs = self._offset_probs().to(pos.device)
        return (probs[tok, sub] * self.offset_resolution).log().sum(dim=1)

    def centres(self, tokens: Tensor, dtype: torch.dtype = torch.float64) -> Tensor:
        """Bin centres of ``tokens`` in units of ``scale`` (``lo + (token + 1/2) x bin_width``), as ``dtype``.

        Example:
            >>> t = CoordinateTokenizer(num_bins=4, coord_range=(0.0, 4.0))
            >>> t.centres(torch.tensor([[0, 3]])).tolist()
            [[0.5, 3.5]]
        """
        return self.lo + (tokens.to(dtype) + 0.5) * self.bin_width

    def decode(self, tokens: Tensor, generator: torch.Generator | None = None, dequantize: bool = True) -> Tensor:
        """Coordinates ``(N, d)`` (float64) of tokens, dequantised inside each bin (uniformly or empirically).

        ``dequantize=False`` returns bin centres.

        Example:
            >>> t = CoordinateTokenizer(num_bins=4, coord_range=(0.0, 4.0))
            >>> t.decode(torch.tensor([[0, 3]]), dequantize=False).tolist()
            [[0.5, 3.5]]
        """
        if not dequantize:
            return self.centres(tokens) * self.scale
        if self.dequantization == "uniform":
            offset = torch.rand(tokens.shape, generator=generator, dtype=torch.float64, device=tokens.device)
        else:
            cdf = self._offset_probs().to(tokens.device).cumsum(dim=1)
            u = torch.rand((*tokens.shape, 2), generator=generator, dtype=torch.float64, device=tokens.device)
            rows = cdf[tokens]
            sub = torch.searchsorted(rows, (u[..., :1] * rows[..., -1:]).contiguous()).squeeze(-1)
            sub = sub.clamp_(0, self.offset_resolution - 1)
            offset = (sub.double() + u[..., 1]) / self.offset_resolution
        return (self.lo + (tokens.double() + offset) * self.bin_width) * self.scale
