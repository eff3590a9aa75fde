"""CIFAR-10 from the standard ``cifar-10-batches-py`` pickles at a user-given path (nothing is downloaded)."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset, TensorDataset

from lightning_icml26.data._splits import SplitsDataModule

__all__ = ["CIFAR10DataModule", "load_cifar10"]

_MEAN = torch.tensor([0.4914, 0.4822, 0.4465]).view(1, 3, 1, 1)
_STD = torch.tensor([0.2470, 0.2435, 0.2616]).view(1, 3, 1, 1)
_TRAIN_FILES = [f"data_batch_{i}" for i in range(1, 6)]


def _read_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with open(path, "rb") as f:
        entry = pickle.load(f, encoding="bytes")  # the user's own data files
    data = entry.get(b"data", entry.get("data"))
    labels = entry.get(b"labels", entry.get("labels"))
    if data is None or labels is None:
        raise ValueError(f"{path} has no 'data' / 'labels' entries: not a cifar-10-batches-py file")
    data = np.asarray(data, dtype=np.uint8)
    if data.ndim != 2 or data.shape[1] != 3072:
        raise ValueError(f"{path}: 'data' must have shape (N, 3072), got {data.shape}")
    return data.reshape(-1, 3, 32, 32), np.asarray(labels, dtype=np.int64)


def load_cifar10(root: str | Path, train: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Images ``(N, 3, 32, 32)`` uint8 and labels ``(N,)`` int64 from a ``cifar-10-batches-py`` folder.

    Args:
        root: the folder holding ``data_batch_1`` .. ``data_batch_5`` and ``test_batch``.
        train: the five training batches (``True``) or ``test_batch``.

    Raises:
        FileNotFoundError: if a file is missing (the message says where to get the data).

    Example:
        >>> import os, pickle, tempfile
        >>> root = tempfile.mkdtemp()
        >>> with open(os.path.join(root, "test_batch"), "wb") as f:
        ...     pickle.dump({b"data": [[0] * 3072] * 2, b"labels": [3, 5]}, f)
        >>> x, y = load_cifar10(root, train=False)
        >>> tuple(x.shape), y.tolist()
        ((2, 3, 32, 32), [3, 5])
    """
    root = Path(root)
    names = _TRAIN_FILES if train else ["test_batch"]
    missing = [str(root / n) for n in names if not (root / n).is_file()]
    if missing:
        raise FileNotFoundError(
            f"CIFAR-10 files not found: {missing}; download and unpack the python version "
            "(cifar-10-python.tar.gz from https://www.cs.toronto.edu/~kriz/cifar.html) yourself and pass root= "
            "the cifar-10-batches-py folder (this project never downloads at run time)"
        )
    parts = [_read_batch(root / n) for n in names]
    x = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    return torch.from_numpy(x), torch.from_numpy(y)


class _Augmented(Dataset):
    """Random crop (padding 4) and horizontal flip, pure torch, per sample."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, seed: int) -> None:
        self.x, self.y = x, y
        self.generator = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        img = torch.nn.functional.pad(self.x[i], (4, 4, 4, 4))
        dx, dy = torch.randint(0, 9, (2,), generator=self.generator).tolist()
        img = img[:, dy : dy + 32, dx : dx + 32]
        if torch.rand((), generator=self.generator) < 0.5:
            img = img.flip(-1)
        return img, self.y[i]


class CIFAR10DataModule(SplitsDataModule):
    """CIFAR-10 loaders from a ``cifar-10-batches-py`` folder: a validation split, optional augmentation.

    Args:
        root: the ``cifar-10-batches-py`` folder.
        num_train: training images (after the validation split); ``None``: all.
        num_val: validation images held out of the 50000 training images.
        batch_size: loader batch size.
        augment: random crop and flip on the training set.
        seed: seed of the split and the augmentation.
        num_workers: loader workers.

    Example:
        >>> dm = CIFAR10DataModule("/path/to/cifar-10-batches-py", num_val=1000)
        >>> dm.num_classes
        10
    """

    num_classes = 10
    in_channels = 3

    def __init__(
        self,
        root: str,
        num_train: int | None = None,
        num_val: int = 5000,
        batch_size: int = 128,
        augment: bool = True,
        seed: int = 0,
        num_workers: int = 0,
    ) -> None:
        super().__init__()
        if num_val < 0:
            raise ValueError(f"num_val must be non-negative, got {num_val}")
        if num_train is not None and num_train < 1:
            raise ValueError(f"num_train must be positive or None, got {num_train}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size}")
        self.save_hyperparameters()

    @staticmethod
    def _normalise(x: torch.Tensor) -> torch.Tensor:
        return (x.float() / 255.0 - _MEAN) / _STD

    def setup(self, stage: str | None = None) -> None:
        """Read the pickles and build the splits."""
        if self._splits:
            return
        hp: Any = self.hparams
        x, y = load_cifar10(hp.root, train=True)
        if hp.num_val >= len(y):
            raise ValueError(f"num_val={hp.num_val} leaves no training images out of {len(y)}")
        perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(hp.seed))
        val_idx, train_idx = perm[: hp.num_val], perm[hp.num_val :]
        if hp.num_train is not None:
            train_idx = train_idx[: hp.num_train]
        x = self._normalise(x)
        xtr, ytr = x[train_idx], y[train_idx]
        self._splits["train"] = _Augmented(xtr, ytr, hp.seed) if hp.augment else TensorDataset(xtr, ytr)
        self._splits["val"] = TensorDataset(x[val_idx], y[val_idx])
        xt, yt = load_cifar10(hp.root, train=False)
        self._splits["test"] = TensorDataset(self._normalise(xt), yt)
