"""Every SplitsDataModule shuffles by (seed, epoch): the order ignores torch's global RNG, under DDP each sample is
served once per epoch on exactly one rank, and a FashionMNIST run stopped and resumed equals an uninterrupted one."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import torch
from lightning.pytorch import LightningDataModule, LightningModule, Trainer
from torch import nn
from torch.utils.data import TensorDataset

from lightning_icml26.data import (
    FairTabularDataModule,
    FashionMNISTDataModule,
    ForecastDataModule,
    LayerFeatureDataModule,
    SparseRegressionDataModule,
    SpiralsDataModule,
)
from lightning_icml26.data._sampling import EpochSeededSampler
from lightning_icml26.data._splits import SplitsDataModule
from lightning_icml26.modules import MLP, ClassifierModule
from tests._support.distributed import run_on_ranks
from tests._support.fashion import write_fashion_idx
from tests._support.resume import assert_same_weights, stop_and_resume

_MODULES: dict[str, Callable[[], LightningDataModule]] = {
    "spirals": lambda: SpiralsDataModule(num_train=30, num_val=6, num_test=6, batch_size=7, seed=3),
    "sparse_regression": lambda: SparseRegressionDataModule(
        num_train=20, num_val=10, num_features=8, num_nonzero=2, batch_size=6, seed=3
    ),
    "fair_tabular": lambda: FairTabularDataModule("gaussian", {"num_samples": 60}, batch_size=8, seed=3),
    "forecasts": lambda: ForecastDataModule("synthetic", {"num_questions": 60}, batch_size=8, seed=3),
    "layer_features": lambda: LayerFeatureDataModule(
        torch.randn(40, 2, 3, generator=torch.Generator().manual_seed(0)),
        torch.arange(40) % 4,
        batch_size=8,
        calibration_size=10,
        seed=3,
    ),  # fmt: skip
}


def _epoch_order(dm: LightningDataModule, epoch: int) -> list[tuple[float, ...]]:
    loader = dm.train_dataloader()
    loader.sampler.set_epoch(epoch)  # type: ignore[attr-defined]
    return [tuple(row.tolist()) for batch in loader for row in batch[0].reshape(len(batch[0]), -1)]


@pytest.mark.parametrize("name", sorted(_MODULES))
def test_training_order_depends_on_seed_and_epoch_only(name: str) -> None:
    dm = _MODULES[name]()
    dm.setup("fit")
    assert isinstance(dm.train_dataloader().sampler, EpochSeededSampler)
    torch.manual_seed(0)
    first = _epoch_order(dm, 1)
    torch.manual_seed(123)  # another global RNG state, a fresh data module: the same batches
    again = _MODULES[name]()
    again.setup("fit")
    assert _epoch_order(again, 1) == first
    assert _epoch_order(dm, 2) != first  # a new epoch is a new order ...
    assert sorted(_epoch_order(dm, 2)) == sorted(first)  # ... of the same samples


class _Indices(SplitsDataModule):
    """Samples are their own indices 0..n-1, so the test can see which rank got which."""

    def __init__(self, n: int = 10, batch_size: int = 2, seed: int = 5) -> None:
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage: str | None = None) -> None:
        data = TensorDataset(torch.arange(self.hparams["n"], dtype=torch.float32).unsqueeze(1))
        self._splits = {"train": data, "val": data, "test": data}


class _Seen(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.Linear(1, 1)
        self.seen: dict[int, list[int]] = {}

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        self.seen.setdefault(self.current_epoch, []).extend(int(v) for v in batch[0].flatten())
        return self.layer(batch[0]).pow(2).mean()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)


def _ddp_rank(rank: int, world_size: int) -> dict[int, list[int]]:
    os.environ.update({"LOCAL_RANK": str(rank), "NODE_RANK": "0", "WORLD_SIZE": str(world_size), "RANK": str(rank)})
    torch.manual_seed(100 + rank)  # the ranks' global RNGs differ: the shards must not depend on them
    model = _Seen()
    trainer = Trainer(accelerator="cpu", devices=world_size, strategy="ddp", max_epochs=3, logger=False,
                      enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                      num_sanity_val_steps=0, limit_val_batches=0)  # fmt: skip
    trainer.fit(model, datamodule=_Indices())
    return model.seen


@pytest.mark.distributed
@pytest.mark.slow
def test_ddp_ranks_split_each_epoch_and_epochs_differ() -> None:
    seen = run_on_ranks(_ddp_rank, 2)
    orders = []
    for epoch in range(3):
        a, b = seen[0][epoch], seen[1][epoch]
        assert len(a) == len(b) == 5
        assert sorted(a + b) == list(range(10))  # every sample once per epoch, on one rank
        orders.append(a + b)
    assert len({tuple(o) for o in orders}) == 3  # each epoch a new order


def _fashion_run(root: Path, seeded: bool) -> tuple[LightningModule, LightningDataModule]:
    torch.manual_seed(0)
    dm = FashionMNISTDataModule(root=str(root), num_train=40, num_val=10, num_test=10, batch_size=8, seed=1)
    dm.epoch_seeded_shuffle = seeded
    net = nn.Sequential(nn.Flatten(), MLP(784, 10, hidden=16, depth=1))
    return ClassifierModule(net, num_classes=10, optimizer=partial(torch.optim.SGD, lr=0.1, momentum=0.9)), dm


@pytest.mark.parametrize("seeded", [True, False])
def test_fashion_stop_and_resume_equals_uninterrupted(tmp_path: Path, seeded: bool) -> None:
    (tmp_path / "idx").mkdir()
    root = write_fashion_idx(tmp_path / "idx", num_train=60, num_test=12)
    runs = stop_and_resume(partial(_fashion_run, root, seeded), tmp_path, total=3, stop=2)
    assert runs.resumed.global_step == runs.full.global_step == 15 > runs.part.global_step
    assert runs.resumed_losses.keys() == {11, 12, 13, 14, 15}
    third_epoch = {step: runs.full_losses[step] for step in runs.resumed_losses}
    if seeded:
        assert_same_weights(runs.full, runs.resumed)
        assert runs.resumed_losses == pytest.approx(third_epoch, abs=1e-6)
    else:  # the control: with torch's global RNG the resumed third epoch sees other batches
        assert runs.resumed_losses != pytest.approx(third_epoch, abs=1e-6)
    part, full = runs.part.state_dict(), runs.full.state_dict()
    assert any(not torch.equal(part[k], full[k]) for k in full)  # the third epoch moved the weights


def test_opting_out_shuffles_from_the_global_rng() -> None:
    dm: Any = _MODULES["spirals"]()
    dm.epoch_seeded_shuffle = False
    assert not isinstance(dm.train_dataloader().sampler, EpochSeededSampler)
    torch.manual_seed(0)
    a = [b[0] for b in dm.train_dataloader()]
    torch.manual_seed(1)
    b = [b[0] for b in dm.train_dataloader()]
    assert not all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
