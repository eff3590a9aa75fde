"""Long-horizon consistency of imagined token rollouts against the true environment (functional).

Objects are the cells whose token is in ``object_tokens``. At every horizon ``h`` and for every object
token ``k`` the predicted count ``n_hat_k`` is compared with the true count ``n_k``::

    excess = sum_k max(n_hat_k - n_k, 0)        deficit = sum_k max(n_k - n_hat_k, 0)
    transmutations = min(excess, deficit)        # an object of one kind turned into another
    duplications   = excess - transmutations     # objects that appeared from nothing / were copied
    disappearances = deficit - transmutations    # objects that vanished

Rates divide by the number of true objects at that horizon. Counts are position-free, so they measure
object persistence even when the environment is stochastic and the rollout's positions legitimately differ
from the true ones (a duplication of one kind and a disappearance of another in the same frame count as one
transmutation: counts cannot tell them apart). Token accuracy is the fraction of cells equal to the truth.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = [
    "object_count_errors",
    "object_motion",
    "rollout_consistency",
    "token_accuracy_by_horizon",
]


def _consistency_arg_validation(num_tokens: int, object_tokens: Sequence[int]) -> None:
    if not isinstance(num_tokens, int) or num_tokens < 1:
        raise ValueError(f"num_tokens must be a positive integer, got {num_tokens!r}")
    tokens = list(object_tokens)
    if not tokens:
        raise ValueError("object_tokens must name at least one token id")
    bad = [t for t in tokens if not isinstance(t, int) or not 0 <= t < num_tokens]
    if bad:
        raise ValueError(f"object_tokens must be integers in [0, {num_tokens}), got {bad}")
    if len(set(tokens)) != len(tokens):
        raise ValueError(f"object_tokens must be distinct, got {tokens}")


def _consistency_tensor_validation(preds: torch.Tensor, target: torch.Tensor, num_tokens: int | None = None) -> None:
    for name, value in (("preds", preds), ("target", target)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
        if value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
            raise TypeError(f"{name} must hold integer tokens, got dtype {value.dtype}")
        if value.dim() < 3:
            raise ValueError(f"{name} must have shape (B, T, *cells), got {tuple(value.shape)}")
        if num_tokens is not None and value.numel() and (int(value.min()) < 0 or int(value.max()) >= num_tokens):
            raise ValueError(f"{name} tokens must lie in [0, {num_tokens}), got [{value.min()}, {value.max()}]")
    if preds.shape != target.shape:
        raise ValueError(
            f"preds and target must have the same shape, got {tuple(preds.shape)} and {tuple(target.shape)}"
        )


def _counts(x: torch.Tensor, num_tokens: int, object_tokens: Sequence[int]) -> torch.Tensor:
    flat = x.reshape(x.shape[0], x.shape[1], -1).long()
    counts = torch.zeros(flat.shape[0], flat.shape[1], num_tokens, dtype=torch.long, device=x.device)
    counts.scatter_add_(2, flat, torch.ones_like(flat))
    return counts[..., torch.as_tensor(list(object_tokens), device=x.device)]


def object_count_errors(
    preds: torch.Tensor, target: torch.Tensor, num_tokens: int, object_tokens: Sequence[int]
) -> dict[str, torch.Tensor]:
    """Per-frame duplication, disappearance and transmutation counts.

    Args:
        preds: ``(B, T, *cells)`` predicted tokens (e.g. ``(B, T, H, W)``).
        target: same shape, true tokens.
        num_tokens: vocabulary size.
        object_tokens: token ids that are objects.

    Returns:
        ``{"duplications", "disappearances", "transmutations", "objects"}``, each ``(B, T)`` int64
        (``objects`` = true object count).

    Example:
        >>> target = torch.tensor([[[0, 2, 0, 3]]])
        >>> preds = torch.tensor([[[2, 2, 0, 0]]])  # object 2 duplicated, object 3 gone -> one transmutation
        >>> {k: v.tolist() for k, v in object_count_errors(preds, target, 4, [2, 3]).items()}
        {'duplications': [[0]], 'disappearances': [[0]], 'transmutations': [[1]], 'objects': [[2]]}
    """
    _consistency_arg_validation(num_tokens, object_tokens)
    _consistency_tensor_validation(preds, target, num_tokens)
    predicted = _counts(preds, num_tokens, object_tokens)
    true = _counts(target, num_tokens, object_tokens)
    excess = (predicted - true).clamp(min=0).sum(-1)
    deficit = (true - predicted).clamp(min=0).sum(-1)
    transmutations = torch.minimum(excess, deficit)
    return {
        "duplications": excess - transmutations,
        "disappearances": deficit - transmutations,
        "transmutations": transmutations,
        "objects": true.sum(-1),
    }


def token_accuracy_by_horizon(preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Fraction of cells equal to the truth at every horizon: ``(T,)``.

    Example:
        >>> token_accuracy_by_horizon(torch.tensor([[[1, 1], [1, 0]]]), torch.tensor([[[1, 1], [0, 0]]]))
        tensor([1.0000, 0.5000])
    """
    _consistency_tensor_validation(preds, target)
    equal = (preds == target).reshape(preds.shape[0], preds.shape[1], -1)
    return equal.float().mean(dim=(0, 2))


