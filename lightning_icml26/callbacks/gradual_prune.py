"""Gradual magnitude pruning (Zhu and Gupta, 2017): a cubic sparsity schedule with global magnitude masks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import lightning.pytorch as pl
from typing_extensions import override

from lightning_icml26.callbacks.sparsity import Evaluator, MagnitudePrune
from lightning_icml26.metrics.functional.sparsity import select_weights

__all__ = ["GradualMagnitudePrune", "cubic_sparsity"]


def cubic_sparsity(step: int, final: float, start: int, end: int, initial: float = 0.0) -> float:
    """Zhu and Gupta's schedule ``s_f + (s_i - s_f) (1 - (t - t0) / (t1 - t0))^3``, with ``t`` clipped to ``[t0, t1]``.

    Args:
        step: the optimizer step ``t``.
        final: the final sparsity ``s_f``, in ``[0, 1)``.
        start: the first pruning step ``t0``.
        end: the step ``t1 > t0`` at which ``final`` is reached.
        initial: the sparsity ``s_i`` at ``t0``, in ``[0, final]``.

    Example:
        >>> cubic_sparsity(0, 0.9, 10, 110), cubic_sparsity(60, 0.9, 10, 110), cubic_sparsity(200, 0.9, 10, 110)
        (0.0, 0.7875, 0.9)
    """
    if not 0.0 <= final < 1.0:
        raise ValueError(f"final must lie in [0, 1), got {final!r}")
    if not 0.0 <= initial <= final:
        raise ValueError(f"initial must lie in [0, final={final}], got {initial!r}")
    if end <= start:
        raise ValueError(f"end must exceed start, got start={start}, end={end}")
    frac = min(max((step - start) / (end - start), 0.0), 1.0)
    return final + (initial - final) * (1.0 - frac) ** 3


class GradualMagnitudePrune(MagnitudePrune):
    """Prune the selected weights gradually to ``final_sparsity`` by global magnitude, then fine-tune the mask.

    From the end of epoch ``start_epoch`` (in optimizer steps) to ``end_fraction`` of the run, the mask is
    recomputed ``updates_per_epoch`` times per epoch, each time removing the smallest-magnitude entries of all
    selected tensors together until the sparsity of :func:`cubic_sparsity` is reached (a global ranking; Zhu and
    Gupta rank each layer on its own). The mask applies after every optimizer step and to the gradients, as in
    :class:`MagnitudePrune`, and stays fixed after the last update. ``sweep``, ``evaluate``, ``sweep_test`` and
    ``filename`` are :class:`MagnitudePrune`'s threshold sweep at fit end.

    Args:
        final_sparsity: the sparsity at the end of the schedule, in ``[0, 1)``.
        initial_sparsity: the sparsity of the first update, in ``[0, final_sparsity]``.
        start_epoch: epochs before the first update (a fraction is allowed), ``>= 0``.
        end_fraction: fraction of the run's optimizer steps at which ``final_sparsity`` is reached, in ``(0, 1]``.
        updates_per_epoch: mask updates per epoch, ``>= 1``.
        include: weight kinds pruned (``"conv"``, ``"linear"``, ``"all"``).
        sweep: thresholds evaluated at fit end.
        evaluate: ``"accuracy"``, a callable ``module -> float``, or ``None``.
        sweep_test: also evaluate the sweep on the test loader.
        filename: JSON file of the sweep and the last mask's threshold (relative to ``trainer.default_root_dir``).

    Example:
        >>> import tempfile
        >>> from lightning.pytorch import Trainer
        >>> from lightning.pytorch.demos.boring_classes import BoringModel
        >>> gmp = GradualMagnitudePrune(0.5, start_epoch=0, end_fraction=0.5, include="linear", evaluate=None)
        >>> trainer = Trainer(max_epochs=2, limit_train_batches=4, limit_val_batches=0, logger=False, callbacks=[gmp],
        ...                   default_root_dir=tempfile.mkdtemp(),
        ...                   enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
        >>> trainer.fit(BoringModel())
        >>> float((trainer.lightning_module.layer.weight == 0).float().mean())
        0.5
    """

    def __init__(
        self,
        final_sparsity: float,
        initial_sparsity: float = 0.0,
        start_epoch: float = 1.0,
        end_fraction: float = 0.75,
        updates_per_epoch: int = 4,
        include: Sequence[str] | str = ("conv",),
        sweep: Sequence[float] = (),
        evaluate: str | Evaluator | None = "accuracy",
        sweep_test: bool = False,
        filename: str = "gradual_prune.json",
    ) -> None:
        super().__init__(include=include, sweep=sweep, evaluate=evaluate, sweep_test=sweep_test, filename=filename)
        cubic_sparsity(0, final_sparsity, 0, 1, initial_sparsity)  # validates the sparsities
        if isinstance(start_epoch, bool) or not isinstance(start_epoch, int | float) or not start_epoch >= 0:
            raise ValueError(f"start_epoch must be a non-negative number, got {start_epoch!r}")
        if isinstance(end_fraction, bool) or not isinstance(end_fraction, int | float) or not 0 < end_fraction <= 1:
            raise ValueError(f"end_fraction must lie in (0, 1], got {end_fraction!r}")
        if isinstance(updates_per_epoch, bool) or not isinstance(updates_per_epoch, int) or updates_per_epoch < 1:
            raise ValueError(f"updates_per_epoch must be a positive integer, got {updates_per_epoch!r}")
        self.final_sparsity = float(final_sparsity)
        self.initial_sparsity = float(initial_sparsity)
        self.start_epoch = float(start_epoch)
        self.end_fraction = float(end_fraction)
        self.updates_per_epoch = updates_per_epoch

    def schedule(self, trainer: pl.Trainer) -> tuple[int, int, int]:
        """``(first step, last step, steps between updates)`` of this run, in optimizer steps."""
        total = max(1, int(trainer.estimated_stepping_batches))
        per_epoch = max(1, int(trainer.num_training_batches) // max(1, trainer.accumulate_grad_batches))
        start = int(round(self.start_epoch * per_epoch))
        end = max(start + 1, int(self.end_fraction * total))
        return start, end, max(1, per_epoch // self.updates_per_epoch)

    @override
    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        step = trainer.global_step - 1  # the optimizer step just taken
        start, end, every = self.schedule(trainer)
        if start <= step <= end and (step - start) % every == 0:
            self.amount = cubic_sparsity(step, self.final_sparsity, start, end, self.initial_sparsity)
            self.prune(pl_module)
        elif self.pruned and not self._masks:  # resumed: the weights carry the zeros, the mask is read from them
            self._set_masks({name: w.detach() != 0 for name, w in select_weights(pl_module, self.include).items()})
        super().on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)
