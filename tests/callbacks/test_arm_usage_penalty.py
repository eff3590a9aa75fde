"""UsagePenaltyScheduler: the penalty switched on per optimizer step, per-layer targets, stop-and-resume, errors."""

from __future__ import annotations

from pathlib import Path

import lightning.pytorch as pl
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26.callbacks import UsagePenaltyScheduler
from lightning_icml26.ops.attention.kv_memory.arm import ARMAttention


class _Tiny(pl.LightningModule):
    """Two ARM layers configured with penalties 3 and 0; records the penalties each training step saw."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        kw = {"num_slots": 4, "num_clusters": 2, "window": 2}
        self.a = ARMAttention(1, 4, usage_penalty=3.0, **kw)  # type: ignore[arg-type]
        self.b = ARMAttention(1, 4, **kw)  # type: ignore[arg-type]
        self.seen: list[tuple[float, float]] = []

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        self.seen.append((self.a.usage_penalty, self.b.usage_penalty))
        torch.manual_seed(1000 + self.global_step)  # the same Gumbel draws in a resumed run
        (x,) = batch
        return self.b(self.a(x, x, x), x, x).square().mean()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=0.05)


def _loader() -> DataLoader:
    return DataLoader(TensorDataset(torch.randn(20, 6, 1, 4, generator=torch.Generator().manual_seed(0))), batch_size=5)


def _fit(root: Path, epochs: int, cb: UsagePenaltyScheduler, save: bool = False, ckpt: Path | None = None) -> _Tiny:
    model = _Tiny()
    callbacks: list[pl.Callback] = [cb]
    if save:
        callbacks.append(ModelCheckpoint(dirpath=root, save_last=True))
    pl.Trainer(
        max_epochs=epochs,
        callbacks=callbacks,
        default_root_dir=root,
        logger=False,
        enable_checkpointing=save,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
    ).fit(model, _loader(), ckpt_path=ckpt)
    return model


def test_penalty_is_off_until_start_then_each_layers_target(tmp_path: Path) -> None:
    model = _fit(tmp_path, 2, UsagePenaltyScheduler(start=0.5))  # 8 steps from the trainer: on from step 4
    assert model.seen == [(0.0, 0.0)] * 4 + [(3.0, 0.0)] * 4
    forced = _fit(tmp_path / "forced", 2, UsagePenaltyScheduler(usage_penalty=2.0, start=0.3, total_steps=10))
    assert forced.seen == [(0.0, 0.0)] * 3 + [(2.0, 2.0)] * 5  # 3 / 10 >= 0.3


def test_stop_and_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    full = _fit(tmp_path / "full", 2, UsagePenaltyScheduler(start=0.75))
    first = _fit(tmp_path / "half", 1, UsagePenaltyScheduler(start=0.75, total_steps=8), save=True)
    assert first.a.usage_penalty == 0.0  # the checkpoint's layers hold 0: the target must come from the callback
    resumed = _fit(tmp_path / "resumed", 2, UsagePenaltyScheduler(start=0.75), ckpt=tmp_path / "half" / "last.ckpt")
    assert first.seen + resumed.seen == full.seen == [(0.0, 0.0)] * 6 + [(3.0, 0.0)] * 2
    for name, value in full.state_dict().items():
        torch.testing.assert_close(resumed.state_dict()[name], value, rtol=0, atol=0, msg=name)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"usage_penalty": 0.0}, "usage_penalty must be None or a finite number > 0"),
        ({"usage_penalty": float("inf")}, "usage_penalty must be None or a finite number > 0"),
        ({"usage_penalty": True}, "usage_penalty must be None or a finite number > 0"),
        ({"start": 1.0}, r"start must be in \[0, 1\)"),
        ({"start": -0.1}, r"start must be in \[0, 1\)"),
        ({"total_steps": 0}, "total_steps must be None or an integer >= 1"),
        ({"total_steps": 2.5}, "total_steps must be None or an integer >= 1"),
    ],
)
def test_bad_arguments(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        UsagePenaltyScheduler(**kwargs)  # type: ignore[arg-type]


def test_module_errors(tmp_path: Path) -> None:
    plain = pl.LightningModule()
    with pytest.raises(ValueError, match="no ARMAttention layer for UsagePenaltyScheduler"):
        UsagePenaltyScheduler.arm_layers(plain)
    model = _Tiny()
    model.a.usage_penalty = 0.0
    trainer = pl.Trainer(max_steps=2, logger=False, enable_checkpointing=False, enable_progress_bar=False)
    with pytest.raises(ValueError, match="no ARMAttention layer has usage_penalty > 0"):
        UsagePenaltyScheduler().on_fit_start(trainer, model)
    with pytest.raises(ValueError, match="total_steps is unknown"):
        UsagePenaltyScheduler().penalty_at(0, 1.0)


def test_a_checkpoint_for_another_number_of_layers_is_refused() -> None:
    sched = UsagePenaltyScheduler(start=0.5, total_steps=4)
    sched.load_state_dict({"targets": [3.0], "run_steps": 4})
    trainer = pl.Trainer(max_steps=4, logger=False, enable_checkpointing=False, enable_progress_bar=False)
    with pytest.raises(ValueError, match="holds 1 target.*UsagePenaltyScheduler.*has 2 ARM layer"):
        sched.on_fit_start(trainer, _Tiny())


def test_layers_route_as_step_zero_from_the_start_of_fit() -> None:
    """The sanity-check validation before the first batch already sees the penalty of step 0 (0 before start)."""
    model = _Tiny()
    sched = UsagePenaltyScheduler(start=0.5, total_steps=4)
    trainer = pl.Trainer(max_steps=4, logger=False, enable_checkpointing=False, enable_progress_bar=False)
    sched.on_fit_start(trainer, model)
    assert (model.a.usage_penalty, model.b.usage_penalty) == (0.0, 0.0)
    assert sched.targets == [3.0, 0.0]
