"""Fail a run loudly when its training loss stops being finite."""

from __future__ import annotations

import math
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback

__all__ = ["FailOnNonFiniteLoss", "NonFiniteLossError"]


class NonFiniteLossError(RuntimeError):
    """The training loss became NaN or infinite; the message names the epoch and the step."""


def _loss_value(outputs: Any) -> torch.Tensor | None:
    if isinstance(outputs, torch.Tensor):
        return outputs
    if isinstance(outputs, dict) and isinstance(outputs.get("loss"), torch.Tensor):
        return outputs["loss"]
    return None


class FailOnNonFiniteLoss(Callback):
    """Raise :class:`NonFiniteLossError` at the first training batch whose loss is not finite.

    Lightning's ``EarlyStopping(check_finite=True)`` only stops (the run then reports success) and
    ``Trainer(detect_anomaly=True)`` slows every step; this check reads the loss the ``training_step``
    returned (a tensor or a dict with ``"loss"``), so it works with any LightningModule. Under DDP the decision
    is reduced over the ranks (any rank's non-finite loss fails all of them together, so none hangs).
    Steps that return no loss (manual optimisation returning ``None``) are not checked.

    Example:
        >>> import torch
        >>> from lightning.pytorch import Trainer
        >>> from lightning.pytorch.demos.boring_classes import BoringModel
        >>> class Diverging(BoringModel):
        ...     def training_step(self, batch, batch_idx):
        ...         return {"loss": self.layer(batch).sum() * float("nan")}
        >>> trainer = Trainer(max_epochs=1, limit_train_batches=2, limit_val_batches=0, logger=False,
        ...                   callbacks=[FailOnNonFiniteLoss()], enable_checkpointing=False,
        ...                   enable_progress_bar=False, enable_model_summary=False)
        >>> trainer.fit(Diverging())
        Traceback (most recent call last):
        ...
        lightning_icml26.callbacks.finite_loss.NonFiniteLossError: training loss is nan at epoch 0, batch 0 (...)
    """

    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        """Check the batch's loss; raise on every rank when any rank's loss is NaN or infinite."""
        loss = _loss_value(outputs)
        local_bad = loss is not None and not bool(torch.isfinite(loss.detach()).all())
        if not trainer.strategy.reduce_boolean_decision(local_bad, all=False):
            return
        value = float(loss.detach().float().reshape(-1)[0]) if local_bad and loss is not None else math.nan
        where = f"epoch {trainer.current_epoch}, batch {batch_idx} (global step {trainer.global_step})"
        shown = "nan" if math.isnan(value) else str(value)
        raise NonFiniteLossError(f"training loss is {shown} at {where}" + ("" if local_bad else " on another rank"))
