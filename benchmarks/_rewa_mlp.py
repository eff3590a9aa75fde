"""Helpers of ``benchmarks/rewa_sparsity.py``: many MLPs trained side by side, GMP, threshold sweep, selection.

Every model of one seed (all methods, all strengths) shares the initial weights and the mini-batch order;
the forward pass stacks their weights and runs one batched matmul per layer, while each model keeps its own
leaf tensors so that the project's own optimizers (:class:`~lightning_icml26.optim.ReWASGD`,
:class:`~lightning_icml26.optim.L1SGD`) update them unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F

__all__ = [
    "StackedMLP",
    "compression_at_drop",
    "gmp_sparsity",
    "global_magnitude_masks",
    "lr_at",
    "sweep_thresholds",
]


class StackedMLP:
    """``G`` independent MLPs ``784-300-100-10`` (ReLU) evaluated together.

    Args:
        num_models: ``G``.
        sizes: layer widths, input first.
        seed: seed of the shared initialisation (PyTorch's default ``nn.Linear`` init, the same for all models).

    Example:
        >>> net = StackedMLP(3, (4, 5, 2), seed=0)
        >>> net(torch.zeros(7, 4)).shape
        torch.Size([3, 7, 2])
    """

    def __init__(self, num_models: int, sizes: Sequence[int] = (784, 300, 100, 10), seed: int = 0) -> None:
        if num_models < 1:
            raise ValueError(f"num_models must be a positive integer, got {num_models}")
        gen = torch.Generator().manual_seed(seed)
        self.weights: list[list[torch.Tensor]] = []  # [layer][model], each (in, out)
        self.biases: list[list[torch.Tensor]] = []
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
            bound = 1.0 / math.sqrt(fan_in)
            w = (torch.rand(fan_in, fan_out, generator=gen) * 2 - 1) * bound
            b = (torch.rand(fan_out, generator=gen) * 2 - 1) * bound
            self.weights.append([w.clone().requires_grad_() for _ in range(num_models)])
            self.biases.append([b.clone().requires_grad_() for _ in range(num_models)])

    @property
    def num_models(self) -> int:
        """Number of models ``G``."""
        return len(self.weights[0])

    def model_weights(self, g: int) -> list[torch.Tensor]:
        """The weight matrices (no biases) of model ``g``: what sparsity is measured on."""
        return [layer[g] for layer in self.weights]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(G, B, classes)`` for a shared batch ``x`` of shape ``(B, features)``."""
        h = x.unsqueeze(0)
        last = len(self.weights) - 1
        for i, (ws, bs) in enumerate(zip(self.weights, self.biases, strict=True)):
            h = torch.baddbmm(torch.stack(bs).unsqueeze(1), h.expand(len(ws), -1, -1), torch.stack(ws))
            if i < last:
                h = F.relu(h)
        return h


def lr_at(step: int, total: int, warmup: int, base_lr: float) -> float:
    """Linear warm-up over ``warmup`` steps, then cosine decay to zero at ``total`` (the paper's CIFAR schedule).

    Example:
        >>> lr_at(0, 100, 10, 1.0), lr_at(10, 100, 10, 1.0), round(lr_at(55, 100, 10, 1.0), 3)
        (0.1, 1.0, 0.5)
    """
    if step < warmup:
        return base_lr * (step + 1) / warmup
    return 0.5 * base_lr * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))


def gmp_sparsity(step: int, final: float, start: int, end: int, initial: float = 0.0) -> float:
    """Zhu & Gupta's cubic schedule: ``s_f + (s_i - s_f) (1 - (t - t0) / (t1 - t0))^3`` clipped to ``[t0, t1]``.

    Example:
        >>> gmp_sparsity(0, 0.9, 10, 110), gmp_sparsity(60, 0.9, 10, 110), gmp_sparsity(200, 0.9, 10, 110)
        (0.0, 0.7875, 0.9)
    """
    if not 0.0 <= final < 1.0:
        raise ValueError(f"final must lie in [0, 1), got {final}")
    if end <= start:
        raise ValueError(f"end must exceed start, got start={start}, end={end}")
    frac = min(max((step - start) / (end - start), 0.0), 1.0)
    return final + (initial - final) * (1.0 - frac) ** 3


