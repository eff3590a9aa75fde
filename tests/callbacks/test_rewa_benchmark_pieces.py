"""The pieces the ReWA sparsity benchmark runs through: warm-up + cosine learning rate, gradual magnitude pruning
(cubic schedule, global ranking), the sweep's test accuracy, and ClassifierModule's label smoothing and plain biases.
"""

from __future__ import annotations

import functools
import math

import lightning.pytorch as pl
import pytest
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import Callback
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26.callbacks import (
    GradualMagnitudePrune,
    MagnitudePrune,
    WarmupCosineSchedule,
    cubic_sparsity,
    warmup_cosine_factor,
)
from lightning_icml26.modules import MLP, ClassifierModule
from lightning_icml26.optim import L1SGD, ReWASGD


class _DataModule(pl.LightningDataModule):
    def __init__(self, n: int = 64) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        x = torch.randn(n, 6, generator=g)
        self.ds = TensorDataset(x, (x[:, 0] + x[:, 1] > 0).long())
        self.test_ds = TensorDataset(-x, (x[:, 0] + x[:, 1] <= 0).long())  # a different split: test != val

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.ds, batch_size=16)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.ds, batch_size=32)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self.test_ds, batch_size=32)


def _trainer(tmp_path, callbacks: list, epochs: int = 2) -> pl.Trainer:
    return pl.Trainer(
        max_epochs=epochs,
        callbacks=callbacks,
        default_root_dir=tmp_path,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )


def _module(**kw) -> ClassifierModule:
    torch.manual_seed(0)
    opt = functools.partial(torch.optim.SGD, lr=0.1, momentum=0.9)
    return ClassifierModule(MLP(6, 2, hidden=[16, 8]), num_classes=2, optimizer=opt, **kw)


class _LrTrace(Callback):
    def __init__(self) -> None:
        self.lrs: list[float] = []

    def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
        self.lrs.append(optimizer.param_groups[0]["lr"])


def test_warmup_cosine_factor_against_the_closed_form() -> None:
    total, warmup = 40, 8
    for step in range(total):
        expected = (step + 1) / warmup if step < warmup else 0.5 * (1 + math.cos(math.pi * (step - warmup) / 32))
        assert warmup_cosine_factor(step, total, warmup) == pytest.approx(expected)
    assert warmup_cosine_factor(0, 10, 0) == 1.0
    with pytest.raises(ValueError, match="warmup"):
        warmup_cosine_factor(0, 10, -1)
    with pytest.raises(ValueError, match="warmup_epochs"):
        WarmupCosineSchedule(warmup_epochs=-1)


def test_warmup_cosine_schedule_sets_every_step_in_a_trainer(tmp_path) -> None:
    trace = _LrTrace()
    _trainer(tmp_path, [WarmupCosineSchedule(warmup_epochs=1), trace], epochs=3).fit(
        _module(), datamodule=_DataModule()
    )
    steps = 12  # 4 batches per epoch, 3 epochs
    assert trace.lrs == pytest.approx([0.1 * warmup_cosine_factor(s, steps, 4) for s in range(steps)])


def test_cubic_sparsity_schedule() -> None:
    assert cubic_sparsity(5, 0.9, 10, 110) == 0.0
    assert cubic_sparsity(60, 0.9, 10, 110) == pytest.approx(0.9 - 0.9 * 0.5**3)
    assert cubic_sparsity(500, 0.9, 10, 110) == pytest.approx(0.9)
    with pytest.raises(ValueError, match="final"):
        cubic_sparsity(0, 1.0, 0, 1)
    with pytest.raises(ValueError, match="end"):
        cubic_sparsity(0, 0.5, 3, 3)


