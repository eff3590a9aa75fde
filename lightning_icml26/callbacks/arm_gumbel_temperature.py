"""``GumbelTemperatureScheduler``: anneal the Gumbel-Softmax temperature of every ARM layer once per step."""

from __future__ import annotations

import math
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback

from lightning_icml26.ops.attention.kv_memory.arm import ARMAttention

__all__ = ["GumbelTemperatureScheduler"]

_SCHEDULES = ("exponential", "linear")


class GumbelTemperatureScheduler(Callback):
    """Set ``tau`` of every :class:`ARMAttention` in the module before each training batch.

    ``"exponential"``: ``tau = max(tau_min, tau_start * exp(-rate * step))`` (the annealing of Jang et al.,
    2017); ``"linear"``: from ``tau_start`` to ``tau_min`` over ``total_steps``, then constant. The step counter
    is part of the checkpoint, so a resumed run continues the schedule where it stopped.

    Args:
        tau_start: temperature at step 0 (> 0).
        tau_min: floor (> 0, <= tau_start).
        schedule: ``"exponential"`` or ``"linear"``.
        rate: decay rate of ``"exponential"`` (>= 0).
        total_steps: length of ``"linear"`` (>= 1).
        log: log the temperature as ``gumbel_tau``.

    Example:
        >>> sched = GumbelTemperatureScheduler(tau_start=1.0, tau_min=0.25, schedule="linear", total_steps=4)
        >>> [sched.tau_at(s) for s in (0, 2, 4, 9)]
        [1.0, 0.625, 0.25, 0.25]
    """

    def __init__(
        self,
        tau_start: float = 1.0,
        tau_min: float = 0.1,
        schedule: str = "exponential",
        rate: float = 1e-3,
        total_steps: int = 1000,
        log: bool = True,
    ) -> None:
        if schedule not in _SCHEDULES:
            raise ValueError(f"schedule must be one of {_SCHEDULES}, got {schedule!r}")
        if not (isinstance(tau_start, int | float) and isinstance(tau_min, int | float) and 0 < tau_min <= tau_start):
            raise ValueError(f"need 0 < tau_min <= tau_start, got tau_min={tau_min!r}, tau_start={tau_start!r}")
        if not rate >= 0:
            raise ValueError(f"rate must be >= 0, got {rate!r}")
        if isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps < 1:
            raise ValueError(f"total_steps must be an integer >= 1, got {total_steps!r}")
        self.tau_start, self.tau_min, self.schedule = float(tau_start), float(tau_min), schedule
        self.rate, self.total_steps, self.log = float(rate), total_steps, log
        self.step = 0
        self.tau = self.tau_start

    def tau_at(self, step: int) -> float:
        """The temperature of training step ``step``."""
        if self.schedule == "linear":
            frac = min(step / self.total_steps, 1.0)
            return self.tau_start + (self.tau_min - self.tau_start) * frac
        return max(self.tau_min, self.tau_start * math.exp(-self.rate * step))

    def on_train_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        """Apply this step's temperature to every ARM layer, then advance the counter."""
        self.tau = self.tau_at(self.step)
        found = 0
        for module in pl_module.modules():
            if isinstance(module, ARMAttention):
                module.tau = self.tau
                found += 1
        if not found:
            raise ValueError(f"{type(pl_module).__name__} has no ARMAttention layer for GumbelTemperatureScheduler")
        self.step += 1
        if self.log:
            pl_module.log("gumbel_tau", self.tau, on_step=True, on_epoch=False)

    def state_dict(self) -> dict[str, Any]:
        """Step counter and current temperature."""
        return {"step": self.step, "tau": self.tau}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the counter (missing keys: step 0, ``tau_start``)."""
        self.step = int(state_dict.get("step", 0))
        self.tau = float(state_dict.get("tau", self.tau_start))