def object_motion(frames: torch.Tensor, object_tokens: Sequence[int]) -> torch.Tensor:
    """Share of object cells that change at every step: ``(T,)`` float64 for ``(B, 1 + T, *cells)`` frames.

    At step ``h`` (from frame ``h - 1`` to frame ``h``), the cells that hold an object token at ``h - 1`` and a
    different token at ``h``, divided by the cells holding an object at ``h - 1`` (summed over the batch; 0 when
    there is none). A frozen world scores 0; comparing a decoder's figure with the true frames' shows whether it
    freezes or jitters motion.

    Args:
        frames: ``(B, 1 + T, *cells)`` tokens: the last real frame, then ``T`` frames.
        object_tokens: token ids that are objects.

    Example:
        >>> frames = torch.tensor([[[2, 0, 0], [0, 2, 0], [0, 2, 0]]])  # the object moves, then stays
        >>> object_motion(frames, [2]).tolist()
        [1.0, 0.0]
    """
    if not isinstance(frames, torch.Tensor) or frames.dim() < 3:
        shape = tuple(frames.shape) if isinstance(frames, torch.Tensor) else type(frames).__name__
        raise ValueError(f"frames must be a (B, 1 + T, *cells) tensor of tokens, got {shape}")
    if frames.shape[1] < 2:
        raise ValueError(f"frames must hold at least 2 frames along dim 1, got {frames.shape[1]}")
    objects = torch.isin(frames, torch.as_tensor(list(object_tokens), device=frames.device))
    cells = [0, *range(2, frames.dim())]
    moved = (objects[:, :-1] & (frames[:, 1:] != frames[:, :-1])).sum(dim=cells).double()
    return moved / objects[:, :-1].sum(dim=cells).double().clamp(min=1)


def _rates(sums: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    objects = sums["objects"].double()
    out = {
        "duplication_rate": sums["duplications"].double() / objects,
        "disappearance_rate": sums["disappearances"].double() / objects,
        "transmutation_rate": sums["transmutations"].double() / objects,
    }
    out["persistence_error_rate"] = out["duplication_rate"] + out["disappearance_rate"] + out["transmutation_rate"]
    out["token_accuracy"] = sums["correct"].double() / sums["cells"].double()
    return {key: value.float() for key, value in out.items()}


def rollout_consistency(
    preds: torch.Tensor, target: torch.Tensor, num_tokens: int, object_tokens: Sequence[int]
) -> dict[str, torch.Tensor]:
    """Duplication, disappearance, transmutation and persistence-error rates and token accuracy by horizon.

    Args:
        preds: ``(B, T, *cells)`` imagined frames, ``preds[:, h]`` is ``h + 1`` steps ahead.
        target: same shape, the true frames.
        num_tokens: vocabulary size.
        object_tokens: token ids that are objects.

    Returns:
        Dict of ``(T,)`` float tensors: ``duplication_rate``, ``disappearance_rate``, ``transmutation_rate``,
        ``persistence_error_rate`` (their sum), ``token_accuracy``. Rates are ``nan`` at a horizon without
        true objects.

    Example:
        >>> target = torch.tensor([[[0, 2, 0, 3], [2, 0, 0, 3]]])
        >>> preds = torch.tensor([[[0, 2, 2, 3], [0, 0, 0, 3]]])
        >>> out = rollout_consistency(preds, target, 4, [2, 3])
        >>> out["duplication_rate"].tolist(), out["disappearance_rate"].tolist()
        ([0.5, 0.0], [0.0, 0.5])
    """
    errors = object_count_errors(preds, target, num_tokens, object_tokens)
    sums = {key: value.sum(0) for key, value in errors.items()}
    equal = (preds == target).reshape(preds.shape[0], preds.shape[1], -1)
    sums["correct"] = equal.sum(dim=(0, 2))
    sums["cells"] = torch.full_like(sums["correct"], equal.shape[0] * equal.shape[2])
    return _rates(sums)
