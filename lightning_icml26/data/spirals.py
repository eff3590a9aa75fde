"""Interleaved spirals: a generated K-class classification set that needs a non-linear model."""

from __future__ import annotations

import math

import torch
from torch.utils.data import TensorDataset

from lightning_icml26.data._splits import SplitsDataModule

__all__ = ["SpiralsDataModule", "make_spirals"]


def make_spirals(
    num_samples: int, num_classes: int = 3, noise: float = 0.2, turns: float = 1.5, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw points from ``num_classes`` interleaved 2-D spirals.

    Class ``k`` follows the arm ``r * (cos(t + 2 pi k / K), sin(t + 2 pi k / K))`` with ``r`` uniform in
    ``[0, 1]`` and ``t = 2 pi * turns * r``; Gaussian noise of scale ``noise * 0.1`` is added.

    Args:
        num_samples: total number of points (split as evenly as possible over the classes).
        num_classes: number of spiral arms, at least 2.
        noise: noise level, non-negative.
        turns: number of turns of each arm, positive.
        seed: seed of the private generator (the global RNG is left untouched).

    Returns:
        ``(x, y)``: float32 features ``(num_samples, 2)`` and int64 labels ``(num_samples,)``.

    Raises:
        ValueError: if an argument is out of range.

    Example:
        >>> x, y = make_spirals(9, num_classes=3, seed=1)
        >>> tuple(x.shape), y.tolist()
        ((9, 2), [0, 0, 0, 1, 1, 1, 2, 2, 2])
    """
    if num_samples < num_classes:
        raise ValueError(f"num_samples must be at least num_classes={num_classes}, got {num_samples}")
    if num_classes < 2:
        raise ValueError(f"num_classes must be at least 2, got {num_classes}")
    if noise < 0:
        raise ValueError(f"noise must be non-negative, got {noise}")
    if turns <= 0:
        raise ValueError(f"turns must be positive, got {turns}")
    generator = torch.Generator().manual_seed(seed)
    labels = torch.arange(num_samples) * num_classes // num_samples
    radius = torch.rand(num_samples, generator=generator)
    angle = 2 * math.pi * turns * radius + 2 * math.pi * labels / num_classes
    points = torch.stack([radius * torch.cos(angle), radius * torch.sin(angle)], dim=1)
    points = points + 0.1 * noise * torch.randn(num_samples, 2, generator=generator)
    return points.float(), labels


class SpiralsDataModule(SplitsDataModule):
    """Train / validation / test loaders over :func:`make_spirals` data.

    Args:
        num_train: training points.
        num_val: validation points.
        num_test: test points.
        num_classes: number of spiral arms.
        noise: noise level of :func:`make_spirals`.
        batch_size: loader batch size.
        seed: data seed; the three splits use ``seed``, ``seed + 1`` and ``seed + 2``.

    Example:
        >>> dm = SpiralsDataModule(num_train=30, num_val=6, num_test=6, batch_size=10)
        >>> dm.setup("fit")
        >>> x, y = next(iter(dm.train_dataloader()))
        >>> tuple(x.shape), dm.num_features, dm.num_classes
        ((10, 2), 2, 3)
    """

    num_features = 2

    def __init__(
        self,
        num_train: int = 3000,
        num_val: int = 600,
        num_test: int = 600,
        num_classes: int = 3,
        noise: float = 0.2,
        batch_size: int = 64,
        seed: int = 0,
    ) -> None:
        super().__init__()
        for name, value in (("num_train", num_train), ("num_val", num_val), ("num_test", num_test)):
            if value < num_classes:
                raise ValueError(f"{name} must be at least num_classes={num_classes}, got {value}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size}")
        self.save_hyperparameters()
        self.num_classes = num_classes

    def setup(self, stage: str | None = None) -> None:
        """Generate the three splits (deterministic, cheap; every rank makes the same data)."""
        hp = self.hparams
        sizes = {"train": hp["num_train"], "val": hp["num_val"], "test": hp["num_test"]}
        for offset, (split, size) in enumerate(sizes.items()):
            x, y = make_spirals(size, hp["num_classes"], hp["noise"], seed=hp["seed"] + offset)
            self._splits[split] = TensorDataset(x, y)
