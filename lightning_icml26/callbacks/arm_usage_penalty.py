"""``UsagePenaltyScheduler``: turn on the usage-aware write routing of every ARM layer part-way through training."""

from __future__ import annotations

import math
from typing import Any

import lightning.pytorch as pl

from lightning_icml26.callbacks._layer_schedule import LayerTargetSchedule
from lightning_icml26.ops.attention.kv_memory.arm import ARMAttention

__all__ = ["UsagePenaltyScheduler"]


class UsagePenaltyScheduler(LayerTargetSchedule):
    """Route ARM writes by their keys alone for the first ``start`` of training, then with ``usage_penalty``.

    Before each training batch every :class:`ARMAttention` of the module gets ``usage_penalty = 0`` while
    ``trainer.global_step / total_steps < start`` and its target penalty from then on. Our addition to the
    reconstruction of ARM: with the penalty from the first step, a model on MQAR's loss plateau spreads every token,
    filler included, over all the slots and overwrites the stored pairs, and stays on the plateau; turned on once the
    model has left it (half-way in the benchmark), the penalty spreads the stored values over more slots and recall
    rises (see the ARM page of the docs).

    The targets (``usage_penalty`` when given, otherwise each layer's own ``usage_penalty`` as configured when
    training starts) and the run length are part of the checkpoint, so a run stopped before ``start`` (whose layers
    then hold 0) resumes with the right targets. The callback sets the layers' ``usage_penalty`` itself: a module
    fitted again with a new ``UsagePenaltyScheduler(usage_penalty=None)`` after a run that stopped before ``start``
    holds 0 and is refused; give the penalty explicitly then.

    Args:
        usage_penalty: penalty once on (> 0, finite), or ``None`` for each layer's configured ``usage_penalty``.
        start: fraction of training routed by the keys alone, in [0, 1).
        total_steps: optimizer steps of the whole run (>= 1), or ``None`` for the trainer's
            ``estimated_stepping_batches``.

    Raises:
        ValueError: an argument out of range (naming it), an unbounded run with ``total_steps=None``, a module
            without an ARM layer, or (with ``usage_penalty=None``) no layer configured with a penalty above 0.

    Example:
        >>> sched = UsagePenaltyScheduler(usage_penalty=8.0, start=0.5, total_steps=100)
        >>> [sched.penalty_at(s, 8.0) for s in (0, 49, 50, 99)]
        [0.0, 0.0, 8.0, 8.0]
    """

    def __init__(self, usage_penalty: float | None = None, start: float = 0.5, total_steps: int | None = None) -> None:
        if usage_penalty is not None and (
            isinstance(usage_penalty, bool)
            or not isinstance(usage_penalty, (int, float))
            or not (usage_penalty > 0 and math.isfinite(usage_penalty))
        ):
            raise ValueError(f"usage_penalty must be None or a finite number > 0, got {usage_penalty!r}")
        if isinstance(start, bool) or not isinstance(start, (int, float)) or not 0.0 <= start < 1.0:
            raise ValueError(f"start must be in [0, 1), got {start!r}")
        if total_steps is not None and (
            isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps < 1
        ):
            raise ValueError(f"total_steps must be None or an integer >= 1, got {total_steps!r}")
        self.usage_penalty = None if usage_penalty is None else float(usage_penalty)
        self.start, self.total_steps = float(start), total_steps
        self.targets: list[float] | None = None
        self.run_steps: int | None = None

    def penalty_at(self, step: int, target: float) -> float:
        """The penalty of optimizer step ``step`` for a layer whose target is ``target``."""
        return target if step / self.run_length() >= self.start else 0.0

    @staticmethod
    def arm_layers(pl_module: pl.LightningModule) -> list[ARMAttention]:
        """The module's ARM layers in ``modules()`` order; ``ValueError`` when there is none."""
        layers = [m for m in pl_module.modules() if isinstance(m, ARMAttention)]
        if not layers:
            raise ValueError(f"{type(pl_module).__name__} has no ARMAttention layer for UsagePenaltyScheduler")
        return layers

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Resolve the run length and, unless restored from a checkpoint, each layer's target penalty."""
        layers = self.arm_layers(pl_module)
        configured = [float(layer.usage_penalty) for layer in layers]
        if self.targets is None and self.usage_penalty is None and not any(configured):
            raise ValueError(
                "no ARMAttention layer has usage_penalty > 0; give UsagePenaltyScheduler(usage_penalty=...) "
                "or configure the layers with one"
            )
        self.resolve(trainer, self.usage_penalty, configured, "ARM layer(s)")
        self._apply(trainer.global_step, layers)  # the sanity-check validation already routes as step 0 will

    def _apply(self, step: int, layers: list[ARMAttention]) -> None:
        assert self.targets is not None
        for layer, target in zip(layers, self.targets, strict=True):
            layer.usage_penalty = self.penalty_at(step, target)

    def on_train_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        """Apply this optimizer step's penalty to every ARM layer."""
        if self.targets is None:
            self.on_fit_start(trainer, pl_module)
        self._apply(trainer.global_step, self.arm_layers(pl_module))
