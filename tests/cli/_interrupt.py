"""A callback that presses Ctrl-C for the test: it raises KeyboardInterrupt when an epoch starts."""

from __future__ import annotations

import lightning.pytorch as pl
from lightning.pytorch import Callback


class InterruptAtEpoch(Callback):
    """Raise ``KeyboardInterrupt`` at the start of training epoch ``epoch`` (what Ctrl-C does)."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.current_epoch == self.epoch:
            raise KeyboardInterrupt
