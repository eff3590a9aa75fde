"""A shuffling sampler whose order depends only on (seed, epoch), so resumed runs see the same batches."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.utils.data import Sampler

__all__ = ["EpochSeededSampler"]


class EpochSeededSampler(Sampler[int]):
    """Random permutation of ``range(n)`` drawn from ``seed`` and the epoch (Lightning calls ``set_epoch``).

    Example:
        >>> s = EpochSeededSampler(4, seed=0)
        >>> a = list(s); s.set_epoch(0); a == list(s)
        True
    """

    def __init__(self, n: int, seed: int = 0) -> None:
        self.n, self.seed, self.epoch = n, seed, 0

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch whose permutation is served next."""
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        return iter(torch.randperm(self.n, generator=gen).tolist())

    def __len__(self) -> int:
        return self.n
