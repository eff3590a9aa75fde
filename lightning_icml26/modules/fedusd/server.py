"""``AggregationFreeServer``: the global model, trained on the clients' pooled synthetic data."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule
from torch import Tensor, nn
from torch.utils.data import DataLoader, TensorDataset
from torchmetrics.classification import MulticlassAccuracy

__all__ = ["AggregationFreeServer", "soft_cross_entropy"]


def soft_cross_entropy(logits: Tensor, targets: Tensor) -> Tensor:
    """Mean over samples of ``-sum_c targets_c log softmax(logits)_c``.

    Example:
        >>> logits = torch.tensor([[2.0, 0.0]])
        >>> bool(torch.isclose(soft_cross_entropy(logits, torch.tensor([[1.0, 0.0]])),
        ...                    F.cross_entropy(logits, torch.tensor([0]))))
        True
    """
    if logits.shape != targets.shape:
        raise ValueError(
            f"logits and targets must have the same shape, got {tuple(logits.shape)} and {tuple(targets.shape)}"
        )
    return -(targets * F.log_softmax(logits, dim=1)).sum(1).mean()


class AggregationFreeServer(LightningModule):
    """Trains the global model on a pool of synthetic images with soft targets; reports test accuracy.

    The pool is set from outside (:meth:`set_pool`, called by :class:`~lightning_icml26.callbacks.FedRoundCallback`
    at the start of every round). One training epoch is one round: ``steps_per_round`` SGD steps on
    minibatches drawn from the pool with a generator seeded by ``(seed, global_step)``, so that a resumed run
    draws the same minibatches. The training loader only yields step indices; an empty pool (FedAvg, whose
    round replaces the weights instead) makes every step a no-op. The global model keeps training across
    rounds. The curriculum weights of the reference implementation need teacher statistics on the full
    training set, which a federated server lacks; they are not used.

    Args:
        net: the global model (a module with ``embed``, e.g. :class:`ConvNet`).
        num_classes: classes.
        steps_per_round: server SGD steps per round.
        pool_batch_size: pool minibatch size.
        optimizer: factory ``params -> Optimizer`` (``None``: SGD, lr 0.01, momentum 0.9, weight decay 5e-4).
        seed: seed of the minibatch draws.

    Example:
        >>> from lightning_icml26.modules.fedusd import ConvNet
        >>> server = AggregationFreeServer(ConvNet(1, 10, 8), steps_per_round=2, pool_batch_size=4)
        >>> server.set_pool(torch.randn(6, 1, 8, 8), torch.eye(10)[torch.arange(6)])
        >>> float(server.training_step(0, 0)) > 0
        True
    """

    def __init__(
        self,
        net: nn.Module,
        num_classes: int = 10,
        steps_per_round: int = 100,
        pool_batch_size: int = 256,
        optimizer: Callable[..., torch.optim.Optimizer] | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if steps_per_round < 1:
            raise ValueError(f"steps_per_round must be a positive integer, got {steps_per_round}")
        if pool_batch_size < 1:
            raise ValueError(f"pool_batch_size must be a positive integer, got {pool_batch_size}")
        self.save_hyperparameters(ignore=["net", "optimizer"])
        self.net = net
        self.optimizer_factory = optimizer
        self.pool_images = torch.empty(0)
        self.pool_targets = torch.empty(0)
        self.val_acc = MulticlassAccuracy(num_classes, average="micro")
        self.test_acc = MulticlassAccuracy(num_classes, average="micro")

    def forward(self, x: Tensor) -> Tensor:
        """Logits of the global model."""
        return self.net(x)

    def set_pool(self, images: Tensor, targets: Tensor) -> None:
        """Replace the training pool: ``images (n, C, H, W)`` with soft ``targets (n, num_classes)``."""
        if images.shape[:1] != targets.shape[:1] or targets.ndim != 2:
            raise ValueError(
                f"images (n, ...) and targets (n, num_classes) disagree: {tuple(images.shape)} and "
                f"{tuple(targets.shape)}"
            )
        self.pool_images, self.pool_targets = images.detach(), targets.detach()

    @torch.no_grad()
    def class_soft_labels(self, images: Tensor, labels: Tensor, temperature: float = 2.0) -> tuple[Tensor, Tensor]:
        """Per-class mean softened predictions ``(num_classes, num_classes)`` and class counts on some data."""
        c = int(self.hparams["num_classes"])
        probs = F.softmax(self.net(images.to(self.device)) / temperature, dim=1).cpu()
        sums = torch.zeros(c, c).index_add_(0, labels, probs)
        counts = torch.bincount(labels, minlength=c).float()
        return sums / counts.clamp_min(1).unsqueeze(1), counts

    def train_dataloader(self) -> DataLoader:
        """``steps_per_round`` step indices (the batches themselves come from the pool)."""
        return DataLoader(TensorDataset(torch.arange(int(self.hparams["steps_per_round"]))), batch_size=None)

    def training_step(self, batch: Any, batch_idx: int) -> Tensor | None:
        """Soft-label cross-entropy on a pool minibatch (``None``, i.e. no step, when the pool is empty)."""
        n = len(self.pool_images)
        if n == 0:
            return None
        step = self._trainer.global_step if self._trainer is not None else batch_idx
        gen = torch.Generator().manual_seed(int(self.hparams["seed"]) * 1_000_003 + int(step))
        idx = torch.randperm(n, generator=gen)[: int(self.hparams["pool_batch_size"])]
        loss = soft_cross_entropy(
            self.net(self.pool_images[idx].to(self.device)), self.pool_targets[idx].to(self.device)
        )
        if self._trainer is not None:
            self.log("train/loss", loss, prog_bar=True)
        return loss

    def _evaluate(self, batch: Sequence[Tensor], metric: MulticlassAccuracy, name: str) -> None:
        x, y = batch
        metric.update(self.net(x), y)
        self.log(name, metric, on_epoch=True, prog_bar=True)

    def validation_step(self, batch: Sequence[Tensor], batch_idx: int) -> None:
        """Global-model accuracy on the (global) evaluation set."""
        self._evaluate(batch, self.val_acc, "val/acc")

    def test_step(self, batch: Sequence[Tensor], batch_idx: int) -> None:
        """Global-model accuracy on the test set."""
        self._evaluate(batch, self.test_acc, "test/acc")

    def configure_optimizers(self) -> torch.optim.Optimizer:
        """The optimizer of the global model."""
        if self.optimizer_factory is not None:
            return self.optimizer_factory(self.net.parameters())
        return torch.optim.SGD(self.net.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
