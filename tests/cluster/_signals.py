"""Callbacks that play the scheduler for the tests: they send a preemption signal at a given step."""

from __future__ import annotations

import os
import signal
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch import Callback


class SignalAtStep(Callback):
    """Send ``signum`` before training step ``step`` on global rank ``rank``, to this process or its parent.

    ``to_parent`` sends it to the process that spawned the ranks (the ``icml26`` process a scheduler signals).
    """

    def __init__(self, step: int, signum: str = "SIGTERM", rank: int = 0, to_parent: bool = False) -> None:
        self.step = step
        self.signum = getattr(signal, signum)
        self.rank = rank
        self.to_parent = to_parent
        self.sent = False

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: Any, batch: Any, batch_idx: int) -> None:
        if trainer.global_step == self.step and trainer.global_rank == self.rank and not self.sent:
            self.sent = True
            os.kill(os.getppid() if self.to_parent else os.getpid(), self.signum)


class StopRankAtStep(Callback):
    """SIGSTOP global rank ``rank`` before step ``step``: a rank that stops answering (a hung node)."""

    def __init__(self, step: int, rank: int = 1) -> None:
        self.step = step
        self.rank = rank

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: Any, batch: Any, batch_idx: int) -> None:
        if trainer.global_step == self.step and trainer.global_rank == self.rank:
            os.kill(os.getpid(), signal.SIGSTOP)
