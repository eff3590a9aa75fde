"""A linear least-squares LightningModule for sparse regression (the ReWA ``linear/`` experiment)."""

from __future__ import annotations

from typing import Any, Literal

import torch
from lightning.pytorch import LightningModule
from torch import nn

from lightning_icml26.metrics.functional import support_f1
from lightning_icml26.modules.classifier import OptimizerFactory, SchedulerFactory

__all__ = ["SparseRegressionModule", "support_f1"]


class SparseRegressionModule(LightningModule):
    """Fit ``y ~ X w`` (no bias) by ``0.5 * mean((X w - y)^2)``; the optimizer decides the sparsity of ``w``.

    Logs ``train_loss`` / ``val_loss`` / ``test_loss`` and, when ``w_star`` is known, ``{val,test}_w_error``
    (``||w - w*||_2``) and ``{val,test}_support_f1`` (F1 of ``w != 0`` against ``w* != 0``).

    Starting point. ReWA (``M >= 1``) scales a weight's loss gradient by ``|y|^M``, which vanishes at zero, so a
    weight never changes sign: from a random start, every true non-zero whose initial sign is wrong is lost.
    ``init="least_squares"`` starts from the minimum-norm least-squares fit of the training rows (computed when
    a fresh fit starts, not on resume), whose signs on the true support are right with high probability; this
    is the project's choice of "a point from which the method can reach the answer" (see docs/rewa.md).

    Args:
        num_features: dimension of ``w``.
        optimizer: factory taking the parameters (e.g. ``ReWASGD`` with ``_partial_: true``).
        lr_scheduler: optional factory taking the optimizer.
        init_scale: standard deviation of the Gaussian initialisation of ``w`` (``init="normal"``).
        init: ``"normal"`` (Gaussian, ``init_scale``) or ``"least_squares"`` (minimum-norm least-squares fit of
            the training loader's rows at the start of a fresh fit).
        w_star: the ground truth, for the error and support figures (default: the datamodule's ``w_star``).

    Example:
        >>> m = SparseRegressionModule(3)
        >>> m(torch.ones(2, 3)).shape
        torch.Size([2])
    """

    def __init__(
        self,
        num_features: int,
        optimizer: OptimizerFactory | None = None,
        lr_scheduler: SchedulerFactory | None = None,
        init_scale: float = 0.1,
        w_star: torch.Tensor | None = None,
        init: Literal["normal", "least_squares"] = "normal",
    ) -> None:
        super().__init__()
        if num_features < 1:
            raise ValueError(f"num_features must be a positive integer, got {num_features}")
        if init_scale < 0:
            raise ValueError(f"init_scale must be non-negative, got {init_scale}")
        if init not in ("normal", "least_squares"):
            raise ValueError(f"init must be 'normal' or 'least_squares', got {init!r}")
        self.save_hyperparameters(ignore=["optimizer", "lr_scheduler", "w_star"])
        self.net = nn.Linear(num_features, 1, bias=False)
        with torch.no_grad():
            self.net.weight.normal_(0.0, init_scale)
        self.optimizer_factory = optimizer
        self.scheduler_factory = lr_scheduler
        self.w_star = w_star

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Predictions ``X w``."""
        return self.net(x).squeeze(-1)

    def _loss(self, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x, y = batch
        return 0.5 * (self(x) - y).pow(2).mean()

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        """Least-squares loss of a batch."""
        loss = self._loss(batch)
        self.log("train_loss", loss, on_step=False, on_epoch=True, prog_bar=True, batch_size=len(batch[1]))
        return loss

    def on_train_start(self) -> None:
        """With ``init="least_squares"``, set ``w`` to the minimum-norm least-squares fit of the training rows.

        Skipped when the fit resumes (``global_step > 0``): the checkpoint's weights are kept. This runs in
        ``on_train_start``, not ``on_fit_start``: Lightning restores the loops (and so ``global_step``) after
        ``on_fit_start``, where a resumed fit still reads ``global_step == 0`` and the least-squares fit would
        overwrite the checkpoint's weights.
        """
        if self.hparams["init"] != "least_squares" or self.trainer.global_step > 0:
            return
        datamodule = getattr(self.trainer, "datamodule", None)
        if datamodule is None:
            raise ValueError("init='least_squares' needs a datamodule: trainer.fit(model, datamodule=...)")
        loader = datamodule.train_dataloader()
        xs, ys = zip(*((x, y) for x, y in loader), strict=True)
        x, y = torch.cat(xs).double(), torch.cat(ys).double()
        solution = torch.linalg.lstsq(x, y.unsqueeze(1), driver="gelsd").solution.squeeze(1)
        with torch.no_grad():
            self.net.weight.copy_(solution.to(self.net.weight).unsqueeze(0))

    def _log_recovery(self, stage: str) -> None:
        w_star = self._ground_truth()
        if w_star is not None:
            w = self.net.weight.detach().flatten()
            w_star = w_star.to(w.device)
            self.log(f"{stage}_w_error", torch.linalg.vector_norm(w - w_star), prog_bar=stage == "val")
            self.log(f"{stage}_support_f1", support_f1(w, w_star), prog_bar=stage == "val")

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        """Validation loss and, with ``w_star``, the recovery figures."""
        self.log("val_loss", self._loss(batch), prog_bar=True, batch_size=len(batch[1]))
        self._log_recovery("val")

    def _ground_truth(self) -> torch.Tensor | None:
        if self.w_star is not None:
            return self.w_star
        trainer = self._trainer
        datamodule = getattr(trainer, "datamodule", None) if trainer is not None else None
        w_star = getattr(datamodule, "w_star", None)
        return w_star if isinstance(w_star, torch.Tensor) and bool((w_star != 0).any()) else None

    def test_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        """Test loss and, with ``w_star``, the recovery figures."""
        self.log("test_loss", self._loss(batch), batch_size=len(batch[1]))
        self._log_recovery("test")

    def configure_optimizers(self) -> Any:
        """Build the optimizer (and scheduler) from the factories (SGD(lr=0.01) by default)."""
        factory = self.optimizer_factory or (lambda params: torch.optim.SGD(params, lr=0.01))
        optimizer = factory(self.parameters())
        if self.scheduler_factory is None:
            return optimizer
        return {"optimizer": optimizer, "lr_scheduler": self.scheduler_factory(optimizer)}
