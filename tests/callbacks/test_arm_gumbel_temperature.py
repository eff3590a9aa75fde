"""GumbelTemperatureScheduler: the schedule's closed form, applied per step, and stop-and-resume continuity."""

from __future__ import annotations

import math
from pathlib import Path

import lightning.pytorch as pl
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26.callbacks import GumbelTemperatureScheduler
from lightning_icml26.ops.attention.kv_memory.arm import ARMAttention


class _Tiny(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.attn = ARMAttention(1, 4, num_slots=4, num_clusters=2, window=2)
        self.seen: list[float] = []

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        self.seen.append(self.attn.tau)
        (x,) = batch
        return self.attn(x, x, x).square().mean()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)


def _trainer(root: Path, steps: int, cb: GumbelTemperatureScheduler) -> pl.Trainer:
    return pl.Trainer(
        max_steps=steps,
        callbacks=[cb],
        default_root_dir=root,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
    )


def _loader() -> DataLoader:
    return DataLoader(TensorDataset(torch.randn(16, 6, 1, 4, generator=torch.Generator().manual_seed(0))), batch_size=2)


def test_schedules_follow_their_closed_forms() -> None:
    exp = GumbelTemperatureScheduler(tau_start=2.0, tau_min=0.5, rate=0.1)
    assert [exp.tau_at(s) for s in (0, 5, 100)] == pytest.approx([2.0, 2.0 * math.exp(-0.5), 0.5])
    lin = GumbelTemperatureScheduler(tau_start=1.0, tau_min=0.2, schedule="linear", total_steps=8)
    assert [lin.tau_at(s) for s in (0, 4, 8, 20)] == pytest.approx([1.0, 0.6, 0.2, 0.2])


def test_stop_and_resume_continues_the_schedule(tmp_path: Path) -> None:
    def make() -> GumbelTemperatureScheduler:
        return GumbelTemperatureScheduler(tau_start=1.0, tau_min=0.05, rate=0.3, log=False)

    full = _Tiny()
    _trainer(tmp_path / "a", 6, make()).fit(full, _loader())
    assert full.seen == pytest.approx([math.exp(-0.3 * s) for s in range(6)])
    first = _Tiny()
    trainer = _trainer(tmp_path / "b", 3, make())
    trainer.fit(first, _loader())
    trainer.save_checkpoint(tmp_path / "half.ckpt")
    resumed = _Tiny()
    cb = make()
    _trainer(tmp_path / "c", 6, cb).fit(resumed, _loader(), ckpt_path=tmp_path / "half.ckpt")
    assert first.seen + resumed.seen == pytest.approx(full.seen)
    assert cb.state_dict() == {"step": 6, "tau": pytest.approx(math.exp(-1.5))}


def test_errors() -> None:
    with pytest.raises(ValueError, match="schedule"):
        GumbelTemperatureScheduler(schedule="cosine")
    with pytest.raises(ValueError, match="tau_min"):
        GumbelTemperatureScheduler(tau_start=0.1, tau_min=0.5)
    with pytest.raises(ValueError, match="total_steps"):
        GumbelTemperatureScheduler(total_steps=0)
    cb = GumbelTemperatureScheduler()
    with pytest.raises(ValueError, match="no ARMAttention"):
        cb.on_train_batch_start(None, pl.LightningModule(), None, 0)  # type: ignore[arg-type]
    cb.load_state_dict({})
    assert cb.step == 0
