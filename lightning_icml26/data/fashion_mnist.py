"""FashionMNIST from the Debian package ``dataset-fashion-mnist`` (gzipped IDX files, read with numpy).

Install the data with ``apt-get install dataset-fashion-mnist`` (or ``make data``); nothing is downloaded
at run time.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import TensorDataset

from lightning_icml26.data._splits import SplitsDataModule

__all__ = ["FASHION_MNIST_ROOT", "FashionMNISTDataModule", "load_fashion_mnist", "read_idx"]

FASHION_MNIST_ROOT = "/usr/share/datasets/fashion-mnist"
_FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
_MEAN, _STD = 0.2860, 0.3530
_INSTALL_HINT = (
    "install the Debian package with `apt-get install dataset-fashion-mnist` (or run `make data`), "
    "or pass root= a folder holding the four *-ubyte.gz IDX files"
)


def read_idx(path: str | Path) -> np.ndarray:
    """Read a (gzipped or plain) IDX file into a numpy array of its declared shape.

    Args:
        path: the file; names ending in ``.gz`` are decompressed.

    Returns:
        The array (uint8 for the FashionMNIST files).

    Example:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "x.idx")
        >>> _ = open(path, "wb").write(bytes([0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 1, 7, 9]))
        >>> read_idx(path).tolist()
        [[7], [9]]
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 8:
        raise ValueError(f"{path} is not an unsigned-byte IDX file (magic {raw[:4]!r})")
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_fashion_mnist(
    root: str | Path = FASHION_MNIST_ROOT, split: str = "train"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Images ``(N, 28, 28)`` uint8 and labels ``(N,)`` int64 of one split.

    Args:
        root: folder of the IDX files.
        split: ``"train"`` (60000) or ``"test"`` (10000).

    Raises:
        FileNotFoundError: if the files are missing (the message says how to install them).

    Example:
        >>> import os
        >>> if os.path.isdir(FASHION_MNIST_ROOT):
        ...     x, y = load_fashion_mnist(split="test"); assert x.shape == (10000, 28, 28)
    """
    if split not in _FILES:
        raise ValueError(f"split must be one of {sorted(_FILES)}, got {split!r}")
    paths = [Path(root) / name for name in _FILES[split]]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"FashionMNIST files not found: {missing}; {_INSTALL_HINT}")
    images, labels = (read_idx(p) for p in paths)
    return torch.from_numpy(images.copy()), torch.from_numpy(labels.astype(np.int64))


class FashionMNISTDataModule(SplitsDataModule):
    """FashionMNIST loaders: a seeded subset of the training set, a validation split from it, the test set.

    Images are scaled to ``[0, 1]``, normalised with the training mean / std (0.2860 / 0.3530) and shaped
    ``(1, 28, 28)``, or ``(1, 32, 32)`` with ``pad_to_32`` (zero padding, CIFAR-sized).

    Args:
        root: folder of the IDX files.
        num_train: training images drawn from the 60000 (after removing the validation ones); ``None``: all.
        num_val: validation images held out of the training set.
        num_test: test images (the first ``num_test``); ``None``: all 10000.
        batch_size: loader batch size.
        pad_to_32: pad to 32x32.
        seed: seed of the subset / split permutation.
        num_workers: loader workers.

    Example:
        >>> dm = FashionMNISTDataModule(num_train=100, num_val=50, num_test=20, batch_size=10)
        >>> dm.num_classes, dm.in_channels
        (10, 1)
    """

    num_classes = 10
    in_channels = 1

    def __init__(
        self,
        root: str = FASHION_MNIST_ROOT,
        num_train: int | None = None,
        num_val: int = 5000,
        num_test: int | None = None,
        batch_size: int = 128,
        pad_to_32: bool = False,
        seed: int = 0,
        num_workers: int = 0,
    ) -> None:
        super().__init__()
        if num_val < 0:
            raise ValueError(f"num_val must be non-negative, got {num_val}")
        if num_train is not None and num_train < 1:
            raise ValueError(f"num_train must be a positive integer or None, got {num_train}")
        if num_test is not None and num_test < 1:
            raise ValueError(f"num_test must be a positive integer or None, got {num_test}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size}")
        self.save_hyperparameters()

    def _prepare(self, images: torch.Tensor) -> torch.Tensor:
        x = (images.float() / 255.0 - _MEAN) / _STD
        x = x.unsqueeze(1)
        if self.hparams["pad_to_32"]:
            x = torch.nn.functional.pad(x, (2, 2, 2, 2), value=-_MEAN / _STD)
        return x

    def setup(self, stage: str | None = None) -> None:
        """Read the files and build the splits (deterministic given ``seed``)."""
        if self._splits:
            return
        hp: Any = self.hparams
        x, y = load_fashion_mnist(hp.root, "train")
        if hp.num_val >= len(y):
            raise ValueError(f"num_val={hp.num_val} leaves no training images out of {len(y)}")
        perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(hp.seed))
        val_idx = perm[: hp.num_val]
        train_idx = perm[hp.num_val :]
        if hp.num_train is not None:
            train_idx = train_idx[: hp.num_train]
        self._splits["train"] = TensorDataset(self._prepare(x[train_idx]), y[train_idx])
        self._splits["val"] = TensorDataset(self._prepare(x[val_idx]), y[val_idx])
        xt, yt = load_fashion_mnist(hp.root, "test")
        if hp.num_test is not None:
            xt, yt = xt[: hp.num_test], yt[: hp.num_test]
        self._splits["test"] = TensorDataset(self._prepare(xt), yt)
