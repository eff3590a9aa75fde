"""Hierarchical supervised contrastive losses for value embeddings (VALUEFLOW's HiVES, stages 1 and 2).

Stage 1 (:class:`HierarchicalContrastiveLoss`) pulls together texts that share a label prefix of a value
hierarchy (level 1 = the coarsest label) *and* a direction (supports / opposes), with

* a direction penalty: the logit of a pair with different directions is lowered by ``direction_weight``;
* one supervised-contrastive term per level, averaged over the anchors that have a positive at that level;
* a running maximum over levels, coarse to fine: level ``l``'s loss is raised to the largest loss of the
  coarser levels, and that running maximum is *detached* (it bounds the value, it carries no gradient);
* a level weight ``2 ** (1 / l)`` (coarse levels weigh more), then the mean over levels that had positives.

Stage 2 (:class:`HierarchicalAlignLoss`) adds two InfoNCE terms on anchor ids: texts written for the same
individual value concept, and texts of different theories mapped to the same cross-theory concept.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = [
    "HierarchicalAlignLoss",
    "HierarchicalContrastiveLoss",
    "anchor_info_nce",
    "hierarchical_contrastive_loss",
]


def _check_rows(name: str, tensor: Tensor, rows: int, ndim: int) -> None:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.ndim != ndim or tensor.shape[0] != rows:
        raise ValueError(f"{name} must be {ndim}-D with {rows} rows, got shape {tuple(tensor.shape)}")
    if tensor.is_floating_point() or tensor.is_complex():
        raise TypeError(f"{name} must hold integer labels, got dtype {tensor.dtype}")


def _log_probs(z: Tensor, temperature: float, directions: Tensor | None, direction_weight: float) -> Tensor:
    """Row-wise log-softmax of the scaled cosine logits, self-pairs excluded (diagonal = -inf)."""
    logits = z @ z.T / temperature
    if directions is not None:
        logits = logits - direction_weight * (directions[:, None] != directions[None, :]).to(logits.dtype)
    eye = torch.eye(z.shape[0], dtype=torch.bool, device=z.device)
    return torch.log_softmax(logits.masked_fill(eye, float("-inf")), dim=1)


def _mean_positive_log_prob(log_prob: Tensor, positives: Tensor) -> Tensor | None:
    """Mean over anchors with a positive of the mean log-probability of their positives (None if none has)."""
    counts = positives.sum(dim=1)
    has = counts > 0
    if not bool(has.any()):
        return None
    summed = torch.where(positives, log_prob, torch.zeros_like(log_prob)).sum(dim=1)
    return (summed[has] / counts[has]).mean()


def hierarchical_contrastive_loss(
    embeddings: Tensor,
    levels: Tensor,
    directions: Tensor,
    temperature: float = 0.1,
    base_temperature: float = 0.1,
    direction_weight: float = 1.0,
) -> Tensor:
    """Stage-1 HiVES loss (``hmce``: max constraint and level weights) of one batch.

    Args:
        embeddings: ``[B, D]`` float features (normalised inside).
        levels: ``[B, L]`` integer labels; column ``l`` names the node at level ``l + 1``; two texts share
            the level-``l`` prefix when columns ``0..l-1`` agree.
        directions: ``[B]`` integer direction (e.g. 0 supports, 1 opposes).
        temperature: softmax temperature, positive.
        base_temperature: the loss is scaled by ``temperature / base_temperature``.
        direction_weight: logit penalty of a pair with different directions, ``>= 0``.

    Returns:
        A scalar; zero (with a graph) when no level has a positive pair.

    Raises:
        TypeError: if labels are not integer tensors.
        ValueError: on wrong shapes, ``B < 2`` or non-positive temperatures.

    Example:
        >>> z = torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
        >>> lv = torch.tensor([[0, 0], [0, 0], [1, 2], [1, 2]])
        >>> loss = hierarchical_contrastive_loss(z, lv, torch.zeros(4, dtype=torch.long))
        >>> bool(loss < 0.1)
        True
    """
    if not isinstance(embeddings, Tensor) or embeddings.ndim != 2 or not embeddings.is_floating_point():
        shape = tuple(embeddings.shape) if isinstance(embeddings, Tensor) else type(embeddings).__name__
        raise ValueError(f"embeddings must be a 2-D float tensor [B, D], got {shape}")
    rows = embeddings.shape[0]
    if rows < 2:
        raise ValueError(f"embeddings must hold at least 2 rows, got {rows}")
    _check_rows("levels", levels, rows, 2)
    _check_rows("directions", directions, rows, 1)
    if levels.shape[1] < 1:
        raise ValueError(f"levels must have at least one column, got shape {tuple(levels.shape)}")
    if temperature <= 0 or base_temperature <= 0:
        raise ValueError(f"temperature and base_temperature must be positive, got {temperature}, {base_temperature}")
    if direction_weight < 0:
        raise ValueError(f"direction_weight must be >= 0, got {direction_weight}")
    z = F.normalize(embeddings, dim=1)
    log_prob = _log_probs(z, temperature, directions, direction_weight)
    eye = torch.eye(rows, dtype=torch.bool, device=z.device)
    same_dir = directions[:, None] == directions[None, :]
    same_prefix = torch.ones_like(same_dir)
    running: Tensor | None = None
    total = embeddings.sum() * 0.0
    used = 0
    for level in range(1, levels.shape[1] + 1):
        column = levels[:, level - 1]
        same_prefix = same_prefix & (column[:, None] == column[None, :])
        value = _mean_positive_log_prob(log_prob, same_prefix & same_dir & ~eye)
        if value is None:
            continue
        level_loss = -(temperature / base_temperature) * value
        if running is not None:
            level_loss = torch.maximum(level_loss, running)
        running = level_loss.detach()
        total = total + level_loss * 2.0 ** (1.0 / level)
        used += 1
    return total / max(used, 1)


def anchor_info_nce(embeddings: Tensor, anchor_ids: Tensor, temperature: float = 0.07) -> Tensor:
    """Supervised InfoNCE over the rows with ``anchor_ids >= 0`` (rows with a negative id are ignored).

    Args:
        embeddings: ``[B, D]`` float features (normalised inside).
        anchor_ids: ``[B]`` integer concept ids; rows with the same id are positives.
        temperature: positive softmax temperature.

    Returns:
        A scalar; zero (with a graph) when fewer than two rows are kept or no row has a positive.

    Example:
        >>> z = torch.tensor([[1.0, 0.0], [1.0, 0.1], [0.0, 1.0], [0.1, 1.0]])
        >>> bool(anchor_info_nce(z, torch.tensor([0, 0, 1, 1])) < 0.01)
        True
    """
    if not isinstance(embeddings, Tensor) or embeddings.ndim != 2 or not embeddings.is_floating_point():
        raise ValueError("embeddings must be a 2-D float tensor [B, D]")
    _check_rows("anchor_ids", anchor_ids, embeddings.shape[0], 1)
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    keep = anchor_ids >= 0
    zero = embeddings.sum() * 0.0
    if int(keep.sum()) < 2:
        return zero
    z = F.normalize(embeddings[keep], dim=1)
    ids = anchor_ids[keep]
    log_prob = _log_probs(z, temperature, None, 0.0)
    eye = torch.eye(z.shape[0], dtype=torch.bool, device=z.device)
    value = _mean_positive_log_prob(log_prob, (ids[:, None] == ids[None, :]) & ~eye)
    return zero if value is None else -value


class HierarchicalContrastiveLoss(nn.Module):
    """Stage-1 HiVES loss as a module (see :func:`hierarchical_contrastive_loss`).

    Args:
        temperature: softmax temperature (paper: 0.1).
        base_temperature: scale reference (paper: 0.1).
        direction_weight: logit penalty of opposite-direction pairs (paper: 1.0).

    Example:
        >>> loss = HierarchicalContrastiveLoss()
        >>> z = torch.randn(6, 3, requires_grad=True)
        >>> levels = torch.tensor([[0, 0], [0, 0], [0, 1], [0, 1], [1, 2], [1, 2]])
        >>> out = loss(z, levels, torch.zeros(6, dtype=torch.long))
        >>> out.backward(); z.grad.shape
        torch.Size([6, 3])
    """

    def __init__(self, temperature: float = 0.1, base_temperature: float = 0.1, direction_weight: float = 1.0) -> None:
        super().__init__()
        if temperature <= 0 or base_temperature <= 0:
            raise ValueError(
                f"temperature and base_temperature must be positive, got {temperature}, {base_temperature}"
            )
        if direction_weight < 0:
            raise ValueError(f"direction_weight must be >= 0, got {direction_weight}")
        self.temperature = temperature
        self.base_temperature = base_temperature
        self.direction_weight = direction_weight

    def forward(self, embeddings: Tensor, levels: Tensor, directions: Tensor) -> Tensor:
        """The loss of one batch (``levels`` ``[B, L]``, ``directions`` ``[B]``)."""
        return hierarchical_contrastive_loss(
            embeddings, levels, directions, self.temperature, self.base_temperature, self.direction_weight
        )


class HierarchicalAlignLoss(nn.Module):
    """Stage-2 HiVES loss: hierarchical loss + individual-anchor and cross-theory InfoNCE.

    ``L = L_hier + lambda_individual * InfoNCE(individual ids) + lambda_theory * InfoNCE(theory ids)``, each term
    on the rows that carry its labels: rows whose ``levels[:, 0] < 0`` are left out of ``L_hier``, rows with a
    negative individual (theory) id are left out of that InfoNCE. A stage-2 batch is thus the concatenation of
    three sub-batches (the paper: half hierarchical, a quarter each for the two anchor terms).

    Args:
        lambda_individual: weight of the individual-anchor term (paper: 0.5).
        lambda_theory: weight of the cross-theory term (paper: 1.0).
        hier_temperature: temperature of the hierarchical term (paper: 0.1).
        anchor_temperature: temperature of both InfoNCE terms (paper: 0.07).
        direction_weight: direction penalty of the hierarchical term.

    Example:
        >>> loss = HierarchicalAlignLoss()
        >>> z = torch.randn(8, 4)
        >>> lv = torch.tensor([[0, 0], [0, 0], [1, 1], [1, 1]] + [[-1, -1]] * 4)
        >>> d = torch.zeros(8, dtype=torch.long)
        >>> ind = torch.tensor([-1, -1, -1, -1, 3, 3, -1, -1])
        >>> th = torch.tensor([-1] * 6 + [5, 5])
        >>> loss(z, lv, d, ind, th).ndim
        0
    """

    def __init__(
        self,
        lambda_individual: float = 0.5,
        lambda_theory: float = 1.0,
        hier_temperature: float = 0.1,
        anchor_temperature: float = 0.07,
        direction_weight: float = 1.0,
    ) -> None:
        super().__init__()
        if lambda_individual < 0 or lambda_theory < 0:
            raise ValueError(
                f"lambda_individual and lambda_theory must be >= 0, got {lambda_individual}, {lambda_theory}"
            )
        if anchor_temperature <= 0:
            raise ValueError(f"anchor_temperature must be positive, got {anchor_temperature}")
        self.hierarchical = HierarchicalContrastiveLoss(hier_temperature, hier_temperature, direction_weight)
        self.lambda_individual = lambda_individual
        self.lambda_theory = lambda_theory
        self.anchor_temperature = anchor_temperature

    def forward(
        self, embeddings: Tensor, levels: Tensor, directions: Tensor, individual_ids: Tensor, theory_ids: Tensor
    ) -> Tensor:
        """The stage-2 loss of one batch (negative labels mark rows outside a term)."""
        _check_rows("levels", levels, embeddings.shape[0], 2)
        hier_rows = levels[:, 0] >= 0
        if int(hier_rows.sum()) >= 2:
            hier = self.hierarchical(embeddings[hier_rows], levels[hier_rows], directions[hier_rows])
        else:
            hier = embeddings.sum() * 0.0
        ind = anchor_info_nce(embeddings, individual_ids, self.anchor_temperature)
        theory = anchor_info_nce(embeddings, theory_ids, self.anchor_temperature)
        return hier + self.lambda_individual * ind + self.lambda_theory * theory
