"""A per-step learning-rate schedule as a callback: linear warm-up, then cosine decay to zero."""

from __future__ import annotations

import math

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback
from typing_extensions import override

__all__ = ["WarmupCosineSchedule", "warmup_cosine_factor"]


def warmup_cosine_factor(step: int, total: int, warmup: int) -> float:
    """The factor on the base learning rate at optimizer step ``step`` (0-based) of ``total``.

    ``(step + 1) / warmup`` during the ``warmup`` first steps, then ``0.5 (1 + cos(pi (step - warmup) /
    (total - warmup)))``: 1 at the end of warm-up, 0 at ``total`` (the ReWA paper's CIFAR schedule).

    Args:
        step: the optimizer step, ``>= 0``.
        total: the steps of the whole run, ``>= 1``.
        warmup: the warm-up steps, ``>= 0``.

    Example:
        >>> warmup_cosine_factor(0, 100, 10), warmup_cosine_factor(10, 100, 10)
        (0.1, 1.0)
        >>> round(warmup_cosine_factor(55, 100, 10), 3)
        0.5
    """
    for name, value, low in (("step", step, 0), ("total", total, 1), ("warmup", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1.0 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))


class WarmupCosineSchedule(Callback):
    """Set every parameter group's learning rate before each training batch: linear warm-up, then cosine to 0.

    The base rate of a group is its ``lr`` when training starts (kept as ``group["initial_lr"]``, which the
    optimizer's checkpoint carries, so a resumed run continues the same curve). The run's length is Lightning's
    ``trainer.estimated_stepping_batches``; the warm-up is ``round(warmup_epochs * batches per epoch)`` optimizer
    steps. Works with any optimizer and any LightningModule (the module should not return its own scheduler).

    Args:
        warmup_epochs: length of the linear warm-up in epochs (a fraction is allowed), ``>= 0``.

    Example:
        >>> import torch
        >>> from lightning.pytorch import Trainer
        >>> from lightning.pytorch.demos.boring_classes import BoringModel
        >>> class Model(BoringModel):
        ...     def configure_optimizers(self):
        ...         return torch.optim.SGD(self.parameters(), lr=1.0)
        >>> trainer = Trainer(max_epochs=2, limit_train_batches=4, limit_val_batches=0, logger=False,
        ...                   callbacks=[WarmupCosineSchedule(warmup_epochs=1)], enable_checkpointing=False,
        ...                   enable_progress_bar=False, enable_model_summary=False)
        >>> trainer.fit(Model())
        >>> round(trainer.optimizers[0].param_groups[0]["lr"], 4)  # step 7 of 8, warm-up 4: 0.5 (1 + cos(3 pi / 4))
        0.1464
    """

    def __init__(self, warmup_epochs: float = 1.0) -> None:
        if isinstance(warmup_epochs, bool) or not isinstance(warmup_epochs, int | float) or not warmup_epochs >= 0:
            raise ValueError(f"warmup_epochs must be a non-negative number, got {warmup_epochs!r}")
        self.warmup_epochs = float(warmup_epochs)

    @override
    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        for optimizer in trainer.optimizers:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])

    @override
    def on_train_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: object, batch_idx: int
    ) -> None:
        total = max(1, int(trainer.estimated_stepping_batches))
        per_epoch = float(trainer.num_training_batches) / max(1, trainer.accumulate_grad_batches)
        warmup = int(round(self.warmup_epochs * per_epoch))
        factor = warmup_cosine_factor(min(trainer.global_step, total), total, warmup)
        for optimizer in trainer.optimizers:
            for group in optimizer.param_groups:
                group["lr"] = factor * group.setdefault("initial_lr", group["lr"])
