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

    Args:
        num_bins: number of bins ``B`` (at least 2).
        coord_range: ``(lo, hi)`` in units of ``scale``.
        scale: the scalar standard deviation ``sigma`` (set it from data with :meth:`fit_scale`).

    Raises:
        ValueError: on bad settings; :meth:`encode` raises when coordinates fall outside the range.

    Example:
        >>> tok = CoordinateTokenizer(num_bins=8, coord_range=(-2.0, 2.0), scale=1.0)
        >>> tok.encode(torch.tensor([[[-2.0, 1.99]]])).tolist()
        [[0, 7]]
    """

    scale: Tensor

    def __init__(self, num_bins: int = 1024, coord_range: tuple[float, float] = (-3.0, 3.0), scale: float = 1.0):
        super().__init__()
        if not isinstance(num_bins, int) or num_bins < 2:
            raise ValueError(f"num_bins must be an integer >= 2, got {num_bins!r}")
        lo, hi = (float(v) for v in coord_range)
        if not hi > lo:
            raise ValueError(f"coord_range must be (lo, hi) with lo < hi, got {tuple(coord_range)}")
        if not scale > 0:
            raise ValueError(f"scale must be positive, got {scale}")
        self.num_bins, self.lo, self.hi = num_bins, lo, hi
        self.register_buffer("scale", torch.tensor(float(scale), dtype=torch.float64))

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
        return pos.floor().long().clamp_(0, self.num_bins - 1)

    def decode(self, tokens: Tensor, generator: torch.Generator | None = None, dequantize: bool = True) -> Tensor:
        """Coordinates ``(N, d)`` (float64) of tokens, uniformly dequantised inside each bin.

        Example:
            >>> t = CoordinateTokenizer(num_bins=4, coord_range=(0.0, 4.0))
            >>> t.decode(torch.tensor([[0, 3]]), dequantize=False).tolist()
            [[0.5, 3.5]]
        """
        offset = (
            torch.rand(tokens.shape, generator=generator, dtype=torch.float64, device=tokens.device)
            if dequantize
            else torch.full(tokens.shape, 0.5, dtype=torch.float64, device=tokens.device)
        )
        return (self.lo + (tokens.double() + offset) * self.bin_width) * self.scale
