"""Sparsity callbacks for any LightningModule: log sparsity / compression, prune by magnitude, sweep thresholds.

``SparsityMonitor`` logs per-layer and global sparsity and the compression ratio (CR = total / non-zero)
at the end of every training epoch. ``MagnitudePrune`` evaluates a threshold sweep at fit end (the paper's
``eval_checkpoint.py --thr a,b,c``) and prunes either by a magnitude threshold or a global percentile,
at fit end or at the start of a chosen epoch followed by fixed-mask fine-tuning.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities import rank_zero_only
from torch import nn
from typing_extensions import override

from lightning_icml26.metrics.functional.sparsity import compression_ratio, select_weights, sparsity

__all__ = [
    "MagnitudePrune",
    "SparsityMonitor",
    "classification_accuracy",
    "global_magnitude_threshold",
    "magnitude_masks",
    "threshold_sweep",
]

Evaluator = Callable[[nn.Module], float]


def global_magnitude_threshold(weights: Iterable[torch.Tensor], amount: float) -> float:
    """The magnitude ``t`` such that pruning ``|w| <= t`` removes a fraction ``amount`` of all weights.

    Args:
        weights: the tensors pruned together (global, not per layer).
        amount: fraction to prune, in ``[0, 1]``.

    Returns:
        The threshold (``-1.0`` for ``amount = 0``, which prunes nothing).

    Example:
        >>> global_magnitude_threshold([torch.tensor([0.1, -0.4]), torch.tensor([0.3, 0.2])], 0.5)
        0.2...
    """
    if isinstance(amount, bool) or not isinstance(amount, int | float) or not 0 <= amount <= 1:
        raise ValueError(f"amount must be a fraction in [0, 1], got {amount!r}")
    flat = torch.cat([w.detach().abs().flatten().float().cpu() for w in weights])
    k = int(round(amount * flat.numel()))
    if k == 0:
        return -1.0
    return float(torch.kthvalue(flat, k).values)


def magnitude_masks(weights: dict[str, torch.Tensor], threshold: float) -> dict[str, torch.Tensor]:
    """Boolean keep-masks ``|w| > threshold`` for each named tensor.

    Example:
        >>> magnitude_masks({"w": torch.tensor([0.1, -0.5])}, 0.2)["w"]
        tensor([False,  True])
    """
    return {name: w.detach().abs() > threshold for name, w in weights.items()}


def threshold_sweep(
    module: nn.Module,
    thresholds: Sequence[float],
    evaluate: Evaluator | None = None,
    include: Sequence[str] | str = ("conv",),
) -> list[dict[str, float]]:
    """Prune ``module``'s selected weights at each threshold in turn, record CR and ``evaluate(module)``.

    The weights are restored after each threshold (the module is left as it was).

    Args:
        module: the model.
        thresholds: magnitudes; weights with ``|w| <= t`` are zeroed for the evaluation.
        evaluate: optional callable returning a score for the pruned module (e.g. accuracy).
        include: weight kinds pruned and counted (see :func:`~lightning_icml26.metrics.functional.select_weights`).

    Returns:
        One dict per threshold with ``threshold``, ``sparsity``, ``compression_ratio`` and ``score`` (if evaluated).

    Example:
        >>> net = nn.Linear(4, 1, bias=False)
        >>> with torch.no_grad():
        ...     _ = net.weight.copy_(torch.tensor([[0.01, 0.1, 1.0, 2.0]]))
        >>> [r["compression_ratio"] for r in threshold_sweep(net, [0.0, 0.05, 0.5], include="linear")]
        [1.0, 1.333..., 2.0]
    """
    weights = select_weights(module, include)
    saved = {name: w.detach().clone() for name, w in weights.items()}
    results = []
    try:
        for thr in thresholds:
            if not thr >= 0:
                raise ValueError(f"thresholds must be non-negative, got {thr!r}")
            with torch.no_grad():
                for name, w in weights.items():
                    w.copy_(torch.where(saved[name].abs() > thr, saved[name], torch.zeros_like(saved[name])))
            row = {
                "threshold": float(thr),
                "sparsity": float(sparsity(weights.values())),
                "compression_ratio": float(compression_ratio(weights.values())),
            }
            if evaluate is not None:
                row["score"] = float(evaluate(module))
            results.append(row)
    finally:
        with torch.no_grad():
            for name, w in weights.items():
                w.copy_(saved[name])
    return results


def _require_weights(callback: str, module: nn.Module, include: Sequence[str] | str) -> None:
    """Refuse a model in which ``include`` selects no weight (the figures would be ``nan``, the pruning a no-op)."""
    if select_weights(module, include):
        return
    present = [kind for kind in ("conv", "linear") if select_weights(module, kind)]
    raise ValueError(
        f"{callback}(include={include!r}) finds no weight to measure in {type(module).__name__}; "
        + (f"its layers are of kind {present}: pass include={present[0]!r}, " if present else "")
        + "or include='all' for every parameter"
    )


@torch.no_grad()
def classification_accuracy(module: nn.Module, loader: Iterable[Any], device: torch.device | None = None) -> float:
    """Top-1 accuracy of ``module`` (logits) over ``(x, y)`` batches, in eval mode (the mode is restored).

    Example:
        >>> net = nn.Linear(2, 2)
        >>> with torch.no_grad():
        ...     _ = net.weight.copy_(torch.eye(2)); _ = net.bias.zero_()
        >>> classification_accuracy(net, [(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), torch.tensor([0, 0]))])
        0.5
    """
    was_training = module.training
    module.eval()
    correct, total = 0, 0
    try:
        for x, y in loader:
            if device is not None:
                x, y = x.to(device), y.to(device)
            correct += int((module(x).argmax(-1) == y).sum())
            total += len(y)
    finally:
        module.train(was_training)
    if total == 0:
        raise ValueError("loader yielded no samples")
    return correct / total


class SparsityMonitor(Callback):
    """Log per-layer and global sparsity and the compression ratio at the end of each training epoch.

    Logged keys: ``{prefix}sparsity``, ``{prefix}compression_ratio`` and, with ``per_layer``,
    ``{prefix}sparsity/<parameter name>``. The global figures are also kept in ``history`` (checkpointed).
    A model in which ``include`` selects no weight is refused at setup, before training, with a
    ``ValueError`` that names the kinds the model has (an MLP needs ``include="linear"``).

    Args:
        include: weight kinds measured (``"conv"`` as in the paper, the default; ``"linear"``; ``"all"``).
        threshold: magnitude at or below which a weight counts as zero.
        per_layer: also log each tensor's sparsity.
        prefix: prefix of the logged keys.

    Example:
        >>> SparsityMonitor(include=["conv", "linear"]).state_dict()
        {'history': []}
    """

    def __init__(
        self,
        include: Sequence[str] | str = ("conv",),
        threshold: float = 0.0,
        per_layer: bool = True,
        prefix: str = "sparsity/",
    ) -> None:
        sparsity(torch.zeros(1), threshold)  # validates threshold
        select_weights(nn.Module(), include)  # validates include
        self.include = include
        self.threshold = float(threshold)
        self.per_layer = per_layer
        self.prefix = prefix
        self.history: list[dict[str, float]] = []

    @override
    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if stage == "fit":
            _require_weights("SparsityMonitor", pl_module, self.include)

    def measure(self, module: nn.Module) -> dict[str, float]:
        """The figures for ``module`` (global and, with ``per_layer``, per tensor)."""
        weights = select_weights(module, self.include)
        figures = {
            f"{self.prefix}sparsity": float(sparsity(weights.values(), self.threshold)),
            f"{self.prefix}compression_ratio": float(compression_ratio(weights.values(), self.threshold)),
        }
        if self.per_layer:
            for name, w in weights.items():
                figures[f"{self.prefix}sparsity/{name}"] = float(sparsity(w, self.threshold))
        return figures

    @override
    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        figures = self.measure(pl_module)
        for key, value in figures.items():
            pl_module.log(key, value, on_step=False, on_epoch=True, rank_zero_only=True)
        self.history.append(
            {
                "epoch": float(trainer.current_epoch),
                "sparsity": figures[f"{self.prefix}sparsity"],
                "compression_ratio": figures[f"{self.prefix}compression_ratio"],
            }
        )

    @override
    def state_dict(self) -> dict[str, Any]:
        return {"history": copy.deepcopy(self.history)}

    @override
    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.history = list(state_dict.get("history", []))


class MagnitudePrune(Callback):
    """Magnitude pruning at fit end or at an epoch, optional fixed-mask fine-tuning, and a threshold sweep.

    * ``sweep``: at fit end, for each threshold the selected weights are zeroed temporarily and ``evaluate``
      is run (``"accuracy"``: top-1 of ``pl_module(x)`` on the validation loader). Results are in
      ``sweep_results`` and, on global rank zero, in ``<default_root_dir>/<filename>``.
    * ``threshold`` or ``amount`` (a global percentile, e.g. ``0.9`` prunes 90 % of the selected weights):
      pruning applied at fit end (after the sweep) or, with ``prune_at_epoch``, at the start of that epoch;
      then the mask is kept fixed for the rest of training (gradients of pruned entries are zeroed after
      backward and the weights re-masked after each optimizer step, each with one multi-tensor multiply by
      masks kept in the weights' dtype; the masked tensors are looked up at each epoch start, not per step).

    A model in which ``include`` selects no weight is refused at setup, before training (``ValueError``).

    Args:
        threshold: prune ``|w| <= threshold``.
        amount: fraction of the selected weights to prune (global), in ``[0, 1)``.
        include: weight kinds pruned (``"conv"``, ``"linear"``, ``"all"``).
        prune_at_epoch: epoch at whose start to prune; ``None`` prunes at fit end.
        sweep: thresholds to evaluate at fit end.
        evaluate: ``"accuracy"``, a callable ``module -> float``, or ``None`` (only sparsity is recorded).
        sweep_test: with ``evaluate="accuracy"``, also record each threshold's accuracy on the datamodule's test
            loader as ``test_score`` (for choosing a threshold on validation and reporting its test figure).
        filename: JSON file of the sweep and pruning figures (relative to ``trainer.default_root_dir``).

    Example:
        >>> cb = MagnitudePrune(amount=0.5, sweep=[1e-3, 1e-2])
        >>> sorted(cb.state_dict())
        ['pruned', 'sweep_results', 'threshold_used']
    """

    def __init__(
        self,
        threshold: float | None = None,
        amount: float | None = None,
        include: Sequence[str] | str = ("conv",),
        prune_at_epoch: int | None = None,
        sweep: Sequence[float] = (),
        evaluate: str | Evaluator | None = "accuracy",
        sweep_test: bool = False,
        filename: str = "magnitude_prune.json",
    ) -> None:
        if sweep_test and evaluate != "accuracy":
            raise ValueError(f"sweep_test=True needs evaluate='accuracy', got evaluate={evaluate!r}")
        if threshold is not None and amount is not None:
            raise ValueError(f"give threshold or amount, not both (got threshold={threshold}, amount={amount})")
        if threshold is not None and not threshold >= 0:
            raise ValueError(f"threshold must be non-negative, got {threshold!r}")
        if amount is not None and not 0 <= amount < 1:
            raise ValueError(f"amount must lie in [0, 1), got {amount!r}")
        if prune_at_epoch is not None and (threshold is None and amount is None or prune_at_epoch < 0):
            raise ValueError(
                f"prune_at_epoch={prune_at_epoch} needs threshold or amount and must be a non-negative epoch"
            )
        if any(not t >= 0 for t in sweep):
            raise ValueError(f"sweep thresholds must be non-negative, got {list(sweep)!r}")
        if not (evaluate is None or evaluate == "accuracy" or callable(evaluate)):
            raise ValueError(f"evaluate must be 'accuracy', a callable or None, got {evaluate!r}")
        select_weights(nn.Module(), include)
        self.threshold = threshold
        self.amount = amount
        self.include = include
        self.prune_at_epoch = prune_at_epoch
        self.sweep = [float(t) for t in sweep]
        self.evaluate = evaluate
        self.sweep_test = bool(sweep_test)
        self.filename = filename
        self.pruned = False
        self.threshold_used: float | None = None
        self.sweep_results: list[dict[str, float]] = []
        self._masks: dict[str, torch.Tensor] = {}
        # per-step caches, rebuilt when the masks change, at each epoch start, for another module, or when a
        # weight changes dtype or device: the masked weights and the masks in their weights' dtype
        self._targets: list[torch.Tensor] = []
        self._targets_of: nn.Module | None = None
        self._cast_masks: list[torch.Tensor] = []

    @override
    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if stage == "fit":
            _require_weights("MagnitudePrune", pl_module, self.include)

    def _evaluator(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> Evaluator | None:
        if self.evaluate is None:
            return None
        if callable(self.evaluate):
            return self.evaluate
        datamodule = getattr(trainer, "datamodule", None)
        loader = datamodule.val_dataloader() if datamodule is not None else trainer.val_dataloaders
        if loader is None:
            return None
        return lambda module: classification_accuracy(module, loader, pl_module.device)

    def prune(self, module: nn.Module) -> float:
        """Zero the selected weights by ``threshold`` / ``amount`` and fix the mask; returns the threshold used."""
        weights = select_weights(module, self.include)
        thr = (
            self.threshold
            if self.threshold is not None
            else global_magnitude_threshold(weights.values(), self.amount or 0.0)
        )
        self._set_masks(magnitude_masks(weights, thr))
        self._apply_masks(module)
        self.pruned = True
        self.threshold_used = float(thr)
        return float(thr)

    def _set_masks(self, masks: dict[str, torch.Tensor]) -> None:
        """Fix new keep-masks and drop the per-step caches built from the old ones."""
        self._masks = masks
        self._forget_targets()

    def _forget_targets(self) -> None:
        self._targets, self._targets_of, self._cast_masks = [], None, []

    def _mask_pairs(self, module: nn.Module) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """The masked weights and their masks in the weights' dtype and device.

        Both are looked up once and cached (no module walk per step); the cache is rebuilt for another module,
        at each epoch start, when the masks change, and when a weight has changed dtype or device.
        """
        ws, cached = self._targets, self._cast_masks
        stale = (
            module is not self._targets_of
            or len(cached) != len(ws)
            or any(m.device != w.device or m.dtype != w.dtype for m, w in zip(cached, ws, strict=True))
        )
        if stale:
            weights = select_weights(module, self.include)
            ws = [weights[name] for name in self._masks]
            cached = [mask.to(device=w.device, dtype=w.dtype) for mask, w in zip(self._masks.values(), ws, strict=True)]
            self._targets, self._targets_of, self._cast_masks = ws, module, cached
        return ws, cached

    @torch.no_grad()
    def _apply_masks(self, module: nn.Module) -> None:
        ws, masks = self._mask_pairs(module)
        torch._foreach_mul_([w.detach() for w in ws], masks)

    @override
    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._forget_targets()  # the masked weights are looked up again once per epoch
        if self.prune_at_epoch is None:
            return
        if not self.pruned and trainer.current_epoch >= self.prune_at_epoch:
            self.prune(pl_module)
        elif self.pruned and not self._masks:
            # resumed from a checkpoint: the weights already carry the zeros, the fixed mask is read from them
            self._set_masks({name: w.detach() != 0 for name, w in select_weights(pl_module, self.include).items()})

    @override
    def on_after_backward(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if not self._masks:
            return
        ws, masks = self._mask_pairs(pl_module)
        grads, grad_masks = [], []
        for w, cast, mask in zip(ws, masks, self._masks.values(), strict=True):
            grad = w.grad
            if grad is None:
                continue
            if grad.dtype == cast.dtype:
                grads.append(grad)
                grad_masks.append(cast)
            else:  # a gradient in another dtype than its weight
                grad.mul_(mask.to(grad.device))
        if grads:
            torch._foreach_mul_(grads, grad_masks)

    @override
    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if self._masks:
            self._apply_masks(pl_module)

    @override
    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.sweep:
            self.sweep_results = threshold_sweep(
                pl_module, self.sweep, self._evaluator(trainer, pl_module), self.include
            )
            if self.sweep_test:
                datamodule = getattr(trainer, "datamodule", None)
                if datamodule is None:
                    raise ValueError("MagnitudePrune(sweep_test=True) needs a datamodule with a test_dataloader()")
                loader = datamodule.test_dataloader()
                test = threshold_sweep(
                    pl_module, self.sweep, lambda m: classification_accuracy(m, loader, pl_module.device), self.include
                )
                for row, test_row in zip(self.sweep_results, test, strict=True):
                    row["test_score"] = test_row["score"]
        if not self.pruned and (self.threshold is not None or self.amount is not None):
            self.prune(pl_module)
        self._write(trainer)

    @rank_zero_only
    def _write(self, trainer: pl.Trainer) -> None:
        if not self.sweep_results and not self.pruned:
            return
        path = Path(self.filename)
        if not path.is_absolute():
            path = Path(trainer.default_root_dir) / path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.state_dict(), indent=2))

    @override
    def state_dict(self) -> dict[str, Any]:
        return {
            "pruned": self.pruned,
            "threshold_used": self.threshold_used,
            "sweep_results": copy.deepcopy(self.sweep_results),
        }

    @override
    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.pruned = bool(state_dict.get("pruned", False))
        self.threshold_used = state_dict.get("threshold_used")
        self.sweep_results = list(state_dict.get("sweep_results", []))
