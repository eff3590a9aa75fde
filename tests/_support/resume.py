"""Stop-and-resume checks: a run stopped after ``stop`` epochs and resumed to ``total`` equals an uninterrupted one.

:func:`stop_and_resume` fits three copies built by the same factory: one for ``total`` epochs, one for ``stop``
epochs with a ``last.ckpt`` checkpoint, and one resumed from that checkpoint to ``total``. The factory must build
the model and data module from fixed seeds so the three copies start alike. :func:`assert_same_weights` compares
two state dicts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch import Callback, LightningDataModule, LightningModule, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint

__all__ = ["LossRecorder", "Runs", "assert_same_weights", "stop_and_resume"]


class LossRecorder(Callback):
    """Keeps the training loss of every optimisation step, keyed by the global step."""

    def __init__(self) -> None:
        self.losses: dict[int, float] = {}

    def on_train_batch_end(self, trainer: Trainer, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        loss = outputs["loss"] if isinstance(outputs, dict) else outputs
        self.losses[trainer.global_step] = float(loss)


@dataclass
class Runs:
    """The three fitted models and the per-step training losses of each run."""

    full: LightningModule
    part: LightningModule
    resumed: LightningModule
    full_losses: dict[int, float]
    part_losses: dict[int, float]
    resumed_losses: dict[int, float]


def _trainer(root: Path, epochs: int, save: bool, recorder: LossRecorder, **kwargs: Any) -> Trainer:
    callbacks: list[Callback] = [recorder]
    if save:
        callbacks.append(ModelCheckpoint(dirpath=root, save_last=True))
    options: dict[str, Any] = {
        "max_epochs": epochs,
        "default_root_dir": root,
        "logger": False,
        "enable_checkpointing": save,
        "callbacks": callbacks,
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "num_sanity_val_steps": 0,
        "deterministic": True,
        "accelerator": "cpu",
    }
    options.update(kwargs)
    return Trainer(**options)


def stop_and_resume(
    make: Callable[[], tuple[LightningModule, LightningDataModule]],
    root: Path,
    total: int = 3,
    stop: int = 2,
    **trainer_kwargs: Any,
) -> Runs:
    """Fit ``make()`` uninterrupted for ``total`` epochs, stopped at ``stop``, and resumed from there to ``total``."""
    recorders = [LossRecorder() for _ in range(3)]
    full, dm = make()
    _trainer(root / "full", total, False, recorders[0], **trainer_kwargs).fit(full, datamodule=dm)
    part, dm = make()
    _trainer(root / "part", stop, True, recorders[1], **trainer_kwargs).fit(part, datamodule=dm)
    resumed, dm = make()
    trainer = _trainer(root / "resumed", total, False, recorders[2], **trainer_kwargs)
    trainer.fit(resumed, datamodule=dm, ckpt_path=str(root / "part" / "last.ckpt"))
    return Runs(full, part, resumed, *(r.losses for r in recorders))


def assert_same_weights(a: LightningModule, b: LightningModule, atol: float = 1e-6) -> None:
    """Every entry of the two state dicts agrees to ``atol`` (same keys, same shapes)."""
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for name, value in sa.items():
        torch.testing.assert_close(value, sb[name], rtol=0, atol=atol, msg=f"{name} differs beyond {atol}")
