"""VALUEFLOW figures: anchor-based intensity and the retrieval of hierarchical value embeddings.

:func:`anchor_pl_intensity` is the functional twin of :class:`~lightning_icml26.metrics.AnchorPLIntensity`;
:func:`hierarchical_retrieval` scores embeddings against a label tree.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.stats import spearmanr
from torch import Tensor

from lightning_icml26.algorithms.valueflow_intensity import check_rankings, estimate_intensity

__all__ = ["anchor_pl_intensity", "hierarchical_retrieval", "label_tree_agreement", "scatter_windows"]


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


def label_tree_agreement(sim: np.ndarray, levels: np.ndarray, directions: np.ndarray) -> dict[str, float]:
    """The two embedding figures as VALUEFLOW's evaluation code defines them (label levels + direction).

    ``rank_pairwise``: for every query, the other texts fall into five bins by how far up the tree they part
    from it (0 same leaf and direction, 1 same leaf and the other direction, 2 same L2 and another L3, 3 same L1
    and another L2, 4 another L1); the share of cross-bin pairs whose similarity to the query is ordered like
    their bins (all pairs here; the authors draw one text per bin). ``pearson_labels``: Pearson correlation of
    the similarity with (the number of level labels that agree, position by position) + 0.5 x same direction.

    Args:
        sim: ``(N, N)`` similarities.
        levels: ``(N, 3)`` label ids per level.
        directions: ``(N,)`` direction ids.

    Example:
        >>> lv, dv = np.array([[0, 0, 0], [0, 0, 0], [1, 1, 1]]), np.array([0, 0, 0])
        >>> sim = np.array([[1.0, 0.9, 0.1], [0.9, 1.0, 0.2], [0.1, 0.2, 1.0]])
        >>> label_tree_agreement(sim, lv, dv)["rank_pairwise"]
        1.0
    """
    n = len(sim)
    eq = levels[:, None, :] == levels[None, :, :]
    same_dir = directions[:, None] == directions[None, :]
    bins = np.full((n, n), 4)
    bins[eq[..., 0]] = 3
    bins[eq[..., 0] & eq[..., 1]] = 2
    bins[eq.all(-1)] = 1
    bins[eq.all(-1) & same_dir] = 0
    correct = total = 0
    for a in range(n):
        keep = np.arange(n) != a
        s_a, b_a = sim[a, keep], bins[a, keep]
        groups = [np.sort(s_a[b_a == b]) for b in range(5)]
        for p in range(5):
            for q in range(p + 1, 5):
                if len(groups[p]) and len(groups[q]):  # pairs (x in bin p, y in bin q) with x > y
                    correct += int(np.searchsorted(groups[q], groups[p], side="left").sum())
                    total += len(groups[p]) * len(groups[q])
    label_sim = eq.sum(-1) + 0.5 * same_dir
    upper = np.triu_indices(n, 1)
    return {
        "rank_pairwise": correct / total if total else float("nan"),
        "pearson_labels": float(np.corrcoef(sim[upper], label_sim[upper])[0, 1]),
    }


def hierarchical_retrieval(z: Tensor, levels: Tensor, directions: Tensor) -> dict[str, float]:
    """Retrieval figures of normalised embeddings against a label tree (levels, then direction).

    ``map_l<l>``: mean average precision of cosine retrieval where the relevant texts share the label prefix up
    to level ``l`` and the direction (also split by the query's direction, ``map_l<l>_supports`` /
    ``_opposes``); ``map_mean`` over levels; ``spearman_tree``: Spearman correlation of cosine with the tree
    similarity (depth of the shared prefix of (L1, ..., direction)); and :func:`label_tree_agreement`.

    Args:
        z: ``(N, D)`` L2-normalised embeddings.
        levels: ``(N, L)`` label ids per level.
        directions: ``(N,)`` direction ids (0 supports, 1 opposes).

    Example:
        >>> z = torch.nn.functional.normalize(torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]]), dim=1)
        >>> out = hierarchical_retrieval(z, torch.tensor([[0, 0, 0], [0, 0, 0], [1, 1, 1], [1, 1, 1]]),
        ...                              torch.zeros(4, dtype=torch.long))
        >>> out["map_l1"], out["map_l3"]
        (1.0, 1.0)
    """
    sim = (z @ z.T).detach().cpu().numpy()
    lv, dv = levels.cpu().numpy(), directions.cpu().numpy()
    n, depth_levels = len(sim), lv.shape[1]
    out: dict[str, float] = {}
    same_dir = dv[:, None] == dv[None, :]
    depth = np.zeros((n, n))
    for level in range(depth_levels):
        depth += np.all(lv[:, None, : level + 1] == lv[None, :, : level + 1], axis=-1)
    for level in range(depth_levels):
        relevant = (depth >= level + 1) & same_dir
        aps = np.full(n, np.nan)
        for i in range(n):
            order = np.argsort(-np.delete(sim[i], i), kind="stable")
            rel = np.delete(relevant[i], i)[order]
            if rel.any():
                aps[i] = (np.cumsum(rel)[rel] / (np.flatnonzero(rel) + 1)).mean()
        out[f"map_l{level + 1}"] = float(np.nanmean(aps))
        for d, name in ((0, "supports"), (1, "opposes")):
            out[f"map_l{level + 1}_{name}"] = float(np.nanmean(aps[dv == d])) if (dv == d).any() else float("nan")
    out["map_mean"] = float(np.mean([out[f"map_l{i + 1}"] for i in range(depth_levels)]))
    tree = depth + (same_dir & (depth == depth_levels))  # direction is the label's last level
    upper = np.triu_indices(n, 1)
    out["spearman_tree"] = float(spearmanr(sim[upper], tree[upper]).statistic)
    out.update(label_tree_agreement(sim, lv, dv))
    return out
