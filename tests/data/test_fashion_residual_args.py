"""FashionResidualFeatures forwards the parent's arguments: same defaults, its own ones, clear errors."""

from __future__ import annotations

import inspect

import pytest

from lightning_icml26.data import FashionResidualFeatures, FashionTransferFeatures
from lightning_icml26.data.fashion_mnist import FASHION_MNIST_ROOT


def test_defaults_and_forwarded_arguments() -> None:
    dm = FashionResidualFeatures()
    parent = inspect.signature(FashionTransferFeatures.__init__).parameters
    for name in ("width", "val_fraction", "calibration_size", "batch_size", "seed", "cache_dir", "root"):
        assert getattr(dm, name) == parent[name].default, name
    assert (dm.depth, dm.pretrain_epochs, dm.pretrain_seed, dm.per_class, dm.test_per_class) == (12, 8, 0, 1200, 1000)
    assert dm.num_source == 0
    assert dm.pretrain_source is None  # pretraining on every source image
    assert dm.root == FASHION_MNIST_ROOT
    dm = FashionResidualFeatures(depth=3, width=16, batch_size=7, seed=5, val_fraction=0.5, calibration_size=9)
    assert (dm.depth, dm.width, dm.batch_size, dm.seed, dm.val_fraction, dm.calibration_size) == (3, 16, 7, 5, 0.5, 9)


def test_bad_arguments_raise() -> None:
    with pytest.raises(TypeError, match="num_source=5"):
        FashionResidualFeatures(num_source=5)
    with pytest.raises(TypeError, match="widht"):
        FashionResidualFeatures(widht=16)
    with pytest.raises(TypeError):
        FashionResidualFeatures(12, 128)  # type: ignore[misc]  # only depth is positional
    with pytest.raises(ValueError, match="per_class"):
        FashionResidualFeatures(per_class=2)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match=f"pretrain_source must be None or a positive int, got {bad!r}"):
            FashionResidualFeatures(pretrain_source=bad)  # type: ignore[arg-type]
