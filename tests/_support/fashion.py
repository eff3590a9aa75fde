"""Tiny FashionMNIST-shaped IDX files (random pixels, labels cycling through 0-9) for data-module tests."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

__all__ = ["write_fashion_idx"]


def _write_idx(path: Path, array: np.ndarray) -> None:
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def write_fashion_idx(root: Path, num_train: int, num_test: int, seed: int = 0) -> Path:
    """Write ``train-*`` and ``t10k-*`` image / label IDX files under ``root``; return ``root``."""
    rng = np.random.default_rng(seed)
    for prefix, n in (("train", num_train), ("t10k", num_test)):
        _write_idx(root / f"{prefix}-images-idx3-ubyte.gz", rng.integers(0, 256, size=(n, 28, 28)))
        _write_idx(root / f"{prefix}-labels-idx1-ubyte.gz", np.arange(n) % 10)
    return root
