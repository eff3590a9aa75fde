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

    def check_targets(self, layers: int, what: str) -> None:
        """``ValueError`` unless there is one target per layer (``what`` names the layers, e.g. ``"ARM layer(s)"``)."""
        if self.targets is not None and len(self.targets) != layers:
            raise ValueError(
                f"the checkpoint holds {len(self.targets)} target(s) of {type(self).__name__} but the module has "
                f"{layers} {what}"
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
