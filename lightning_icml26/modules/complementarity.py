"""HumanAICombiner: learn how much weight to give an AI's forecast, under a robust no-harm constraint.

Method note 13 (robust human-AI complementarity; the formalisation is the note's reconstruction). The team
forecast is the linear pool ``T = (1 - w) p_human + w p_ai``. Before training, the module estimates from
the training split the human's error scale ``sigma_H`` (RMSE, the decision maker's own reliability) and the
error correlation ``rho``; the AI's error scale is only known to lie in ``sigma_ai_range``. Every weight in
``[0, cap]``, ``cap = min(w_bar(lo), w_bar(hi))`` (clipped to ``[0, 1]``), has a non-negative worst-case
gain over the human alone for the squared / Brier loss; the learned weight is parametrised as
``w = cap * sigmoid(theta)`` (or ``w(x) = cap * sigmoid(f(x))``) so it can never leave that set. Training
minimises the empirical team loss on the training split, starting from the robust weight ``w*``. At the end
of fit the worst-case gain of the learned weight is recomputed and checked (``RuntimeError`` if negative).

Deviations and choices (reconstruction; see also :mod:`lightning_icml26.metrics.functional.complementarity`):

* ``rho`` is not assumed known: unless ``rho_range`` is given, the uncentred error correlation is estimated
  on the training split and the worst case uses the upper end of its Fisher-z interval at
  ``rho_confidence`` (the ``z`` interval is the Pearson one, applied to the uncentred estimate: an
  approximation).
* ``sigma_ai_range`` can be given relative to the estimated ``sigma_H`` (``relative_to_human=True``), which
  is how recipes on real data state "the AI is between half and twice as accurate as the human".
* For a feature-dependent weight ``w(x)`` the guarantee holds item by item (every ``w(x) <= cap``); it is a
  guarantee on the expected gain when the error moments do not depend on ``x``. The reported
  ``guaranteed_gain`` is then the mean over training items of the per-item worst case.
* The guarantee is for the squared / Brier loss; ``loss="log"`` trains on log loss with the same cap.
* ``robust=False`` drops the cap (``cap = 1``): the plain learned weight, used as a baseline.
* Forecasts are one number per item (binary events, fractions, reals); multi-class pooling is available in
  the metrics only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import torch
from lightning.pytorch import LightningModule
from torch import Tensor, nn

from lightning_icml26.algorithms.complementarity import (
    check_interval,
    robust_pooling_weight,
    robust_weight_cap,
    worst_case_gain,
)
from lightning_icml26.metrics.complementarity import ComplementarityGain, RobustPoolingWeight
from lightning_icml26.metrics.functional.complementarity import item_loss

__all__ = ["HumanAICombiner"]

OptimizerFactory = Callable[[Iterable[Any]], torch.optim.Optimizer]


def _default_optimizer(params: Iterable[Any]) -> torch.optim.Optimizer:
    return torch.optim.Adam(params, lr=0.05)


def _unpack(batch: Sequence[Tensor]) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    if not isinstance(batch, list | tuple) or len(batch) not in (3, 4):
        raise ValueError("a batch must be (p_human, p_ai, target) or (p_human, p_ai, target, features)")
    features = batch[3] if len(batch) == 4 else None
    return batch[0], batch[1], batch[2], features


class HumanAICombiner(LightningModule):
    """Learns the AI's pooling weight (constant or feature-dependent) inside the robust safe set.

    Batches are ``(p_human, p_ai, target)`` or ``(p_human, p_ai, target, features)`` with ``(N,)`` forecasts
    (e.g. from :class:`~lightning_icml26.data.ForecastDataModule`).

    Args:
        sigma_ai_range: ``(lo, hi)`` for the AI's RMSE; multiples of the human's RMSE when
            ``relative_to_human`` is true.
        relative_to_human: read ``sigma_ai_range`` as multiples of the estimated ``sigma_H``.
        rho_range: ``(rho_lo, rho_hi)`` for the error correlation; ``None`` estimates it (see module notes).
        rho_confidence: confidence of the estimated interval for ``rho``, in ``(0, 1)``.
        feature_dim: ``0`` for one weight, else the feature width of ``w(x)`` (a one-hidden-layer MLP).
        hidden: hidden width of ``w(x)``.
        loss: ``"brier"``, ``"squared"`` (real outcomes) or ``"log"``.
        robust: cap the weight at the robust safe bound (``False``: cap 1).
        optimizer: factory taking the parameters; defaults to ``Adam(lr=0.05)``.

    Example:
        >>> from lightning.pytorch import Trainer
        >>> from lightning_icml26.data import ForecastDataModule
        >>> dm = ForecastDataModule("synthetic", {"num_questions": 400, "kind": "gaussian", "rho": -0.5,
        ...                                       "sigma_ai": 1.5, "seed": 0}, batch_size=100)
        >>> model = HumanAICombiner(sigma_ai_range=(0.5, 3.0), loss="squared")
        >>> trainer = Trainer(max_epochs=2, logger=False, enable_checkpointing=False,
        ...                   enable_progress_bar=False, enable_model_summary=False)
        >>> trainer.fit(model, datamodule=dm)
        >>> 0 < float(model.weight().detach()) <= float(model.weight_cap)
        True
        >>> model.guaranteed_gain_ >= 0
        True
    """

    sigma_human: Tensor
    rho_hat: Tensor
    rho_low: Tensor
    rho_high: Tensor
    sigma_ai_low: Tensor
    sigma_ai_high: Tensor
    weight_cap: Tensor
    robust_weight: Tensor
    robust_gain: Tensor
    calibrated: Tensor

    def __init__(
        self,
        sigma_ai_range: Sequence[float] = (0.5, 2.0),
        relative_to_human: bool = False,
        rho_range: Sequence[float] | None = None,
        rho_confidence: float = 0.95,
        feature_dim: int = 0,
        hidden: int = 16,
        loss: Literal["brier", "squared", "log"] = "brier",
        robust: bool = True,
        optimizer: OptimizerFactory | None = None,
    ) -> None:
        super().__init__()
        lo, hi = check_interval("sigma_ai_range", sigma_ai_range, 0.0, math.inf)
        if math.isinf(hi):
            raise ValueError(f"sigma_ai_range must be bounded, got {[lo, hi]!r}")
        self.sigma_ai_range = (lo, hi)
        self.rho_range = None if rho_range is None else check_interval("rho_range", rho_range, -1.0, 1.0)
        if not 0.0 < rho_confidence < 1.0:
            raise ValueError(f"rho_confidence must be in (0, 1), got {rho_confidence!r}")
        if not isinstance(feature_dim, int) or feature_dim < 0:
            raise ValueError(f"feature_dim must be an integer >= 0, got {feature_dim!r}")
        if not isinstance(hidden, int) or hidden < 1:
            raise ValueError(f"hidden must be an integer >= 1, got {hidden!r}")
        if loss not in ("brier", "squared", "log"):
            raise ValueError(f"loss must be 'brier', 'squared' or 'log', got {loss!r}")
        self.save_hyperparameters(ignore=["optimizer"])
        self.relative_to_human = relative_to_human
        self.rho_confidence = rho_confidence
        self.feature_dim = feature_dim
        self.loss_name = loss
        self.robust = robust
        self.optimizer_factory = optimizer or _default_optimizer
        self.guaranteed_gain_: float = float("nan")
        self.theta = nn.Parameter(torch.zeros(()))
        self.net: nn.Module | None = None
        if feature_dim > 0:
            head = nn.Linear(hidden, 1)
            nn.init.zeros_(head.weight)
            nn.init.zeros_(head.bias)
            self.net = nn.Sequential(nn.Linear(feature_dim, hidden), nn.Tanh(), head)
        for name in ("sigma_human", "rho_hat", "rho_low", "rho_high", "sigma_ai_low", "sigma_ai_high", "weight_cap",
                     "robust_weight", "robust_gain"):  # fmt: skip
            self.register_buffer(name, torch.tensor(float("nan"), dtype=torch.float64))
        self.register_buffer("calibrated", torch.tensor(False))
        probabilities = loss != "squared"
        self.gain = nn.ModuleDict(
            {s: ComplementarityGain(loss="squared" if not probabilities else loss) for s in ("val_", "test_")}
        )

    # -------------------------------------------------------------------------------------------------
    def weight(self, features: Tensor | None = None) -> Tensor:
        """The AI weight: a scalar, or ``(N,)`` per item when the module is feature-dependent."""
        cap = self.weight_cap.float() if bool(self.calibrated) else torch.tensor(1.0, device=self.theta.device)
        if self.net is None:
            return cap * torch.sigmoid(self.theta)
        if features is None or features.ndim != 2 or features.shape[1] != self.feature_dim:
            shape = None if features is None else tuple(features.shape)
            raise ValueError(f"features must have shape (N, {self.feature_dim}), got {shape}")
        return cap * torch.sigmoid(self.theta + self.net(features.float()).squeeze(-1))

    def forward(self, p_human: Tensor, p_ai: Tensor, features: Tensor | None = None) -> Tensor:
        """Team forecast ``(1 - w) p_human + w p_ai``."""
        w = self.weight(features)
        return (1 - w) * p_human + w * p_ai

    def _loss(self, team: Tensor, target: Tensor) -> Tensor:
        return item_loss(team.unsqueeze(1), target.unsqueeze(1).to(team.dtype), self.loss_name, eps=1e-6).mean()

    # -------------------------------------------------------------------------------------------------
    def calibrate(self, batches: Iterable[Sequence[Tensor]]) -> None:
        """Estimate ``sigma_H`` and ``rho`` from ``batches`` (DDP-synced) and set the safe cap and ``w*``."""
        metric = RobustPoolingWeight(sigma_ai_range=(0.0, 1.0), probabilities=self.loss_name != "squared").to(
            self.device
        )
        for batch in batches:
            p_h, p_a, y, _ = _unpack(batch)
            metric.update(p_h.to(self.device), p_a.to(self.device), y.to(self.device))
        stats = metric.compute()  # synced over ranks under DDP
        with metric.sync_context():  # the global item count (compute leaves the local states in place)
            n = float(metric.n)
        if n < 2 or not torch.isfinite(stats["sigma_human"]):
            raise ValueError(f"calibration needs at least 2 training items with finite errors, got n={n:.0f}")
        s_h = stats["sigma_human"].double().cpu()
        lo, hi = self.sigma_ai_range
        if self.relative_to_human:
            lo, hi = lo * float(s_h), hi * float(s_h)
        if self.rho_range is not None:
            r_lo, r_hi = self.rho_range
        else:
            rho = float(stats["rho"]) if torch.isfinite(stats["rho"]) else 0.0
            z = math.atanh(max(-0.999999, min(0.999999, rho)))
            half = math.sqrt(2.0) * float(torch.erfinv(torch.tensor(self.rho_confidence))) / math.sqrt(max(n - 3, 1))
            r_lo, r_hi = math.tanh(z - half), math.tanh(z + half)
        w_star, g_star = robust_pooling_weight(s_h, (lo, hi), rho_range=(r_lo, r_hi))
        cap = robust_weight_cap(s_h, (lo, hi), rho_range=(r_lo, r_hi)) if self.robust else torch.tensor(1.0)
        values: dict[str, Any] = {
            "sigma_human": s_h,
            "rho_hat": stats["rho"],
            "rho_low": r_lo,
            "rho_high": r_hi,
            "sigma_ai_low": lo,
            "sigma_ai_high": hi,
            "weight_cap": cap,
            "robust_weight": w_star,
            "robust_gain": g_star,
        }
        for name, value in values.items():
            getattr(self, name).fill_(float(value))
        self.calibrated.fill_(True)
        start = float(w_star) / float(cap) if float(cap) > 0 else 0.5
        if not self.robust:
            start = 0.5
        with torch.no_grad():
            self.theta.fill_(math.log(max(start, 1e-3) / max(1 - start, 1e-3)))

    def worst_case_gain(self, features: Tensor | None = None) -> float:
        """Worst-case gain over the uncertainty set of the current weight (mean over items for ``w(x)``)."""
        if not bool(self.calibrated):
            raise RuntimeError("the combiner is not calibrated yet (fit it, or call calibrate(batches))")
        with torch.no_grad():
            w = self.weight(features).double().cpu()
        gain = worst_case_gain(
            w,
            self.sigma_human.cpu(),
            (float(self.sigma_ai_low), float(self.sigma_ai_high)),
            rho_range=(float(self.rho_low), float(self.rho_high)),
        )
        return float(gain.mean())

    def _gain(self, split: str) -> ComplementarityGain:
        metric = self.gain[f"{split}_"]
        assert isinstance(metric, ComplementarityGain)
        return metric

    def _train_batches(self) -> Iterable[Sequence[Tensor]]:
        loader = self.trainer.train_dataloader
        if loader is None:
            raise RuntimeError("no training dataloader to calibrate on")
        return loader

    # -------------------------------------------------------------------------------------------------
    def on_train_start(self) -> None:
        """Calibrate on the training split unless already calibrated (e.g. resumed from a checkpoint)."""
        if not bool(self.calibrated):
            self.calibrate(self._train_batches())

    def training_step(self, batch: Sequence[Tensor], batch_idx: int) -> Tensor:
        """Team loss on a training batch."""
        p_h, p_a, y, x = _unpack(batch)
        loss = self._loss(self(p_h, p_a, x), y)
        self.log("train_loss", loss, on_step=True, on_epoch=True, batch_size=len(y))
        return loss

    def _eval_step(self, batch: Sequence[Tensor], split: str) -> None:
        p_h, p_a, y, x = _unpack(batch)
        team = self(p_h, p_a, x)
        self._gain(split).update(p_h, p_a, y, p_team=team.detach())
        self.log(f"{split}_weight", self.weight(x).mean().detach(), on_epoch=True, batch_size=len(y))

    def _eval_epoch_end(self, split: str) -> None:
        metric = self._gain(split)
        for key, value in metric.compute().items():
            self.log(f"{split}_{key}", value.float())
        metric.reset()
        if bool(self.calibrated):
            self.log(f"{split}_weight_cap", self.weight_cap.float())
            self.log(f"{split}_rho_train", self.rho_hat.float())
            self.log(f"{split}_rho_high", self.rho_high.float())
            if self.net is None:
                self.log(f"{split}_guaranteed_gain", torch.tensor(self.worst_case_gain(), dtype=torch.float32))

    def validation_step(self, batch: Sequence[Tensor], batch_idx: int) -> None:
        """Update the validation gain metric."""
        self._eval_step(batch, "val")

    def on_validation_epoch_end(self) -> None:
        """Log validation losses, gains and the current guarantee."""
        self._eval_epoch_end("val")

    def test_step(self, batch: Sequence[Tensor], batch_idx: int) -> None:
        """Update the test gain metric."""
        self._eval_step(batch, "test")

    def on_test_epoch_end(self) -> None:
        """Log test losses and gains."""
        self._eval_epoch_end("test")

    def on_train_end(self) -> None:
        """Check the guarantee of the learned weight; store it as ``guaranteed_gain_``."""
        if self.net is None:
            gain = self.worst_case_gain()
        else:
            parts = []
            for batch in self._train_batches():
                features = _unpack(batch)[3]
                if features is None:
                    raise ValueError("a feature-dependent combiner needs (p_human, p_ai, target, features) batches")
                parts.append(self.worst_case_gain(features.to(self.device)))
            gain = sum(parts) / max(len(parts), 1)
        self.guaranteed_gain_ = gain
        tolerance = 1e-6 * float(self.sigma_human) ** 2
        if self.robust and gain < -tolerance:
            raise RuntimeError(f"the learned weight lost its guarantee: worst-case gain {gain:.6g} < 0")

    def configure_optimizers(self) -> torch.optim.Optimizer:
        """Build the optimizer from the factory."""
        return self.optimizer_factory(self.parameters())
