"""Stop after 2 epochs, resume to 3: equal to an uninterrupted 3-epoch run (weights and third-epoch losses, 1e-6).

Covers ClassifierModule (with a step scheduler), HumanAICombiner (feature-dependent weight, calibrated buffers),
CausalLMModule (a tiny transformer on shuffled byte chunks) and SparseRegressionModule (ReWA from the
least-squares start). Each run is a few dozen CPU steps.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
import torch
from lightning.pytorch import LightningDataModule, LightningModule

from lightning_icml26.data import ForecastDataModule, SparseRegressionDataModule, SpiralsDataModule
from lightning_icml26.data.text import StdlibTextDataModule
from lightning_icml26.modules import MLP, CausalLMModule, ClassifierModule, HumanAICombiner, SparseRegressionModule
from lightning_icml26.modules.causal_lm import TinyCausalTransformer
from lightning_icml26.optim import ReWASGD
from tests._support.resume import Runs, assert_same_weights, stop_and_resume


def _classifier() -> tuple[LightningModule, LightningDataModule]:
    torch.manual_seed(0)
    dm = SpiralsDataModule(num_train=48, num_val=12, num_test=12, batch_size=8, seed=2)
    model = ClassifierModule(
        MLP(2, 3, hidden=16, depth=2),
        num_classes=3,
        optimizer=partial(torch.optim.AdamW, lr=0.02),
        lr_scheduler=partial(torch.optim.lr_scheduler.StepLR, step_size=1, gamma=0.5),
    )
    return model, dm


def _combiner() -> tuple[LightningModule, LightningDataModule]:
    torch.manual_seed(0)
    kwargs = {"num_questions": 200, "kind": "gaussian", "rho": 0.2, "sigma_ai": 1.0, "seed": 3, "feature_effect": 1.0}
    dm = ForecastDataModule("synthetic", kwargs, fractions=(0.6, 0.2), batch_size=24, seed=0)
    dm.setup("fit")
    model = HumanAICombiner(sigma_ai_range=(0.5, 2.0), loss="squared", feature_dim=dm.num_features, hidden=8)
    return model, dm


def _causal_lm(root: Path) -> tuple[LightningModule, LightningDataModule]:
    torch.manual_seed(0)
    dm = StdlibTextDataModule(seq_len=16, batch_size=4, max_bytes=640, val_fraction=0.2, seed=1, root=str(root))
    net = TinyCausalTransformer(vocab_size=256, hidden_size=16, num_layers=1, num_heads=2)
    return CausalLMModule(net, optimizer=partial(torch.optim.SGD, lr=0.1, momentum=0.9)), dm


def _sparse_regression() -> tuple[LightningModule, LightningDataModule]:
    torch.manual_seed(0)
    dm = SparseRegressionDataModule(num_train=30, num_val=10, num_features=12, num_nonzero=3, batch_size=6, seed=4)
    model = SparseRegressionModule(12, optimizer=partial(ReWASGD, lr=0.05), init="least_squares")
    return model, dm


def _check(runs: Runs) -> None:
    assert runs.resumed.global_step == runs.full.global_step > runs.part.global_step
    third_epoch = sorted(runs.resumed_losses)
    assert third_epoch == [s for s in sorted(runs.full_losses) if s > runs.part.global_step]
    assert [runs.resumed_losses[s] for s in third_epoch] == pytest.approx(
        [runs.full_losses[s] for s in third_epoch], abs=1e-6
    )
    assert_same_weights(runs.full, runs.resumed)
    changed = [not torch.equal(a, b) for a, b in zip(runs.part.parameters(), runs.full.parameters(), strict=True)]
    assert any(changed)  # the third epoch did move the weights


def test_classifier_module(tmp_path: Path) -> None:
    runs = stop_and_resume(_classifier, tmp_path)
    _check(runs)
    # the scheduler resumed too: lr halved once per epoch, three times
    assert runs.resumed.trainer.optimizers[0].param_groups[0]["lr"] == pytest.approx(0.02 / 8)


def test_human_ai_combiner(tmp_path: Path) -> None:
    runs = stop_and_resume(_combiner, tmp_path)
    _check(runs)
    assert bool(runs.resumed.calibrated)
    assert runs.resumed.guaranteed_gain_ == pytest.approx(runs.full.guaranteed_gain_, abs=1e-9)


def test_causal_lm_module(tmp_path: Path) -> None:
    (tmp_path / "text").mkdir()
    (tmp_path / "text" / "a.py").write_text("".join(f"def f{i}(x):\n    return x * {i} + {i * i}\n" for i in range(40)))
    runs = stop_and_resume(partial(_causal_lm, tmp_path / "text"), tmp_path / "runs")
    _check(runs)


def test_sparse_regression_module(tmp_path: Path) -> None:
    runs = stop_and_resume(_sparse_regression, tmp_path)
    _check(runs)
