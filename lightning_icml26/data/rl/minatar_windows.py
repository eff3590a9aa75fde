"""MinAtar episodes as token windows for a token world model: the data policy, windows and a DataModule.

:func:`heuristic_policy` is the greedy part of the data-collection policy (Breakout follows the ball, Freeway goes
up), :func:`episode_tokens` tokenises recorded episodes with a :class:`~lightning_icml26.data.rl.minatar.PatchCodebook`,
:func:`episode_windows` cuts every run of ``length`` frames out of them, and :class:`TokenWindowDataModule` serves
those windows to ``Trainer.fit``: each training step draws ``batch_size`` windows uniformly with replacement (a
fixed number of steps, seeded), validation walks the held-out windows in order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import torch
from lightning.pytorch import LightningDataModule
from torch.utils.data import DataLoader, Sampler, TensorDataset

from lightning_icml26.data.rl.minatar import GAMES, MinAtarEpisodes, PatchCodebook, patch_keys

__all__ = ["TokenWindowDataModule", "episode_tokens", "episode_windows", "heuristic_policy"]


def heuristic_policy(game: str) -> Callable[[np.ndarray], int]:
    """The greedy data policy of ``game`` on ``(10, 10, C)`` grids, returning an index into the minimal action set.

    Breakout (actions ``[noop, left, right]``) moves the paddle towards the ball's column; Freeway (actions
    ``[noop, up, down]``) always goes up.

    Example:
        >>> grid = np.zeros((10, 10, 4), dtype=bool)
        >>> grid[9, 5, 0] = True  # paddle
        >>> grid[3, 2, 1] = True  # ball, to the left
        >>> heuristic_policy("breakout")(grid), heuristic_policy("freeway")(np.zeros((10, 10, 7), dtype=bool))
        (1, 1)
    """
    if game not in GAMES:
        raise ValueError(f"game must be one of {GAMES}, got {game!r}")

    def breakout(grid: np.ndarray) -> int:
        ball = np.argwhere(grid[:, :, 1])
        paddle = np.argwhere(grid[9, :, 0])
        if not len(ball) or not len(paddle):
            return 0
        diff = int(ball[0][1]) - int(paddle[0][0])
        return 0 if diff == 0 else (1 if diff < 0 else 2)

    def freeway(grid: np.ndarray) -> int:
        return 1

    return breakout if game == "breakout" else freeway


def episode_tokens(episodes: MinAtarEpisodes, codebook: PatchCodebook) -> list[torch.Tensor]:
    """Per episode, its ``(T + 1, 5, 5)`` int64 token frames.

    Example:
        >>> eps = MinAtarEpisodes("breakout", [np.zeros((2, 10, 10, 4), bool)], [np.zeros(1, np.int64)], [], [], [0])
        >>> episode_tokens(eps, PatchCodebook.fit(np.array([0])))[0].shape
        torch.Size([2, 5, 5])
    """
    return [torch.as_tensor(codebook.encode(patch_keys(states))) for states in episodes.states]


def episode_windows(
    tokens: Sequence[torch.Tensor], actions: Sequence[np.ndarray], length: int
) -> tuple[torch.Tensor, torch.Tensor, list[tuple[int, int]]]:
    """Every run of ``length`` consecutive frames inside an episode, its ``length - 1`` actions and its place.

    Args:
        tokens: per episode, ``(T + 1, H, W)`` token frames.
        actions: per episode, ``(T,)`` actions (``actions[t]`` follows frame ``t``).
        length: frames per window, at least 1.

    Returns:
        ``frames (N, length, H, W)``, ``actions (N, length - 1)`` and, per window, ``(episode, first frame)``.

    Example:
        >>> frames, acts, where = episode_windows([torch.arange(4).reshape(4, 1, 1)], [np.array([7, 8, 9])], 3)
        >>> frames[:, :, 0, 0].tolist(), acts.tolist(), where
        ([[0, 1, 2], [1, 2, 3]], [[7, 8], [8, 9]], [(0, 0), (0, 1)])
    """
    if not isinstance(length, int) or isinstance(length, bool) or length < 1:
        raise ValueError(f"length must be a positive integer, got {length!r}")
    if len(tokens) != len(actions):
        raise ValueError(f"tokens and actions must list the same episodes, got {len(tokens)} and {len(actions)}")
    frames, acts, where = [], [], []
    for e, (tok, act) in enumerate(zip(tokens, actions, strict=True)):
        for s in range(len(tok) - length + 1):
            frames.append(tok[s : s + length])
            acts.append(torch.as_tensor(act[s : s + length - 1], dtype=torch.int64))
            where.append((e, s))
    if not frames:
        raise ValueError(f"no episode holds {length} frames")
    return torch.stack(frames), torch.stack(acts), where


class _DrawBatches(Sampler[list[int]]):
    """``num_steps`` batches of ``batch_size`` indices drawn uniformly with replacement (one ``randint`` each)."""

    def __init__(self, size: int, batch_size: int, num_steps: int, seed: int) -> None:
        self.size, self.batch_size, self.num_steps, self.seed = size, batch_size, num_steps, seed

    def __len__(self) -> int:
        return self.num_steps

    def __iter__(self) -> Iterator[list[int]]:
        generator = torch.Generator().manual_seed(self.seed)
        for _ in range(self.num_steps):
            yield torch.randint(0, self.size, (self.batch_size,), generator=generator).tolist()


class TokenWindowDataModule(LightningDataModule):
    """Token windows ``(frames, actions)`` for :class:`~lightning_icml26.modules.itc.TokenWorldModel`.

    One training epoch is ``num_steps`` batches of ``batch_size`` windows drawn uniformly with replacement from a
    generator seeded with ``seed``; validation serves ``val_frames`` in order, ``val_batch_size`` at a time.

    Args:
        train_frames: ``(N, S, H, W)`` int64 training windows.
        train_actions: ``(N, S - 1)`` their actions.
        val_frames: ``(M, S', H, W)`` validation windows.
        val_actions: ``(M, S' - 1)`` their actions.
        batch_size: windows per training step.
        num_steps: training steps per epoch.
        seed: seed of the draws.
        val_batch_size: windows per validation batch.

    Example:
        >>> frames, actions = torch.zeros(10, 3, 2, 2, dtype=torch.long), torch.zeros(10, 2, dtype=torch.long)
        >>> dm = TokenWindowDataModule(frames, actions, frames, actions, batch_size=4, num_steps=5)
        >>> loader = dm.train_dataloader()
        >>> len(loader), [tuple(t.shape) for t in next(iter(loader))]
        (5, [(4, 3, 2, 2), (4, 2)])
    """

    def __init__(
        self,
        train_frames: torch.Tensor,
        train_actions: torch.Tensor,
        val_frames: torch.Tensor,
        val_actions: torch.Tensor,
        batch_size: int = 32,
        num_steps: int = 1000,
        seed: int = 0,
        val_batch_size: int = 512,
    ) -> None:
        super().__init__()
        for name, value in (("batch_size", batch_size), ("num_steps", num_steps), ("val_batch_size", val_batch_size)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        for name, frames, actions in (("train", train_frames, train_actions), ("val", val_frames, val_actions)):
            if frames.dim() != 4 or tuple(actions.shape) != (frames.shape[0], frames.shape[1] - 1):
                raise ValueError(
                    f"{name}_frames must be (N, S, H, W) and {name}_actions (N, S - 1); got {tuple(frames.shape)} "
                    f"and {tuple(actions.shape)}"
                )
        self.train_set = TensorDataset(train_frames.long(), train_actions.long())
        self.val_set = TensorDataset(val_frames.long(), val_actions.long())
        self.batch_size, self.num_steps, self.seed, self.val_batch_size = batch_size, num_steps, seed, val_batch_size

    def train_dataloader(self) -> DataLoader:
        """``num_steps`` seeded batches drawn with replacement."""
        return DataLoader(
            self.train_set, batch_sampler=_DrawBatches(len(self.train_set), self.batch_size, self.num_steps, self.seed)
        )

    def val_dataloader(self) -> DataLoader:
        """The validation windows in order."""
        return DataLoader(self.val_set, batch_size=self.val_batch_size)
