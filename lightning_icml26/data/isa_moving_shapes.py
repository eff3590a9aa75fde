"""Generated moving-shapes clips for in-context video editing (the ``isa_edit_toy`` recipe).

A *source* clip shows two coloured squares moving in straight lines (wrapping at the borders) on black. The
edit recolours the first square to a colour that appears only in the *context* clip, which shows a square
of the new colour on the same trajectory (the aligned reference an in-context editor reads). The *target*
is the source with that square recoloured. Clips are ``(frames, 3, size, size)`` in ``[0, 1]``.
"""

from __future__ import annotations

import lightning.pytorch as pl
import torch
from torch import Tensor
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26.data._sampling import EpochSeededSampler

__all__ = ["PALETTE", "MovingShapesEditDataModule", "make_edit_clips"]

PALETTE = torch.tensor(
    [[1.0, 0.1, 0.1], [0.1, 1.0, 0.1], [0.1, 0.3, 1.0], [1.0, 1.0, 0.1], [1.0, 0.2, 1.0], [0.1, 1.0, 1.0]]
)


def _paint(clip: Tensor, colour: Tensor, start: Tensor, step: Tensor, side: int) -> None:
    frames, _, size, _ = clip.shape
    for f in range(frames):
        y, x = ((start + f * step) % (size - side + 1)).tolist()
        clip[f, :, y : y + side, x : x + side] = colour[:, None, None]


def make_edit_clips(
    n: int, *, frames: int = 8, size: int = 16, side: int = 4, seed: int = 0
) -> tuple[Tensor, Tensor, Tensor]:
    """``n`` (source, context, target) clip triples, each ``(n, frames, 3, size, size)``.

    Args:
        n: number of samples.
        frames: frames per clip.
        size: image height and width in pixels.
        side: square side in pixels (``side < size``).
        seed: random seed.

    Returns:
        ``(source, context, target)``.

    Example:
        >>> s, c, t = make_edit_clips(2, frames=3, size=8, side=2)
        >>> s.shape, bool((s != t).any())
        (torch.Size([2, 3, 3, 8, 8]), True)
    """
    for name, value, low in (("n", n, 1), ("frames", frames, 1), ("size", size, 2), ("side", side, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if side >= size:
        raise ValueError(f"side must be smaller than size={size}, got {side}")
    g = torch.Generator().manual_seed(seed)
    source = torch.zeros(n, frames, 3, size, size)
    context, target = torch.zeros_like(source), torch.zeros_like(source)
    for i in range(n):
        colours = torch.randperm(len(PALETTE), generator=g)[:3]  # edited, other, new
        starts = torch.randint(0, size - side + 1, (2, 2), generator=g)
        steps = torch.randint(-2, 3, (2, 2), generator=g)
        _paint(source[i], PALETTE[colours[1]], starts[1], steps[1], side)
        _paint(target[i], PALETTE[colours[1]], starts[1], steps[1], side)
        _paint(source[i], PALETTE[colours[0]], starts[0], steps[0], side)  # the edited square is drawn on top
        _paint(target[i], PALETTE[colours[2]], starts[0], steps[0], side)
        _paint(context[i], PALETTE[colours[2]], starts[0], steps[0], side)
    return source, context, target


class MovingShapesEditDataModule(pl.LightningDataModule):
    """Train/validation loaders of generated ``(source, context, target)`` clips (fixed seeds per split).

    Args:
        n_train: training samples.
        n_val: validation samples.
        frames: frames per clip.
        size: image size in pixels.
        batch_size: loader batch size.
        seed: seed of the training split (validation uses ``seed + 1``).

    Example:
        >>> dm = MovingShapesEditDataModule(n_train=4, n_val=2, frames=2, size=8, batch_size=2)
        >>> dm.setup("fit")
        >>> [t.shape[0] for t in next(iter(dm.train_dataloader()))]
        [2, 2, 2]
    """

    def __init__(
        self, n_train: int = 512, n_val: int = 128, frames: int = 8, size: int = 16, batch_size: int = 32,
        seed: int = 0,
    ) -> None:  # fmt: skip
        super().__init__()
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.n_train, self.n_val, self.frames, self.size = n_train, n_val, frames, size
        self.batch_size, self.seed = batch_size, seed
        self.train_set: TensorDataset | None = None
        self.val_set: TensorDataset | None = None

    def setup(self, stage: str | None = None) -> None:
        """Generate both splits (deterministic)."""
        kw = {"frames": self.frames, "size": self.size}
        self.train_set = TensorDataset(*make_edit_clips(self.n_train, seed=self.seed, **kw))
        self.val_set = TensorDataset(*make_edit_clips(self.n_val, seed=self.seed + 1, **kw))

    def train_dataloader(self) -> DataLoader:
        """Shuffled by (seed, epoch), so a resumed run sees the same batches as an uninterrupted one."""
        if self.train_set is None:
            self.setup("fit")
        sampler = EpochSeededSampler(self.n_train, seed=self.seed)
        return DataLoader(self.train_set, batch_size=self.batch_size, sampler=sampler)  # type: ignore[arg-type]

    def val_dataloader(self) -> DataLoader:
        """In order."""
        if self.val_set is None:
            self.setup("validate")
        return DataLoader(self.val_set, batch_size=self.batch_size)  # type: ignore[arg-type]
