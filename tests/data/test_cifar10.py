"""CIFAR-10 pickle reader and data module on tiny ``cifar-10-batches-py`` files written by the test."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from lightning_icml26.data import CIFAR10DataModule, load_cifar10


@pytest.fixture
def cifar_root(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    root = tmp_path / "cifar-10-batches-py"
    root.mkdir()
    for name, n in [(f"data_batch_{i}", 4) for i in range(1, 6)] + [("test_batch", 3)]:
        data = rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)
        labels = rng.integers(0, 10, size=n).tolist()
        with open(root / name, "wb") as f:
            pickle.dump({b"batch_label": name.encode(), b"data": data, b"labels": labels}, f)
    return root


def test_layout_is_channel_major(cifar_root: Path) -> None:
    x, y = load_cifar10(cifar_root, train=False)
    with open(cifar_root / "test_batch", "rb") as f:
        raw = pickle.load(f, encoding="bytes")
    assert tuple(x.shape) == (3, 3, 32, 32)
    # row = 1024 red values, then green, then blue, each row-major 32 x 32
    assert int(x[1, 2, 5, 7]) == int(raw[b"data"][1][2 * 1024 + 5 * 32 + 7])
    assert y.tolist() == raw[b"labels"]
    xt, _ = load_cifar10(cifar_root, train=True)
    assert len(xt) == 20


def test_data_module(cifar_root: Path) -> None:
    dm = CIFAR10DataModule(str(cifar_root), num_val=5, num_train=10, batch_size=4, augment=True)
    dm.setup()
    x, y = next(iter(dm.train_dataloader()))
    assert tuple(x.shape) == (4, 3, 32, 32)
    assert len(dm.train_dataloader().dataset) == 10
    assert len(dm.val_dataloader().dataset) == 5
    xt, _ = dm._splits["test"].tensors
    raw, _ = load_cifar10(cifar_root, train=False)
    mean = torch.tensor([0.4914, 0.4822, 0.4465]).view(1, 3, 1, 1)
    std = torch.tensor([0.2470, 0.2435, 0.2616]).view(1, 3, 1, 1)
    torch.testing.assert_close(xt, (raw.float() / 255 - mean) / std)


def test_missing_and_malformed_files(tmp_path: Path, cifar_root: Path) -> None:
    with pytest.raises(FileNotFoundError, match="cifar-10-batches-py folder"):
        load_cifar10(tmp_path / "nothing")
    with open(cifar_root / "test_batch", "wb") as f:
        pickle.dump({b"data": np.zeros((2, 100), dtype=np.uint8), b"labels": [0, 1]}, f)
    with pytest.raises(ValueError, match=r"'data' must have shape \(N, 3072\)"):
        load_cifar10(cifar_root, train=False)
    with pytest.raises(ValueError, match="num_val must be non-negative"):
        CIFAR10DataModule(str(cifar_root), num_val=-1)
