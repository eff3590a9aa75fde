"""Residual MLP transfer backbone: skip connections, per-block features, seeded pretraining, cached features."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
import torch

from lightning_icml26.data import FashionResidualFeatures, ResidualMLP, pretrain_residual_mlp
from lightning_icml26.data.fashion_residual import ResidualBlock
from lightning_icml26.modules.probe import LayerFeatureExtractor


def _write_idx(path: Path, array: np.ndarray) -> None:
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


@pytest.fixture
def tiny_root(tmp_path: Path) -> Path:
    """FashionMNIST-shaped IDX files: 200 training and 60 test images, labels cycling through 0-9."""
    rng = np.random.default_rng(0)
    for prefix, n in (("train", 200), ("t10k", 60)):
        _write_idx(tmp_path / f"{prefix}-images-idx3-ubyte.gz", rng.integers(0, 256, size=(n, 28, 28)))
        _write_idx(tmp_path / f"{prefix}-labels-idx1-ubyte.gz", np.arange(n) % 10)
    return tmp_path


def test_block_is_input_plus_branch():
    torch.manual_seed(0)
    block = ResidualBlock(8, 16)
    x = torch.randn(5, 8)
    torch.testing.assert_close(block(x), x + block.branch(x))
    # the skip connection carries the input: with a zero branch the block is the identity
    torch.nn.init.zeros_(block.branch[-1].weight)
    torch.nn.init.zeros_(block.branch[-1].bias)
    torch.testing.assert_close(block(x), x)


def test_layer_outputs_are_the_stream_after_every_block():
    torch.manual_seed(0)
    net = ResidualMLP(12, 8, depth=4, num_classes=3)
    x = torch.randn(6, 12)
    feats = net.layer_outputs(x)
    assert feats.shape == (6, 4, 8)
    h = net.stem(x)  # hand recomputation, block by block
    for i, block in enumerate(net.blocks):
        h = h + block.branch(h)
        torch.testing.assert_close(feats[:, i], h)
    torch.testing.assert_close(net(x), net.head(net.norm(h)))
    # forward hooks on the named blocks (how MultiLayerProbe fine-tunes it) see the same features
    hooked = LayerFeatureExtractor(net, layer_names=net.layer_names)(x)
    torch.testing.assert_close(hooked, feats)


def test_bad_sizes_raise():
    with pytest.raises(ValueError, match="depth, width and expansion"):
        ResidualMLP(4, 8, depth=0)
    with pytest.raises(ValueError, match="pretrain_epochs"):
        FashionResidualFeatures(pretrain_epochs=0)


def test_pretraining_is_seeded_and_learns(tiny_root: Path):
    a, acc_a = pretrain_residual_mlp(depth=2, width=16, epochs=2, seed=3, root=str(tiny_root))
    b, acc_b = pretrain_residual_mlp(depth=2, width=16, epochs=2, seed=3, root=str(tiny_root))
    c, _ = pretrain_residual_mlp(depth=2, width=16, epochs=2, seed=4, root=str(tiny_root))
    for (name, pa), pb in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        torch.testing.assert_close(pa, pb, msg=name)
    assert not torch.equal(a.stem.weight, c.stem.weight)
    assert acc_a == acc_b
    assert 0.0 <= acc_a <= 100.0
    assert a(torch.zeros(2, 784)).shape == (2, 5)


def test_feature_module_caches_and_resplits(tiny_root: Path, tmp_path: Path):
    kwargs = {
        "depth": 3,
        "width": 16,
        "pretrain_epochs": 1,
        "per_class": 12,
        "test_per_class": 4,
        "calibration_size": 10,
    }
    dm = FashionResidualFeatures(**kwargs, cache_dir=str(tmp_path / "cache"), root=str(tiny_root))
    dm.setup()
    assert (dm.num_layers, dm.embed_dim, dm.num_classes) == (3, 16, 5)
    # 20 training-split images per target class exist; 12 are drawn, 3 of them (25 %) go to validation
    assert [len(dm.splits[s]) for s in ("train", "val", "test")] == [45, 15, 20]
    # the stored features are the pretrained backbone's per-block outputs of the stored pixels
    x, y = dm.inputs("train")
    feats, labels = dm.subset("train")
    with torch.no_grad():
        torch.testing.assert_close(dm.backbone().layer_outputs(x), feats)
    assert torch.equal(y, labels)
    # a second module reads the cache: same features, same weights
    again = FashionResidualFeatures(**kwargs, cache_dir=str(tmp_path / "cache"), root=str(tiny_root))
    again.setup()
    assert again.features is not None
    assert dm.features is not None
    assert torch.equal(again.features, dm.features)
    assert again.source_accuracy == dm.source_accuracy
    # a new seed redraws train / val but keeps the features and the test split
    test_before, train_before = dm.splits["test"].clone(), dm.splits["train"].clone()
    dm.resplit(7)
    assert torch.equal(dm.splits["test"], test_before)
    assert not torch.equal(dm.splits["train"], train_before)
    assert torch.equal(again.features, dm.features)
    with pytest.raises(ValueError, match="name must be one of"):
        dm.inputs("calib")
