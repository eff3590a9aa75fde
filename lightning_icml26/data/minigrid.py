"""MiniGrid symbolic observations as frames of cell tokens (gymnasium/minigrid imported lazily).

The full grid (``grid.encode()`` with the agent written in, as MiniGrid's ``FullyObsWrapper`` does) gives
``(object type, colour, state)`` per cell; the token is ``type + 11 * colour + 66 * state`` (vocabulary 264).
The default environment, ``MiniGrid-Dynamic-Obstacles-8x8-v0``, has balls that move every step and are never
created or destroyed (persistent moving objects). Actions are random but never "forward" into a non-empty
cell, so episodes do not end by collision and fixed-length episodes can be collected.
"""

from __future__ import annotations

from typing import Any

import torch

from lightning_icml26._optional import require
from lightning_icml26._requirements import Requirement, declare_requirements
from lightning_icml26.data._splits import SplitsDataModule
from lightning_icml26.data.gridworld import WindowDataset

__all__ = ["MINIGRID_VOCAB", "MiniGridDataModule", "make_minigrid_rollouts", "minigrid_token"]

MINIGRID_VOCAB = 11 * 6 * 4  # state 0..3 (the agent writes its direction there)


def minigrid_token(obj_type: int, colour: int, state: int) -> int:
    """Token id of a MiniGrid cell encoding ``(type, colour, state)``.

    Example:
        >>> minigrid_token(6, 2, 0)  # a blue ball
        28
    """
    return int(obj_type) + 11 * int(colour) + 66 * int(state)


def make_minigrid_rollouts(
    num_episodes: int, length: int, env_id: str = "MiniGrid-Dynamic-Obstacles-8x8-v0", seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Collect ``num_episodes`` episodes of ``length`` full-grid symbolic frames under random safe actions.

    Args:
        num_episodes: episodes to collect.
        length: frames per episode.
        env_id: a registered MiniGrid environment id.
        seed: seed of the environment resets and of the action choice.

    Returns:
        ``(frames, actions)``: int64 ``(N, length, H, W)`` tokens (row = y, column = x) and ``(N, length - 1)``.

    Raises:
        ValueError: bad sizes; ImportError: minigrid missing (``pip install 'lightning-icml26[rl]'``).

    Example:
        >>> frames, actions = make_minigrid_rollouts(1, 3)
        >>> frames.shape, actions.shape, int((frames[0, 0] == minigrid_token(6, 2, 0)).sum())
        (torch.Size([1, 3, 8, 8]), torch.Size([1, 2]), 4)
    """
    if num_episodes < 1 or length < 1:
        raise ValueError(f"num_episodes and length must be positive, got {num_episodes} and {length}")
    gym = require("gymnasium", extra="rl", purpose="MiniGrid environments")
    minigrid = require("minigrid", extra="rl", purpose="MiniGrid environments")
    idx = minigrid.core.constants.OBJECT_TO_IDX
    colours = minigrid.core.constants.COLOR_TO_IDX
    env = gym.make(env_id)
    base = env.unwrapped
    gen = torch.Generator().manual_seed(seed)
    forward = int(base.actions.forward)
    num_actions = int(env.action_space.n)
    all_frames, all_actions = [], []

    def frame() -> torch.Tensor:
        grid = base.grid.encode().copy()
        x, y = base.agent_pos
        grid[x, y] = (idx["agent"], colours["red"], base.agent_dir)
        cells = torch.as_tensor(grid, dtype=torch.long)  # (W, H, 3)
        return (cells[..., 0] + 11 * cells[..., 1] + 66 * cells[..., 2]).T

    for episode in range(num_episodes):
        env.reset(seed=seed * 100003 + episode)
        frames, actions = [frame()], []
        for _ in range(length - 1):
            action = int(torch.randint(0, num_actions, (1,), generator=gen))
            if action == forward and base.grid.get(*base.front_pos) is not None:
                action = int(torch.randint(0, 2, (1,), generator=gen))  # turn instead of colliding
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                raise RuntimeError(f"{env_id} ended an episode early; use a shorter length than {length}")
            frames.append(frame())
            actions.append(action)
        all_frames.append(torch.stack(frames))
        all_actions.append(torch.tensor(actions, dtype=torch.long).reshape(length - 1))
    env.close()
    return torch.stack(all_frames), torch.stack(all_actions)


@declare_requirements(
    [Requirement("gymnasium", "rl", "MiniGrid environments"), Requirement("minigrid", "rl", "MiniGrid environments")]
)
class MiniGridDataModule(SplitsDataModule):
    """Train/val windows and test episodes of MiniGrid symbolic frames (collected in ``setup``).

    Args:
        env_id: MiniGrid environment id.
        num_train_episodes: training episodes.
        num_val_episodes: validation episodes.
        num_test_episodes: test episodes.
        episode_length: frames per training episode.
        context: frames the world model sees.
        test_horizon: imagined frames scored in the test split.
        size: grid side (frames are ``size x size``).
        batch_size: loader batch size.
        seed: data seed.

    Example:
        >>> dm = MiniGridDataModule(num_train_episodes=2)  # cheap: no environment is touched yet
        >>> dm.vocab_size, dm.object_tokens, dm.num_actions
        (264, [28], 3)
    """

    def __init__(
        self,
        env_id: str = "MiniGrid-Dynamic-Obstacles-8x8-v0",
        num_train_episodes: int = 64,
        num_val_episodes: int = 8,
        num_test_episodes: int = 16,
        episode_length: int = 32,
        context: int = 2,
        test_horizon: int = 20,
        size: int = 8,
        num_actions: int = 3,
        batch_size: int = 64,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if episode_length < context + 1:
            raise ValueError(f"episode_length must be at least context + 1 = {context + 1}, got {episode_length}")
        self.save_hyperparameters()
        self.height = self.width = size
        self.context = context
        self.num_actions = num_actions
        self.vocab_size = MINIGRID_VOCAB
        self.object_tokens = [minigrid_token(6, 2, 0)]  # blue balls: the moving obstacles

    def setup(self, stage: str | None = None) -> None:
        """Collect the three splits from the environment."""
        hp: Any = self.hparams
        window = hp.context + 1
        train = make_minigrid_rollouts(hp.num_train_episodes, hp.episode_length, hp.env_id, hp.seed)
        val = make_minigrid_rollouts(hp.num_val_episodes, hp.episode_length, hp.env_id, hp.seed + 1)
        length = hp.context + hp.test_horizon
        test = make_minigrid_rollouts(hp.num_test_episodes, length, hp.env_id, hp.seed + 2)
        self._splits = {
            "train": WindowDataset(*train, window),
            "val": WindowDataset(*val, window, stride=window),
            "test": WindowDataset(*test, length),
        }
