"""A generated grid world with persistent, moving objects (batched in torch, fast), for token world models.

Tokens: ``0`` floor, ``1`` wall (the border), ``2`` the agent, ``3 .. 3 + num_object_types - 1`` objects.
The agent moves by its action (``0`` stay, ``1`` up, ``2`` down, ``3`` left, ``4`` right); every object
random-walks: with probability ``move_prob`` it tries one of the four directions uniformly. A move into a
wall or an occupied cell is blocked. Objects are never created or destroyed, so the true object counts are
constant while positions are stochastic: exactly the regime where per-cell sampling of a world model
duplicates or loses objects.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.data import Dataset

from lightning_icml26.data._splits import SplitsDataModule

__all__ = ["GridWorldDataModule", "WindowDataset", "make_gridworld_rollouts"]

FLOOR, WALL, AGENT, FIRST_OBJECT = 0, 1, 2, 3
_MOVES = torch.tensor([[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1]])


def _check_positive(**values: int) -> None:
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def make_gridworld_rollouts(
    num_episodes: int,
    length: int,
    height: int = 8,
    width: int = 8,
    num_objects: int = 3,
    num_object_types: int = 3,
    move_prob: float = 0.5,
    seed: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Simulate ``num_episodes`` episodes of ``length`` frames under uniformly random actions.

    Args:
        num_episodes: number of episodes (simulated together, vectorised).
        length: frames per episode, at least 1.
        height: grid height including the wall border, at least 3.
        width: grid width including the wall border, at least 3.
        num_objects: objects per episode (besides the agent).
        num_object_types: object kinds; each object's kind is drawn uniformly per episode.
        move_prob: probability that an object tries to move at a step, in ``[0, 1]``.
        seed: seed of the private generator.

    Returns:
        ``(frames, actions)``: int64 ``(num_episodes, length, height, width)`` and
        ``(num_episodes, length - 1)``, ``actions[:, t]`` taken after frame ``t``.

    Raises:
        ValueError: bad sizes or too many objects for the interior.

    Example:
        >>> frames, actions = make_gridworld_rollouts(2, 4, height=5, width=6, num_objects=2, seed=0)
        >>> frames.shape, actions.shape
        (torch.Size([2, 4, 5, 6]), torch.Size([2, 3]))
        >>> [int((f >= 2).sum()) for f in frames[0]]  # agent + 2 objects in every frame
        [3, 3, 3, 3]
    """
    _check_positive(
        num_episodes=num_episodes, length=length, num_objects=num_objects, num_object_types=num_object_types
    )
    if not isinstance(height, int) or height < 3 or not isinstance(width, int) or width < 3:
        raise ValueError(f"height and width must be integers >= 3, got {height!r} and {width!r}")
    interior = (height - 2) * (width - 2)
    if num_objects + 1 > interior:
        raise ValueError(f"num_objects={num_objects} plus the agent do not fit in the {interior} interior cells")
    if not 0.0 <= move_prob <= 1.0:
        raise ValueError(f"move_prob must be in [0, 1], got {move_prob}")
    gen = torch.Generator().manual_seed(seed)
    n, k = num_episodes, num_objects + 1
    cells = torch.rand(n, interior, generator=gen).argsort(dim=1)[:, :k]
    pos = torch.stack([cells // (width - 2) + 1, cells % (width - 2) + 1], dim=-1)  # (N, K, 2), entity 0 = agent
    kinds = torch.randint(0, num_object_types, (n, num_objects), generator=gen) + FIRST_OBJECT
    values = torch.cat([torch.full((n, 1), AGENT), kinds], dim=1)
    actions = torch.randint(0, 5, (n, max(length - 1, 0)), generator=gen)
    base = torch.full((height, width), WALL, dtype=torch.long)
    base[1:-1, 1:-1] = FLOOR
    rows = torch.arange(n)

    def render(positions: torch.Tensor) -> torch.Tensor:
        frame = base.expand(n, height, width).clone()
        frame[rows[:, None], positions[..., 0], positions[..., 1]] = values
        return frame

    frames = [render(pos)]
    for t in range(length - 1):
        occupied = frames[-1] != FLOOR
        moves = torch.zeros(n, k, dtype=torch.long)
        moves[:, 0] = actions[:, t]
        tries = torch.rand(n, num_objects, generator=gen) < move_prob
        direction = torch.randint(1, 5, (n, num_objects), generator=gen)
        moves[:, 1:] = torch.where(tries, direction, torch.zeros_like(direction))
        pos = pos.clone()
        for e in range(k):  # entities move one after another; a move into an occupied cell is blocked
            target = pos[:, e] + _MOVES[moves[:, e]]
            free = ~occupied[rows, target[:, 0], target[:, 1]] & (moves[:, e] > 0)
            occupied[rows[free], pos[free, e, 0], pos[free, e, 1]] = False
            occupied[rows[free], target[free, 0], target[free, 1]] = True
            pos[free, e] = target[free]
        frames.append(render(pos))
    return torch.stack(frames, dim=1), actions


class WindowDataset(Dataset):
    """All windows of ``window`` consecutive frames (and their ``window - 1`` actions) of a set of episodes.

    Args:
        frames: ``(N, T, ...)`` episodes.
        actions: ``(N, T - 1)`` actions.
        window: frames per item, ``<= T``.
        stride: step between window starts.

    Example:
        >>> ds = WindowDataset(torch.zeros(2, 5, 3, 3, dtype=torch.long), torch.zeros(2, 4, dtype=torch.long), 3)
        >>> len(ds), ds[0][0].shape, ds[0][1].shape
        (6, torch.Size([3, 3, 3]), torch.Size([2]))
    """

    def __init__(self, frames: torch.Tensor, actions: torch.Tensor, window: int, stride: int = 1) -> None:
        if frames.shape[1] < window or window < 1:
            raise ValueError(f"window must be in [1, {frames.shape[1]}], got {window}")
        if actions.shape[:2] != (frames.shape[0], frames.shape[1] - 1):
            raise ValueError(f"actions must have shape {(frames.shape[0], frames.shape[1] - 1)}, got {actions.shape}")
        self.frames, self.actions, self.window = frames, actions, window
        self.starts = list(range(0, frames.shape[1] - window + 1, stride))

    def __len__(self) -> int:
        return self.frames.shape[0] * len(self.starts)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        episode, which = divmod(index, len(self.starts))
        start = self.starts[which]
        return (
            self.frames[episode, start : start + self.window],
            self.actions[episode, start : start + self.window - 1],
        )


class GridWorldDataModule(SplitsDataModule):
    """Train/val windows of ``context + 1`` frames and test episodes of ``context + test_horizon`` frames.

    Args:
        num_train_episodes: training episodes (each cut into all windows of ``context + 1`` frames).
        num_val_episodes: validation episodes.
        num_test_episodes: test episodes, one rollout each.
        episode_length: frames per training/validation episode.
        context: frames the world model sees.
        test_horizon: imagined frames scored in the test split.
        height: grid height including the border.
        width: grid width including the border.
        num_objects: objects besides the agent.
        num_object_types: object kinds.
        move_prob: object move probability.
        batch_size: loader batch size.
        seed: data seed (splits use ``seed``, ``seed + 1``, ``seed + 2``).

    Example:
        >>> dm = GridWorldDataModule(num_train_episodes=4, num_val_episodes=2, num_test_episodes=2,
        ...                          episode_length=6, test_horizon=3, batch_size=4)
        >>> dm.setup()
        >>> frames, actions = next(iter(dm.train_dataloader()))
        >>> frames.shape, actions.shape, dm.vocab_size, dm.object_tokens
        (torch.Size([4, 3, 8, 8]), torch.Size([4, 2]), 6, [2, 3, 4, 5])
    """

    num_actions = 5

    def __init__(
        self,
        num_train_episodes: int = 512,
        num_val_episodes: int = 64,
        num_test_episodes: int = 64,
        episode_length: int = 32,
        context: int = 2,
        test_horizon: int = 20,
        height: int = 8,
        width: int = 8,
        num_objects: int = 3,
        num_object_types: int = 3,
        move_prob: float = 0.5,
        batch_size: int = 64,
        seed: int = 0,
    ) -> None:
        super().__init__()
        _check_positive(
            num_train_episodes=num_train_episodes,
            num_val_episodes=num_val_episodes,
            num_test_episodes=num_test_episodes,
            context=context,
            test_horizon=test_horizon,
            batch_size=batch_size,
        )
        if episode_length < context + 1:
            raise ValueError(f"episode_length must be at least context + 1 = {context + 1}, got {episode_length}")
        self.save_hyperparameters()
        self.height, self.width, self.context = height, width, context
        self.vocab_size = FIRST_OBJECT + num_object_types
        self.object_tokens = list(range(AGENT, self.vocab_size))

    def _episodes(self, num: int, length: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        hp: Any = self.hparams
        return make_gridworld_rollouts(
            num, length, hp.height, hp.width, hp.num_objects, hp.num_object_types, hp.move_prob, seed
        )

    def setup(self, stage: str | None = None) -> None:
        """Generate the three splits (deterministic; every rank makes the same data)."""
        hp: Any = self.hparams
        window = hp.context + 1
        self._splits["train"] = WindowDataset(
            *self._episodes(hp.num_train_episodes, hp.episode_length, hp.seed), window
        )
        self._splits["val"] = WindowDataset(
            *self._episodes(hp.num_val_episodes, hp.episode_length, hp.seed + 1), window, stride=window
        )
        length = hp.context + hp.test_horizon
        self._splits["test"] = WindowDataset(*self._episodes(hp.num_test_episodes, length, hp.seed + 2), length)
