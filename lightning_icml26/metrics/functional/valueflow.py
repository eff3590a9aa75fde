"""Functional twin of :class:`~lightning_icml26.metrics.AnchorPLIntensity` (anchor-based intensity)."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from lightning_icml26.algorithms.valueflow_intensity import check_rankings, estimate_intensity

__all__ = ["anchor_pl_intensity", "scatter_windows"]


def scatter_windows(
    rankings_state: Tensor,
    anchors_state: Tensor,
    filled_state: Tensor,
    response_ids: Tensor,
    window_ids: Tensor,
    rankings: Tensor,
    anchor_intensities: Tensor,
) -> None:
    """Write windows into the ``[R, m, k]`` / ``[R, m, k - 1]`` / ``[R, m]`` states in place (with checks).

    Raises:
        ValueError: on ids out of range, mismatched shapes, non-permutations or intensities outside
            ``[-10, 10]``.

    Example:
        >>> r, a, f = torch.zeros(2, 1, 3, dtype=torch.long), torch.zeros(2, 1, 2), torch.zeros(2, 1, dtype=torch.long)
        >>> scatter_windows(r, a, f, torch.tensor([1]), torch.tensor([0]), torch.tensor([[2, 0, 1]]),
        ...                 torch.tensor([[1.0, -1.0]]))
        >>> f.tolist(), r[1, 0].tolist()
        ([[0], [1]], [2, 0, 1])
    """
    responses, windows, k = rankings_state.shape
    if rankings.ndim != 2 or rankings.shape[1] != k:
        raise ValueError(f"rankings must be [B, k] with k = {k}, got shape {tuple(rankings.shape)}")
    batch = rankings.shape[0]
    check_rankings(rankings)
    if anchor_intensities.shape != (batch, k - 1):
        raise ValueError(
            f"anchor_intensities must be [B, k - 1] = {(batch, k - 1)}, got {tuple(anchor_intensities.shape)}"
        )
    if not bool(torch.isfinite(anchor_intensities).all()) or bool((anchor_intensities.abs() > 10).any()):
        raise ValueError(f"anchor_intensities must lie in [-10, 10], got {anchor_intensities.tolist()}")
    for name, ids, size in (("response_ids", response_ids, responses), ("window_ids", window_ids, windows)):
        if ids.shape != (batch,) or ids.is_floating_point():
            raise ValueError(f"{name} must be a [B] = ({batch},) integer tensor, got {tuple(ids.shape)} {ids.dtype}")
        if batch and (int(ids.min()) < 0 or int(ids.max()) >= size):
            raise ValueError(f"{name} must lie in [0, {size}), got values in [{int(ids.min())}, {int(ids.max())}]")
    rid, wid = response_ids.long().to(rankings_state.device), window_ids.long().to(rankings_state.device)
    rankings_state.index_put_((rid, wid), rankings.long().to(rankings_state.device), accumulate=True)
    anchors_state.index_put_((rid, wid), anchor_intensities.to(anchors_state), accumulate=True)
    filled_state.index_put_((rid, wid), torch.ones_like(rid), accumulate=True)


def _estimate(rankings: Tensor, anchors: Tensor, filled: Tensor, l2: float, scale: float, margin: float) -> Tensor:
    """Per-response intensities from the states; ``nan`` for a response without any window."""
    if filled.numel() and int(filled.max()) > 1:
        raise ValueError("a (response, window) pair was updated more than once (across updates or ranks)")
    full = filled.bool().all(dim=1)
    partial = filled.bool().any(dim=1) & ~full
    if bool(partial.any()):
        raise ValueError(f"responses {torch.nonzero(partial).flatten().tolist()} have only some of their windows")
    out = torch.full((rankings.shape[0],), float("nan"), dtype=torch.float64)
    if bool(full.any()):
        est = estimate_intensity(rankings[full].cpu().numpy(), anchors[full].double().cpu().numpy(), l2, scale, margin)
        out[full] = torch.from_numpy(np.asarray(est, dtype=np.float64))
    return out.to(torch.float32)


def anchor_pl_intensity(
    response_ids: Tensor,
    window_ids: Tensor,
    rankings: Tensor,
    anchor_intensities: Tensor,
    num_responses: int,
    num_windows: int,
    l2: float = 1e-3,
    utility_scale: float = 1.0,
    guard_margin: float = 0.0,
) -> Tensor:
    """Intensity of every response from ranked windows (same arguments and order as ``AnchorPLIntensity``).

    Args:
        response_ids: ``[B]`` response of each window.
        window_ids: ``[B]`` window index ``0..num_windows-1`` of each row.
        rankings: ``[B, k]`` permutations, best first; item 0 is the response, items ``1..k-1`` the anchors.
        anchor_intensities: ``[B, k - 1]`` anchor intensities in ``[-10, 10]``.
        num_responses: number of responses ``R``.
        num_windows: windows per response ``m``.
        l2: ridge of the Plackett-Luce fit (paper: ``1e-3``).
        utility_scale: anchor utilities are ``utility_scale * I_a``.
        guard_margin: offset of the all-lost / all-won guards (0: the next float beyond the anchors).

    Returns:
        ``[R]`` float32 intensities (``nan`` for a response without windows).

    Example:
        >>> rank = torch.tensor([[1, 0, 2], [0, 1, 2]])
        >>> out = anchor_pl_intensity(torch.tensor([0, 0]), torch.tensor([0, 1]), rank,
        ...                           torch.tensor([[5.0, -5.0], [5.0, -5.0]]), num_responses=1, num_windows=2)
        >>> bool(-5 <= out[0] <= 5.5)
        True
    """
    k = rankings.shape[-1] if rankings.ndim == 2 else 0
    if k < 2:
        raise ValueError(f"rankings must be [B, k] with k >= 2, got shape {tuple(rankings.shape)}")
    state_r = torch.zeros(num_responses, num_windows, k, dtype=torch.long)
    state_a = torch.zeros(num_responses, num_windows, k - 1, dtype=torch.float64)
    state_f = torch.zeros(num_responses, num_windows, dtype=torch.long)
    scatter_windows(state_r, state_a, state_f, response_ids, window_ids, rankings, anchor_intensities.double())
    return _estimate(state_r, state_a, state_f, l2, utility_scale, guard_margin)