def global_magnitude_masks(weights: Sequence[torch.Tensor], sparsity: float) -> list[torch.Tensor]:
    """Boolean keep-masks that zero the ``round(sparsity * n)`` smallest-magnitude entries over all tensors.

    Ties at the cut are broken by position (exactly ``round(sparsity * n)`` entries are removed).

    Example:
        >>> [m.tolist() for m in global_magnitude_masks([torch.tensor([0.1, -3.0]), torch.tensor([2.0, 0.5])], 0.5)]
        [[False, True], [True, False]]
    """
    flat = torch.cat([w.detach().abs().flatten() for w in weights])
    n_prune = int(round(sparsity * flat.numel()))
    keep = torch.ones_like(flat, dtype=torch.bool)
    if n_prune > 0:
        keep[torch.argsort(flat, stable=True)[:n_prune]] = False
    parts = keep.split([w.numel() for w in weights])
    return [k.view_as(w) for k, w in zip(parts, weights, strict=True)]


@torch.no_grad()
def sweep_thresholds(
    net: StackedMLP, g: int, thresholds: Sequence[float], data: tuple[torch.Tensor, torch.Tensor]
) -> list[dict[str, float]]:
    """Accuracy and compression ratio of model ``g`` with weights ``|w| <= thr`` set to zero, per threshold.

    Compression ratio = weight-matrix entries / non-zero entries (biases excluded). The model is left unchanged.
    ``thresholds`` must be increasing: a threshold that removes no further weight reuses the previous accuracy.
    """
    x, y = data
    weights = net.model_weights(g)
    biases = [layer[g] for layer in net.biases]
    total = sum(w.numel() for w in weights)
    out: list[dict[str, float]] = []
    for thr in thresholds:
        pruned = [torch.where(w.abs() > thr, w, torch.zeros_like(w)) for w in weights]
        nnz = sum(int((w != 0).sum()) for w in pruned)
        if out and total / max(nnz, 1) == out[-1]["compression_ratio"]:  # thresholds rise: same nnz, same weights
            out.append({**out[-1], "threshold": float(thr)})
            continue
        h = x
        for i, (w, b) in enumerate(zip(pruned, biases, strict=True)):
            h = torch.addmm(b, h, w)
            if i < len(pruned) - 1:
                h = F.relu(h)
        acc = float((h.argmax(-1) == y).float().mean())
        out.append({"threshold": float(thr), "accuracy": acc, "compression_ratio": total / max(nnz, 1)})
    return out


def compression_at_drop(candidates: Sequence[dict[str, Any]], reference: float, drop: float) -> dict[str, Any] | None:
    """The candidate with the largest compression ratio whose validation accuracy is ``>= reference - drop``.

    Ties in compression go to the higher validation accuracy. ``None`` when no candidate qualifies.

    Args:
        candidates: dicts with ``"val_accuracy"`` and ``"compression_ratio"`` (any other keys are kept).
        reference: the dense model's validation accuracy (a fraction).
        drop: allowed drop (a fraction: ``0.035`` for 3.5 points).

    Example:
        >>> c = [{"val_accuracy": 0.90, "compression_ratio": 2.0}, {"val_accuracy": 0.86, "compression_ratio": 9.0}]
        >>> [compression_at_drop(c, 0.91, d)["compression_ratio"] for d in (0.02, 0.05)]
        [2.0, 9.0]
    """
    if drop < 0:
        raise ValueError(f"drop must be non-negative, got {drop}")
    ok = [c for c in candidates if c["val_accuracy"] >= reference - drop - 1e-12]
    if not ok:
        return None
    return max(ok, key=lambda c: (c["compression_ratio"], c["val_accuracy"]))
