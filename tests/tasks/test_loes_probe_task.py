"""The LOES probing runner: every head through a Trainer, the LOES head on select_layers' choice, GeoReg share."""

from __future__ import annotations

import gzip
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from lightning_icml26.algorithms import select_layers
from lightning_icml26.data import FashionResidualFeatures
from lightning_icml26.modules import MultiLayerProbe
from lightning_icml26.tasks import LoesProbeConfig, loes_probe_task
from lightning_icml26.tasks.loes_probe import LOES_PROBE_METHODS, georeg_gradient_share


def _write_idx(path: Path, array: np.ndarray) -> None:
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


@pytest.fixture
def easy_root(tmp_path: Path) -> Path:
    """FashionMNIST-shaped IDX files where class ``c`` lights up rows ``2c .. 2c+2``: an easy problem."""
    rng = np.random.default_rng(0)
    for prefix, n in (("train", 400), ("t10k", 100)):
        labels = np.arange(n) % 10
        images = rng.integers(0, 40, size=(n, 28, 28))
        for i, c in enumerate(labels):
            images[i, 2 * c : 2 * c + 3] = 250
        _write_idx(tmp_path / f"{prefix}-images-idx3-ubyte.gz", images)
        _write_idx(tmp_path / f"{prefix}-labels-idx1-ubyte.gz", labels)
    return tmp_path


def _config(root: Path, cache: Path) -> LoesProbeConfig:
    return LoesProbeConfig(
        depth=2, width=16, seeds=(0,), epochs=1, lr=1e-2, k=1, pretrain_epochs=1, per_class=20, test_per_class=10,
        calibration_size=30, batch_size=8, finetune_epochs=1, cache_dir=str(cache), root=str(root),
    )  # fmt: skip


def test_runner_trains_every_head_and_uses_the_loes_choice(easy_root: Path, tmp_path: Path):
    config = _config(easy_root, tmp_path / "cache")
    out = loes_probe_task(replace(config, finetune=True))
    assert set(out["test_acc"]) == set(LOES_PROBE_METHODS)
    assert all(0.0 <= v[0] <= 100.0 for v in out["test_acc"].values())
    assert out["test_acc"]["loes"][0] > 60.0  # chance is 20 %: the classes are easy to tell apart
    assert out["best_single"][0] in range(2)
    # the LOES head's layers are select_layers' choice on the calibration draw of the seed's split
    dm = FashionResidualFeatures(
        depth=2, width=16, pretrain_epochs=1, per_class=20, test_per_class=10, calibration_size=30,
        cache_dir=str(tmp_path / "cache"), root=str(easy_root),
    )  # fmt: skip
    dm.setup()
    dm.resplit(0)
    xc, yc = dm.subset("calibration")
    assert out["loes_layers"] == [list(select_layers(list(xc.transpose(0, 1)), yc, k=1, seed=0).indices)]
    assert len(out["loes_layers"][0]) == 1
    assert all(0.0 <= v[0] <= 100.0 for v in out["finetune"].values())
    assert out["georeg_over_ce_gradient_at_start"][0] > 0.0


def test_config_rejects_bad_settings():
    with pytest.raises(ValueError, match="features"):
        LoesProbeConfig(features="bert")
    with pytest.raises(ValueError, match="epochs"):
        LoesProbeConfig(epochs=0)
    with pytest.raises(ValueError, match="finetune"):
        loes_probe_task(LoesProbeConfig(features="minilm", finetune=True))


def test_gradient_share_is_linear_in_the_weight_and_leaves_no_gradients():
    torch.manual_seed(0)
    probe = MultiLayerProbe(3, 8, layers=[0, 1], adapter_dim=8)
    x, y = torch.randn(30, 2, 8), torch.arange(30) % 3
    one = georeg_gradient_share(probe, x, y, weight=0.1, seed=1)
    two = georeg_gradient_share(probe, x, y, weight=0.2, seed=1)
    assert one > 0
    assert two == pytest.approx(2 * one, rel=1e-5)
    assert all(p.grad is None for p in probe.parameters())
