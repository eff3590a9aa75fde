"""Shared pieces of the callbacks that schedule a per-layer setting over a fraction of the run."""

from __future__ import annotations

import math
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback

__all__ = ["LayerTargetSchedule", "trainer_run_steps"]


def trainer_run_steps(trainer: pl.Trainer, owner: str) -> int:
    """``trainer.estimated_stepping_batches`` as an int, or a ``ValueError`` naming ``owner`` for an unbounded run.

    Args:
        trainer: the fitting trainer.
        owner: the callback's name, used in the error (``"ReadCostScheduler"``).

    Example:
        >>> trainer_run_steps(pl.Trainer(max_steps=12, logger=False, enable_checkpointing=False), "MyCallback")
        12
    """
    estimated = trainer.estimated_stepping_batches
    if not math.isfinite(estimated) or estimated < 1:
        raise ValueError(
            f"the trainer's run length is {estimated}; give {owner}(total_steps=...) or bound the run with "
            "max_steps / max_epochs"
        )
    return int(estimated)


class LayerTargetSchedule(Callback):
    """A callback holding one target per layer and the run length, both checkpointed.

    Attributes:
        targets: each layer's target (``None`` until training starts or a checkpoint is loaded).
        run_steps: the run's optimizer steps (``None`` until resolved).
    """

    targets: list[float] | None
    run_steps: int | None
    total_steps: int | None

    def run_length(self) -> int:
        """The run's optimizer steps: resolved when training starts, else ``total_steps``."""
        total = self.run_steps if self.run_steps is not None else self.total_steps
        if total is None:
            raise ValueError("total_steps is unknown before training starts; give total_steps")
        return total

    def resolve(self, trainer: pl.Trainer, explicit: float | None, configured: list[float], what: str) -> None:
        """Fix the run length and, unless restored from a checkpoint, one target per layer.

        Args:
            trainer: the fitting trainer (its ``estimated_stepping_batches`` when ``total_steps`` is ``None``).
            explicit: a target for every layer, or ``None`` for ``configured``.
            configured: each layer's own value when training starts.
            what: what the layers are, for the error (``"ARM layer(s)"``).

        Raises:
            ValueError: an unbounded run without ``total_steps``, or restored targets for another number of layers.
        """
        if self.run_steps is None:
            self.run_steps = self.total_steps or trainer_run_steps(trainer, type(self).__name__)
        if self.targets is None:
            self.targets = configured if explicit is None else [explicit] * len(configured)
        if len(self.targets) != len(configured):
            raise ValueError(
                f"the checkpoint holds {len(self.targets)} target(s) of {type(self).__name__} but the module has "
                f"{len(configured)} {what}"
            )

    def state_dict(self) -> dict[str, Any]:
        """Each layer's target and the run length."""
        return {"targets": self.targets, "run_steps": self.run_steps}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the targets and run length (missing keys: resolved again when training starts)."""
        targets = state_dict.get("targets")
        self.targets = None if targets is None else [float(t) for t in targets]
        run_steps = state_dict.get("run_steps")
        self.run_steps = None if run_steps is None else int(run_steps)
