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
        label_smoothing: label smoothing of the cross-entropy, in ``[0, 1)``.
        plain_biases: give ``optimizer`` only the parameters not named ``*bias``, and put the biases in a second
            parameter group with no weight decay, no L1 (``l1=0``) and no reparameterisation
            (``reparameterize=False``), each set where the optimizer has that setting: the biases then take plain
            (momentum) steps whatever the sparse optimizer does to the weights.

    Example:
        >>> from lightning_icml26.modules import MLP
        >>> module = ClassifierModule(MLP(2, 3, hidden=4), num_classes=3)
        >>> module(torch.zeros(5, 2)).shape
        torch.Size([5, 3])
        >>> from functools import partial
        >>> sgd = partial(torch.optim.SGD, lr=0.1, weight_decay=1e-4)
        >>> opt = ClassifierModule(MLP(2, 3, hidden=4), 3, optimizer=sgd, plain_biases=True).configure_optimizers()
        >>> [(len(g["params"]), g["weight_decay"]) for g in opt.param_groups]
        [(3, 0.0001), (3, 0.0)]
    """

    def __init__(
        self,
        net: nn.Module,
        num_classes: int,
        optimizer: OptimizerFactory | None = None,
        lr_scheduler: SchedulerFactory | None = None,
        label_smoothing: float = 0.0,
        plain_biases: bool = False,
    ) -> None:
        super().__init__()
        if num_classes < 2:
            raise ValueError(f"num_classes must be at least 2, got {num_classes}")
        if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, int | float):
            raise TypeError(f"label_smoothing must be a number in [0, 1), got {label_smoothing!r}")
        if not 0.0 <= label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must lie in [0, 1), got {label_smoothing!r}")
        self.label_smoothing = float(label_smoothing)
        self.plain_biases = bool(plain_biases)
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
        loss = F.cross_entropy(logits, y, label_smoothing=self.label_smoothing if split == "train" else 0.0)
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
        if not self.plain_biases:
            optimizer = self.optimizer_factory(self.parameters())
        else:
            named = list(self.named_parameters())
            optimizer = self.optimizer_factory([p for name, p in named if not name.endswith("bias")])
            group: dict[str, Any] = {"params": [p for name, p in named if name.endswith("bias")]}
            for key, value in (("weight_decay", 0.0), ("l1", 0.0), ("reparameterize", False)):
                if key in optimizer.defaults:
                    group[key] = value
            if group["params"]:
                optimizer.add_param_group(group)
        if self.scheduler_factory is None:
            return optimizer
        return {"optimizer": optimizer, "lr_scheduler": self.scheduler_factory(optimizer)}
