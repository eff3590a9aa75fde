"""Flow baseline for Boltzmann generators: a zuko neural spline flow with the same data pipeline as ArBG."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import lightning.pytorch as pl
import torch
from torch import Tensor, nn

from lightning_icml26._optional import require
from lightning_icml26.modules.arbg.module import augment

__all__ = ["FlowBG"]


class FlowBG(pl.LightningModule):
    """Normalising-flow Boltzmann generator baseline (``zuko.flows.NSF``, imported lazily; ``flows`` extra).

    Same pipeline as :class:`~lightning_icml26.modules.arbg.ArBG`: centring, random rotations and Gaussian
    centre-of-mass noise of std ``scale / sqrt(n_atoms)`` during training, division by ``scale``; trained by
    maximum likelihood. :meth:`sample_with_log_prob` returns Cartesian samples with exact log densities
    (``- d log scale`` included), so the same reweighting applies.

    Args:
        n_atoms: atoms per conformation.
        dim: spatial dimension.
        scale: coordinate scale (``None``: fitted on ``trainer.datamodule.train_positions()`` in ``setup``).
        transforms: number of spline coupling/autoregressive transforms.
        hidden_features: hidden widths of each transform's network.
        bins: spline bins.
        rotate: rotation augmentation.
        com_noise: centre-of-mass noise augmentation.
        optimizer: optimizer factory (default AdamW lr 5e-4, wd 0.01).
        lr_scheduler: optional scheduler factory, stepped per epoch (as in ArBG).

    The recipes ``arbg_dw4`` and ``arbg_lj13`` train it with ``model=flowbg`` (same data, callbacks and trainer).

    Example:
        >>> flow = FlowBG(n_atoms=2, dim=1, scale=1.0, transforms=1, hidden_features=(8,))
        >>> x, lq = flow.sample_with_log_prob(3)
        >>> bool(torch.allclose(flow.log_prob(x), lq, atol=1e-4))
        True
    """

    scale: Tensor

    def __init__(
        self,
        n_atoms: int,
        dim: int = 3,
        scale: float | None = None,
        transforms: int = 4,
        hidden_features: tuple[int, ...] | list[int] = (64, 64),
        bins: int = 8,
        rotate: bool = True,
        com_noise: bool = True,
        optimizer: Callable[[Iterable[nn.Parameter]], torch.optim.Optimizer] | None = None,
        lr_scheduler: Callable[[torch.optim.Optimizer], Any] | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters(ignore=["optimizer", "lr_scheduler"])
        zuko = require("zuko", extra="flows", purpose="the flow baseline")
        self.n_atoms, self.dim, self.length = n_atoms, dim, n_atoms * dim
        self.flow = zuko.flows.NSF(self.length, transforms=transforms, hidden_features=list(hidden_features), bins=bins)
        self.register_buffer("scale", torch.tensor(1.0 if scale is None else float(scale), dtype=torch.float64))
        self._scale_fitted = scale is not None
        self.rotate, self.com_noise, self.optimizer_factory = rotate, com_noise, optimizer
        self.scheduler_factory = lr_scheduler

    @property
    def com_std(self) -> float:
        """Centre-of-mass std used in training (physical units)."""
        return float(self.scale) / math.sqrt(self.n_atoms) if self.com_noise else 0.0

    def setup(self, stage: str) -> None:
        """Fit ``scale`` on the data module when not given."""
        if self._scale_fitted:
            return
        dm = getattr(self.trainer, "datamodule", None) if self._trainer is not None else None
        if dm is None or not hasattr(dm, "train_positions"):
            raise ValueError("scale=None needs a data module with train_positions(); pass scale=<float>")
        x = dm.train_positions().double()
        self.scale.fill_(float((x - x.mean(1, keepdim=True)).pow(2).mean().sqrt()))
        self._scale_fitted = True

    def log_prob(self, x: Tensor, temperature: float = 1.0, **unused: Any) -> Tensor:
        """Log density of ``x`` (``(N, n_atoms, dim)``, physical units)."""
        if temperature != 1.0:
            raise ValueError(f"FlowBG supports temperature=1.0 only, got {temperature}")
        u = (x.reshape(x.shape[0], -1).double() / self.scale).float().to(self.device)
        with torch.no_grad():
            lp = self.flow().log_prob(u).double().cpu()
        return lp - self.length * math.log(float(self.scale))

    @torch.no_grad()
    def sample_with_log_prob(self, num_samples: int, temperature: float = 1.0, **unused: Any) -> tuple[Tensor, Tensor]:
        """Draw ``num_samples`` conformations (float64) with their exact log densities."""
        if temperature != 1.0:
            raise ValueError(f"FlowBG supports temperature=1.0 only, got {temperature}")
        if num_samples < 1:
            raise ValueError(f"num_samples must be >= 1, got {num_samples}")
        u, lp = self.flow().rsample_and_log_prob((num_samples,))
        x = (u.double().cpu() * self.scale).reshape(num_samples, self.n_atoms, self.dim)
        return x, lp.double().cpu() - self.length * math.log(float(self.scale))

    def _nll(self, batch: Any, train: bool) -> Tensor:
        x = batch[0] if isinstance(batch, (tuple, list)) else batch
        x = augment(
            x.reshape(x.shape[0], self.n_atoms, self.dim).double(),
            self.rotate and train,
            self.com_std if train else 0.0,
        )
        u = (x.reshape(x.shape[0], -1) / self.scale).float().to(self.device)
        return -self.flow().log_prob(u).mean() / self.length

    def training_step(self, batch: Any, batch_idx: int) -> Tensor:
        """Per-coordinate negative log-likelihood."""
        loss = self._nll(batch, True)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> Tensor:
        """Validation NLL."""
        loss = self._nll(batch, False)
        self.log("val_nll", loss, prog_bar=True)
        return loss

    def test_step(self, batch: Any, batch_idx: int) -> Tensor:
        """Test NLL (per coordinate, scaled units, centred conformations)."""
        loss = self._nll(batch, False)
        self.log("test_nll", loss)
        return loss

    def configure_optimizers(self) -> Any:
        """AdamW (or the given factory) and an optional per-epoch scheduler."""
        if self.optimizer_factory is None:
            optimizer: torch.optim.Optimizer = torch.optim.AdamW(self.parameters(), lr=5e-4, weight_decay=0.01)
        else:
            optimizer = self.optimizer_factory(self.parameters())
        if self.scheduler_factory is None:
            return optimizer
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": self.scheduler_factory(optimizer)}}
