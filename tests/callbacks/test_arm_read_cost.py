"""ReadCostScheduler: the warm-up applied per optimizer step, its run length, stop-and-resume, errors."""

from __future__ import annotations

from pathlib import Path

import lightning.pytorch as pl
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26.callbacks import ReadCostScheduler
from lightning_icml26.ops.attention.kv_memory.arm import ARMAttention


class _Tiny(pl.LightningModule):
    """Two learned-read ARM layers (targets 0.05 and 0.2) and one fixed-read layer the callback must not touch."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        kw = {"num_slots": 4, "num_clusters": 2, "window": 2, "read_policy": "learned"}
        self.a = ARMAttention(1, 4, budget_cost=0.05, **kw)  # type: ignore[arg-type]
        self.b = ARMAttention(1, 4, budget_cost=0.2, layer_idx=1, **kw)  # type: ignore[arg-type]
        self.fixed = ARMAttention(1, 4, num_slots=4, num_clusters=2, window=2, budget_cost=0.3)
        self.seen: list[tuple[float, float, float]] = []
        self.trained: list[tuple[bool, bool]] = []
        self.active: list[tuple[bool, bool]] = []

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        self.seen.append((self.a.budget_cost, self.b.budget_cost, self.fixed.budget_cost))
        self.trained.append((self.a.train_read_policy, self.b.train_read_policy))
        self.active.append((self.a.policy_active, self.b.policy_active))
        torch.manual_seed(1000 + self.global_step)  # the same Gumbel draws in a resumed run
        (x,) = batch
        out = self.b(self.a(x, x, x), x, x)
        return out.square().mean() + self.a.last_aux_loss + self.b.last_aux_loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=0.05)


def _trainer(root: Path, steps: int, cb: ReadCostScheduler) -> pl.Trainer:
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
    return DataLoader(TensorDataset(torch.randn(20, 6, 1, 4, generator=torch.Generator().manual_seed(0))), batch_size=5)


def _expected(step: int, total: int, target: float, start: float, ramp: float) -> float:
    # written from the schedule's definition, independently of read_cost_at
    if step / total < start:
        return 0.0
    if ramp == 0:
        return target
    return target * min(1.0, (step / total - start) / ramp)


def test_costs_follow_the_warm_up_per_layer_target(tmp_path: Path) -> None:
    model = _Tiny()
    cb = ReadCostScheduler(start=0.4, ramp=0.3, log=False)  # run length from the trainer: max_steps 10
    _trainer(tmp_path, 10, cb).fit(model, _loader())
    assert cb.run_steps == 10
    assert cb.targets == pytest.approx([0.05, 0.2])
    expected = [(_expected(s, 10, 0.05, 0.4, 0.3), _expected(s, 10, 0.2, 0.4, 0.3), 0.3) for s in range(10)]
    assert model.seen == [pytest.approx(row) for row in expected]
    assert model.seen[3][0] == 0.0
    assert 0 < model.seen[5][0] < 0.05
    assert model.seen[9][1] == pytest.approx(0.2)


def test_explicit_target_and_length_override_the_layers_and_the_trainer(tmp_path: Path) -> None:
    model = _Tiny()
    _trainer(tmp_path, 4, ReadCostScheduler(budget_cost=0.1, start=0.5, ramp=0.0, total_steps=8, log=False)).fit(
        model, _loader()
    )
    assert [row[:2] for row in model.seen] == [(0.0, 0.0)] * 4  # 4 of 8 steps: still before start
    model = _Tiny()
    _trainer(tmp_path, 4, ReadCostScheduler(budget_cost=0.1, start=0.5, ramp=0.0, total_steps=4, log=False)).fit(
        model, _loader()
    )
    assert [row[:2] for row in model.seen] == [(0.0, 0.0), (0.0, 0.0), (0.1, 0.1), (0.1, 0.1)]


def test_freeze_policy_trains_the_policy_only_while_its_cost_is_on(tmp_path: Path) -> None:
    model = _Tiny()
    assert model.a.policy is not None
    before = [p.detach().clone() for p in model.a.policy.parameters()]
    slot_before = model.a.w_slot.detach().clone()
    cb = ReadCostScheduler(budget_cost=0.1, start=0.5, ramp=0.0, total_steps=8, log=False, freeze_policy=True)
    _trainer(tmp_path, 4, cb).fit(model, _loader())  # 4 of 8 steps: the cost never starts
    assert model.trained == [(False, False)] * 4
    for old, new in zip(before, model.a.policy.parameters(), strict=True):
        torch.testing.assert_close(new.detach(), old, rtol=0, atol=0)  # Adam with an exact zero gradient
    assert not torch.equal(model.a.w_slot.detach(), slot_before)  # the rest of the layer trained
    model = _Tiny()
    cb = ReadCostScheduler(budget_cost=0.1, start=0.5, ramp=0.25, total_steps=8, log=False, freeze_policy=True)
    _trainer(tmp_path, 8, cb).fit(model, _loader())
    assert model.trained == [(cost > 0, cost > 0) for cost, _, _ in model.seen]
    assert [t[0] for t in model.trained] == [False] * 5 + [True] * 3  # step 4 is the ramp's first, at cost 0
    model = _Tiny()
    _trainer(tmp_path, 2, ReadCostScheduler(start=0.5, total_steps=8, log=False)).fit(model, _loader())
    assert model.trained == [(True, True)] * 2  # off by default: the task trains the policy before the cost


def test_fixed_read_before_cost_bypasses_the_policy_until_the_cost_phase(tmp_path: Path) -> None:
    model = _Tiny()
    assert model.a.policy is not None
    before = [p.detach().clone() for p in model.a.policy.parameters()]
    cb = ReadCostScheduler(budget_cost=0.1, start=0.5, ramp=0.25, total_steps=8, log=False, fixed_read_before_cost=True)
    _trainer(tmp_path, 4, cb).fit(model, _loader())  # steps 0-3 of 8: before the cost phase
    assert model.active == [(False, False)] * 4
    assert model.trained == [(True, True)] * 4  # freeze_policy is not involved
    for old, new in zip(before, model.a.policy.parameters(), strict=True):
        torch.testing.assert_close(new.detach(), old, rtol=0, atol=0)  # unused: Adam with an exact zero gradient
    model = _Tiny()
    cb = ReadCostScheduler(budget_cost=0.1, start=0.5, ramp=0.25, total_steps=8, log=False, fixed_read_before_cost=True)
    _trainer(tmp_path, 8, cb).fit(model, _loader())
    assert [a for a, _ in model.active] == [False] * 4 + [True] * 4  # from step 4 (= 0.5 x 8), the ramp's first
    (opt,) = model.trainer.optimizers
    assert model.a.policy is not None
    assert [int(opt.state[p]["step"]) for p in model.a.policy.parameters()] == [4] * 4  # fresh at step 4
    assert int(opt.state[model.a.w_slot]["step"]) == 8
    assert model.seen[4][0] == 0.0
    assert model.seen[5][0] > 0.0
    model = _Tiny()
    _trainer(tmp_path, 2, ReadCostScheduler(start=0.5, total_steps=8, log=False)).fit(model, _loader())
    assert model.active == [(True, True)] * 2  # off by default


def test_stop_and_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    def fit(root: Path, epochs: int, save: bool, ckpt: Path | None = None, model: _Tiny | None = None) -> _Tiny:
        model = model or _Tiny()
        # 8 steps (2 epochs of 4 batches) in every run; the stopped run is told, as a killed run would have known
        total = 8 if save else None
        callbacks: list[pl.Callback] = [ReadCostScheduler(start=0.3, ramp=0.4, total_steps=total, log=False)]
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

    full = fit(tmp_path / "full", 2, False)
    first = fit(tmp_path / "half", 1, True)
    resumed = _Tiny()
    resumed.a.budget_cost = resumed.b.budget_cost = 9.0  # a changed layer must not change the restored targets
    fit(tmp_path / "resumed", 2, False, tmp_path / "half" / "last.ckpt", resumed)
    expected = [(_expected(s, 8, 0.05, 0.3, 0.4), _expected(s, 8, 0.2, 0.3, 0.4), 0.3) for s in range(8)]
    assert full.seen == [pytest.approx(row) for row in expected]
    assert first.seen + resumed.seen == [pytest.approx(row) for row in full.seen]
    for name, value in full.state_dict().items():
        torch.testing.assert_close(resumed.state_dict()[name], value, msg=name)


def test_errors() -> None:
    with pytest.raises(ValueError, match="start must be in"):
        ReadCostScheduler(start=1.5)
    with pytest.raises(ValueError, match="ramp must be in"):
        ReadCostScheduler(ramp=-0.1)
    with pytest.raises(ValueError, match="budget_cost"):
        ReadCostScheduler(budget_cost=-1.0)
    with pytest.raises(ValueError, match="total_steps"):
        ReadCostScheduler(total_steps=0)
    with pytest.raises(ValueError, match="total_steps"):
        ReadCostScheduler(total_steps=2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="freeze_policy must be a bool"):
        ReadCostScheduler(freeze_policy="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fixed_read_before_cost must be a bool"):
        ReadCostScheduler(fixed_read_before_cost=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="freeze_policy and fixed_read_before_cost"):
        ReadCostScheduler(freeze_policy=True, fixed_read_before_cost=True)
    fixed_only = pl.LightningModule()
    fixed_only.layer = ARMAttention(1, 4, num_slots=4, num_clusters=2, window=2)
    with pytest.raises(ValueError, match=r"no ARMAttention with read_policy='learned'.*1 ARM layer.*\['fixed'\]"):
        ReadCostScheduler.learned_layers(fixed_only)
    with pytest.raises(ValueError, match="total_steps is unknown"):
        ReadCostScheduler().cost_at(0, 0.1)
