"""A generic classification LightningModule around any ``nn.Module`` that returns logits."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule
from torch import nn
from torchmetrics.classification import MulticlassAccuracy

__all__ = ["ClassifierModule", "OptimizerFactory", "SchedulerFactory"]

OptimizerFactory = Callable[[Iterable[Any]], torch.optim.Optimizer]
SchedulerFactory = Callable[[torch.optim.Optimizer], Any]


def _default_optimizer(params: Iterable[Any]) -> torch.optim.Optimizer:
    return torch.optim.AdamW(params, lr=1e-3)


class ClassifierModule(LightningModule):
    """Cross-entropy training of ``net`` with accuracy logged on every split.

    The optimizer and scheduler are factories (``functools.partial`` or Hydra ``_partial_: true``), so
    recipes and LightningCLI can swap them, e.g. for the project's sparse-training optimizers.

    Args:
        net: a module mapping a batch of inputs to ``(batch, num_classes)`` logits.
        num_classes: number of classes, at least 2.
        optimizer: factory taking the parameters; defaults to ``AdamW(lr=1e-3)``.
        lr_scheduler: optional factory taking the optimizer.

    Example:
        >>> from lightning_icml26.modules import MLP
        >>> module = ClassifierModule(MLP(2, 3, hidden=4), num_classes=3)
        >>> module(torch.zeros(5, 2)).shape
        torch.Size([5, 3])
    """

    def __init__(
        self,
        net: nn.Module,
        num_classes: int,
        optimizer: OptimizerFactory | None = None,
        lr_scheduler: SchedulerFactory | None = None,
    ) -> None:
        super().__init__()
        if num_classes < 2:
            raise ValueError(f"num_classes must be at least 2, got {num_classes}")
        self.save_hyperparameters(ignore=["net", "optimizer", "lr_scheduler"])
        self.net = net
        self.optimizer_factory = optimizer or _default_optimizer
        self.scheduler_factory = lr_scheduler
        self.accuracy = nn.ModuleDict(
            {split: MulticlassAccuracy(num_classes=num_classes) for split in ("train_", "val_", "test_")}
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits of ``net`` for a batch ``x``."""
        return self.net(x)

    def _shared_step(self, batch: tuple[torch.Tensor, torch.Tensor], split: str) -> torch.Tensor:
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        accuracy: MulticlassAccuracy = self.accuracy[f"{split}_"]  # type: ignore[assignment]
        accuracy(logits, y)
        on_step = split == "train"
        self.log(f"{split}_loss", loss, on_step=on_step, on_epoch=True, prog_bar=True, batch_size=len(y))
        self.log(f"{split}_acc", accuracy, on_step=False, on_epoch=True, prog_bar=True)
        return loss

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        """Cross-entropy on a training batch."""
        return self._shared_step(batch, "train")

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        """Loss and accuracy on a validation batch."""
        self._shared_step(batch, "val")

    def test_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        """Loss and accuracy on a test batch."""
        self._shared_step(batch, "test")

    def configure_optimizers(self) -> Any:
        """Build the optimizer (and scheduler) from the factories."""
        optimizer = self.optimizer_factory(self.parameters())
        if self.scheduler_factory is None:
            return optimizer
        return {"optimizer": optimizer, "lr_scheduler": self.scheduler_factory(optimizer)}
