"""Functional graph-recovery metrics for causal discovery on edge-code matrices.

Edge codes (``(p, p)`` or batched ``(B, p, p)`` integer tensors): ``code[i, j] = 1, code[j, i] = 0`` is a
directed edge ``i -> j``; ``1`` both ways an adjacency of unknown orientation; ``2`` both ways a latent pair
``i <-> j``; ``0`` both ways no edge. Each metric compares ``preds`` with ``target`` over unordered pairs.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = [
    "latent_pair_f1",
    "orientation_accuracy",
    "skeleton_f1",
    "structural_hamming_distance",
    "structural_hamming_distance_counts",
]


def _check_codes(preds: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    for name, value in (("preds", preds), ("target", target)):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor of edge codes, got {type(value).__name__}")
        if value.ndim not in (2, 3) or value.shape[-1] != value.shape[-2]:
            raise ValueError(f"{name} must have shape (p, p) or (B, p, p), got {tuple(value.shape)}")
        if value.is_floating_point() and not bool((value == value.round()).all()):
            raise ValueError(f"{name} must hold integer edge codes 0, 1, 2")
        if bool(((value < 0) | (value > 2)).any()):
            raise ValueError(f"{name} must hold edge codes in {{0, 1, 2}}, got values {value.unique().tolist()}")
    if preds.shape != target.shape:
        raise ValueError(
            f"preds and target must have the same shape, got {tuple(preds.shape)} and {tuple(target.shape)}"
        )
    p, t = preds.long(), target.long()
    if p.ndim == 2:
        p, t = p.unsqueeze(0), t.unsqueeze(0)
    return p, t


def _upper(codes: Tensor) -> tuple[Tensor, Tensor]:
    """Per unordered pair ``i < j``: (code[i, j], code[j, i]), each of shape (B, n_pairs)."""
    p = codes.shape[-1]
    i, j = torch.triu_indices(p, p, offset=1, device=codes.device)
    return codes[:, i, j], codes[:, j, i]


def _f1(tp: Tensor, fp: Tensor, fn: Tensor) -> Tensor:
    denom = (2 * tp + fp + fn).double()
    return torch.where(denom > 0, 2 * tp.double() / denom.clamp_min(1), torch.full_like(denom, float("nan")))


def _skeleton_update(preds: Tensor, target: Tensor) -> Tensor:
    p, t = _check_codes(preds, target)
    pa, pb = _upper(p)
    ta, tb = _upper(t)
    pe, te = (pa > 0) | (pb > 0), (ta > 0) | (tb > 0)
    return torch.stack([(pe & te).sum(), (pe & ~te).sum(), (~pe & te).sum()])


def _latent_update(preds: Tensor, target: Tensor) -> Tensor:
    p, t = _check_codes(preds, target)
    pa, pb = _upper(p)
    ta, tb = _upper(t)
    pe, te = (pa == 2) & (pb == 2), (ta == 2) & (tb == 2)
    return torch.stack([(pe & te).sum(), (pe & ~te).sum(), (~pe & te).sum()])


def _orientation_update(preds: Tensor, target: Tensor) -> Tensor:
    p, t = _check_codes(preds, target)
    pa, pb = _upper(p)
    ta, tb = _upper(t)
    forward, backward = (ta == 1) & (tb == 0), (ta == 0) & (tb == 1)
    found = (pa > 0) | (pb > 0)
    correct = (forward & (pa == 1) & (pb == 0)) | (backward & (pa == 0) & (pb == 1))
    counted = (forward | backward) & found
    return torch.stack([(correct & counted).sum(), counted.sum()])


def structural_hamming_distance_counts(preds: Tensor, target: Tensor) -> Tensor:
    """``[total distance, number of graphs]`` (the state of :class:`StructuralHammingDistance`).

    Example:
        >>> structural_hamming_distance_counts(torch.tensor([[0, 1], [0, 0]]), torch.zeros(2, 2)).tolist()
        [1, 1]
    """
    p, t = _check_codes(preds, target)
    pa, pb = _upper(p)
    ta, tb = _upper(t)
    return torch.stack([((pa != ta) | (pb != tb)).sum(), torch.tensor(p.shape[0], device=p.device)])


def skeleton_f1(preds: Tensor, target: Tensor) -> Tensor:
    """F1 of the adjacencies (any edge code) over unordered pairs; NaN when both graphs are empty.

    Example:
        >>> preds = torch.tensor([[0, 1, 1], [0, 0, 0], [1, 0, 0]])
        >>> skeleton_f1(preds, torch.tensor([[0, 1, 0], [0, 0, 1], [0, 0, 0]]))
        tensor(0.5000, dtype=torch.float64)
    """
    tp, fp, fn = _skeleton_update(preds, target)
    return _f1(tp, fp, fn)


def orientation_accuracy(preds: Tensor, target: Tensor) -> Tensor:
    """Fraction of the target's directed edges found adjacent in ``preds`` that ``preds`` orients correctly.

    An unoriented (code 1 both ways) or latent-pair prediction counts as not correct. NaN when no target
    edge is found.

    Example:
        >>> preds = torch.tensor([[0, 1, 1], [0, 0, 0], [1, 0, 0]])
        >>> orientation_accuracy(preds, torch.tensor([[0, 1, 1], [0, 0, 0], [0, 0, 0]]))
        tensor(0.5000, dtype=torch.float64)
    """
    correct, total = _orientation_update(preds, target)
    return torch.where(
        total > 0, correct.double() / total.clamp_min(1), torch.tensor(float("nan"), dtype=torch.float64)
    )


def structural_hamming_distance(preds: Tensor, target: Tensor) -> Tensor:
    """Number of unordered pairs whose edge codes differ, averaged over the graphs of a batch.

    Example:
        >>> structural_hamming_distance(torch.tensor([[0, 2], [2, 0]]), torch.tensor([[0, 1], [0, 0]]))
        tensor(1., dtype=torch.float64)
    """
    distance, graphs = structural_hamming_distance_counts(preds, target)
    return distance.double() / graphs


def latent_pair_f1(preds: Tensor, target: Tensor) -> Tensor:
    """F1 of the latent pairs (code 2 both ways) over unordered pairs; NaN when neither graph has one.

    Example:
        >>> latent_pair_f1(torch.tensor([[0, 2], [2, 0]]), torch.tensor([[0, 2], [2, 0]]))
        tensor(1., dtype=torch.float64)
    """
    tp, fp, fn = _latent_update(preds, target)
    return _f1(tp, fp, fn)
