"""WeightDecaySchedule: the decay follows the milestones, also after a resume; bad milestones are refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from lightning.pytorch import Trainer
from lightning.pytorch.demos.boring_classes import BoringModel

from lightning_icml26.callbacks import WeightDecaySchedule


class _Recorder(BoringModel):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[float] = []

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01, weight_decay=0.5)

    def on_train_epoch_start(self) -> None:
        self.seen.append(self.trainer.optimizers[0].param_groups[0]["weight_decay"])


def _trainer(tmp_path: Path, epochs: int) -> Trainer:
    return Trainer(
        default_root_dir=tmp_path,
        max_epochs=epochs,
        limit_train_batches=1,
        limit_val_batches=0,
        callbacks=[WeightDecaySchedule({2: 0.1, 4: 0.0})],
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )


def test_decay_follows_milestones_and_resume(tmp_path: Path) -> None:
    model = _Recorder()
    trainer = _trainer(tmp_path, 3)
    trainer.fit(model)
    # Callback hooks run before the module's: epochs 0-1 keep the optimizer's 0.5, epoch 2 gets 0.1.
    assert model.seen == [0.5, 0.5, 0.1]
    ckpt = tmp_path / "stop.ckpt"
    trainer.save_checkpoint(ckpt)
    resumed = _Recorder()
    _trainer(tmp_path, 6).fit(resumed, ckpt_path=ckpt)
    # The restored optimizer state carries 0.1; the schedule re-applies the latest due milestone each epoch.
    assert resumed.seen == [0.1, 0.0, 0.0]


@pytest.mark.parametrize("milestones", [{-1: 0.1}, {"x": 0.1}, {1.5: 0.1}, {1: -0.1}, {1: "a"}])
def test_bad_milestones_are_refused(milestones: dict) -> None:
    with pytest.raises(ValueError, match="milestones"):
        WeightDecaySchedule(milestones)