def test_gradual_prune_reaches_the_final_sparsity_and_keeps_the_mask(tmp_path) -> None:
    gmp = GradualMagnitudePrune(0.75, start_epoch=1, end_fraction=0.5, updates_per_epoch=2, include="linear")
    module = _module()
    _trainer(tmp_path, [gmp], epochs=4).fit(module, datamodule=_DataModule())
    weights = [m.weight for m in module.net if isinstance(m, torch.nn.Linear)]
    flat = torch.cat([w.detach().flatten() for w in weights])
    assert float((flat == 0).float().mean()) == pytest.approx(0.75, abs=0.01)  # global: layers differ
    assert len({round(float((w == 0).float().mean()), 3) for w in weights}) > 1
    with pytest.raises(ValueError, match="end_fraction"):
        GradualMagnitudePrune(0.5, end_fraction=0.0)
    with pytest.raises(ValueError, match="updates_per_epoch"):
        GradualMagnitudePrune(0.5, updates_per_epoch=0)


def test_sweep_test_scores_the_test_loader(tmp_path) -> None:
    prune = MagnitudePrune(include="linear", sweep=[0.0, 0.05], sweep_test=True, filename="p.json")
    module, data = _module(), _DataModule()
    _trainer(tmp_path, [prune]).fit(module, datamodule=data)
    with torch.no_grad():
        x, y = data.test_ds.tensors
        expected = float((module(x).argmax(-1) == y).float().mean())
        xv, yv = data.ds.tensors
        expected_val = float((module(xv).argmax(-1) == yv).float().mean())
    assert prune.sweep_results[0]["test_score"] == pytest.approx(expected)
    assert prune.sweep_results[0]["score"] == pytest.approx(expected_val)
    with pytest.raises(ValueError, match="sweep_test"):
        MagnitudePrune(sweep=[0.0], sweep_test=True, evaluate=None)


def test_label_smoothing_enters_the_training_loss_only() -> None:
    module = _module(label_smoothing=0.2)
    x, y = torch.randn(8, 6), torch.randint(0, 2, (8,))
    loss = module.training_step((x, y), 0)
    assert float(loss) == pytest.approx(float(F.cross_entropy(module(x), y, label_smoothing=0.2)), rel=1e-6)
    with pytest.raises(ValueError, match="label_smoothing"):
        _module(label_smoothing=1.0)
    with pytest.raises(TypeError, match="label_smoothing"):
        _module(label_smoothing="0.1")


@pytest.mark.parametrize(
    ("factory", "plain"),
    [
        (functools.partial(ReWASGD, lr=0.1, weight_decay=1e-3), {"weight_decay": 0.0, "reparameterize": False}),
        (functools.partial(L1SGD, lr=0.1, l1=1e-3, weight_decay=1e-4), {"weight_decay": 0.0, "l1": 0.0}),
        (functools.partial(torch.optim.SGD, lr=0.1, weight_decay=1e-4), {"weight_decay": 0.0}),
    ],
)
def test_plain_biases_get_their_own_group(factory, plain: dict) -> None:
    module = ClassifierModule(MLP(4, 2, hidden=[5, 3]), num_classes=2, optimizer=factory, plain_biases=True)
    optimizer = module.configure_optimizers()
    weights, biases = optimizer.param_groups
    assert [p.dim() for p in weights["params"]] == [2, 2, 2]
    assert [p.dim() for p in biases["params"]] == [1, 1, 1]
    assert {k: biases[k] for k in plain} == plain
    assert weights["weight_decay"] == factory.keywords["weight_decay"]


def test_mlp_widths_and_flatten() -> None:
    net = MLP(12, 3, hidden=[7, 5], flatten=True)
    linears = [m for m in net if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(12, 7), (7, 5), (5, 3)]
    assert net(torch.zeros(2, 1, 3, 4)).shape == (2, 3)
    assert len(MLP(3, 2, hidden=4)) == 2 * 2 + 1  # the old default: two hidden layers
    with pytest.raises(ValueError, match="depth"):
        MLP(3, 2, hidden=[4, 4], depth=3)
    with pytest.raises(ValueError, match="hidden"):
        MLP(3, 2, hidden=[4, 0])
