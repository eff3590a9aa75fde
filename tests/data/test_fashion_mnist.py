"""FashionMNIST IDX reader and data module: tiny IDX files written here, plus the installed Debian data if present."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
import torch

from lightning_icml26.data import FashionMNISTDataModule, load_fashion_mnist, read_idx
from lightning_icml26.data.fashion_mnist import FASHION_MNIST_ROOT


def _write_idx(path: Path, array: np.ndarray) -> None:
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


@pytest.fixture
def tiny_root(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    for prefix, n in (("train", 40), ("t10k", 12)):
        _write_idx(tmp_path / f"{prefix}-images-idx3-ubyte.gz", rng.integers(0, 256, size=(n, 28, 28)))
        _write_idx(tmp_path / f"{prefix}-labels-idx1-ubyte.gz", np.arange(n) % 10)
    return tmp_path


def test_read_idx_round_trip(tiny_root: Path) -> None:
    labels = read_idx(tiny_root / "train-labels-idx1-ubyte.gz")
    assert labels.tolist() == (np.arange(40) % 10).tolist()
    images = read_idx(tiny_root / "t10k-images-idx3-ubyte.gz")
    assert images.shape == (12, 28, 28)
    assert images.dtype == np.uint8


def test_data_module_splits_and_normalisation(tiny_root: Path) -> None:
    dm = FashionMNISTDataModule(root=str(tiny_root), num_train=20, num_val=10, num_test=5, batch_size=4, pad_to_32=True)
    dm.setup()
    x, y = next(iter(dm.train_dataloader()))
    assert tuple(x.shape) == (4, 1, 32, 32)
    assert len(dm.train_dataloader().dataset) == 20
    assert len(dm.val_dataloader().dataset) == 10
    assert len(dm.test_dataloader().dataset) == 5
    raw, labels = load_fashion_mnist(tiny_root, "test")
    xt, yt = dm._splits["test"].tensors
    expected = (raw[:5].float() / 255 - 0.2860) / 0.3530
    torch.testing.assert_close(xt[:, 0, 2:30, 2:30], expected)
    torch.testing.assert_close(xt[:, 0, 0, 0], torch.full((5,), -0.2860 / 0.3530))
    assert torch.equal(yt, labels[:5])
    # train and validation are disjoint pieces of the training file
    train_x = dm._splits["train"].tensors[0]
    val_x = dm._splits["val"].tensors[0]
    assert not any(torch.equal(a, b) for a in train_x for b in val_x)


def test_missing_data_says_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="apt-get install dataset-fashion-mnist"):
        load_fashion_mnist(tmp_path / "nowhere")
    dm = FashionMNISTDataModule(root=str(tmp_path / "nowhere"))  # cheap constructor: nothing read yet
    with pytest.raises(FileNotFoundError, match="make data"):
        dm.setup()


def test_bad_arguments(tiny_root: Path) -> None:
    with pytest.raises(ValueError, match="num_val must be non-negative"):
        FashionMNISTDataModule(num_val=-1)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        FashionMNISTDataModule(batch_size=0)
    with pytest.raises(ValueError, match="leaves no training images"):
        FashionMNISTDataModule(root=str(tiny_root), num_val=40).setup()
    with pytest.raises(ValueError, match="split must be one of"):
        load_fashion_mnist(tiny_root, "validation")


@pytest.mark.skipif(not Path(FASHION_MNIST_ROOT).is_dir(), reason="needs apt-get install dataset-fashion-mnist")
def test_installed_fashion_mnist() -> None:
    x, y = load_fashion_mnist(split="test")
    assert tuple(x.shape) == (10000, 28, 28)
    assert torch.bincount(y).tolist() == [1000] * 10
