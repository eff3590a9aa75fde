"""MinAtar trajectories as 5 x 5 grids of patch tokens, and the environment's own next-frame noise.

MinAtar games (Young & Tian 2019; the ``minatar`` package, the ``rl`` extra) show a ``10 x 10 x C`` boolean grid.
ITC's MinAtar setting cuts it into ``2 x 2`` patches, so a frame is ``5 x 5 = 25`` tokens. Here a patch's token
is its ``4 C`` bits packed into one integer (:func:`patch_keys`), and :class:`PatchCodebook` numbers the patterns
seen in the training data (id 0 is the empty patch). This is a nearest-neighbour tokenizer whose codebook holds
every pattern exactly, so decoding is lossless on known patterns; an unseen pattern maps to its nearest pattern in
Hamming distance. (The official code learns a nearest-neighbour codebook with a distance threshold; on MinAtar's
binary grids an exact codebook is the zero-threshold limit of it.)

:func:`collect_minatar` plays a game with an epsilon-greedy (or uniform random) policy over the game's minimal
action set, seeded, and can record for every step the exact distribution of the next frame given the full
hidden state of the game and the chosen action (:attr:`MinAtarEpisodes.branches`): MinAtar's only randomness
within an episode is the sticky action (probability ``sticky_action_prob`` of repeating the last executed
action) and, in Freeway, the new car speeds drawn when the chicken reaches the top; the collector enumerates the
first exactly and samples the second with ``floor_samples`` re-seeded copies of the game.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from lightning_icml26._optional import require

__all__ = [
    "GAMES",
    "FrameRules",
    "MinAtarEpisodes",
    "PatchCodebook",
    "collect_minatar",
    "noise_floor",
    "patch_keys",
    "token_bits",
]

GAMES = ("breakout", "freeway")
PATCH = 2

Policy = Callable[[np.ndarray], int]


def patch_keys(states: np.ndarray, patch: int = PATCH) -> np.ndarray:
    """Pack every ``patch x patch x C`` block of boolean grids into one integer.

    Args:
        states: ``(..., H, W, C)`` boolean grids with ``H`` and ``W`` divisible by ``patch``.
        patch: patch side.

    Returns:
        ``(..., H / patch, W / patch)`` int64 keys; 0 is the empty patch.

    Example:
        >>> grid = np.zeros((4, 4, 1), dtype=bool)
        >>> grid[0, 1, 0] = True
        >>> patch_keys(grid).tolist()
        [[2, 0], [0, 0]]
    """
    states = np.asarray(states)
    if states.ndim < 3 or states.shape[-3] % patch or states.shape[-2] % patch:
        raise ValueError(f"states must be (..., H, W, C) with H, W divisible by patch={patch}, got {states.shape}")
    *lead, height, width, channels = states.shape
    if patch * patch * channels > 62:
        raise ValueError(f"a patch of {patch}x{patch}x{channels} bits does not fit in an int64 key")
    blocks = states.reshape(*lead, height // patch, patch, width // patch, patch, channels)
    blocks = np.moveaxis(blocks, -4, -3).reshape(*lead, height // patch, width // patch, -1)
    weights = np.left_shift(np.int64(1), np.arange(blocks.shape[-1], dtype=np.int64))
    return (blocks.astype(np.int64) * weights).sum(-1)


@dataclass
class PatchCodebook:
    """Token ids for patch keys (see :func:`patch_keys`); id 0 is always the empty patch.

    Args:
        keys: the known patch keys, ``keys[id]``; built with :meth:`fit`.

    Example:
        >>> book = PatchCodebook.fit(np.array([[5, 0], [3, 5]]))
        >>> book.keys.tolist(), book.encode(np.array([3, 5, 0, 7])).tolist()
        ([0, 3, 5], [1, 2, 0, 1])
    """

    keys: np.ndarray

    @classmethod
    def fit(cls, keys: np.ndarray) -> PatchCodebook:
        """The codebook of every key in ``keys`` (sorted, with the empty patch first)."""
        unique = np.unique(np.concatenate([np.zeros(1, dtype=np.int64), np.asarray(keys, dtype=np.int64).ravel()]))
        return cls(keys=unique)

    @property
    def size(self) -> int:
        """Number of tokens."""
        return len(self.keys)

    def encode(self, keys: np.ndarray) -> np.ndarray:
        """Token ids of ``keys``; an unknown key takes the nearest known key in Hamming distance (ties: lowest)."""
        keys = np.asarray(keys, dtype=np.int64)
        pos = np.searchsorted(self.keys, keys).clip(max=self.size - 1)
        ids = pos.copy()
        unknown = self.keys[pos] != keys
        if unknown.any():
            xor = np.bitwise_xor(keys[unknown][:, None], self.keys[None, :])
            bits = np.unpackbits(xor.view(np.uint8).reshape(*xor.shape, 8), axis=-1).sum(-1)
            ids[unknown] = bits.argmin(-1)
        return ids

    def decode(self, ids: np.ndarray) -> np.ndarray:
        """Patch keys of token ids."""
        ids = np.asarray(ids)
        if ids.size and (ids.min() < 0 or ids.max() >= self.size):
            raise ValueError(f"token ids must lie in [0, {self.size}), got [{ids.min()}, {ids.max()}]")
        return self.keys[ids]


@dataclass
class MinAtarEpisodes:
    """Episodes of one MinAtar game.

    Attributes:
        game: the game name.
        states: per episode, ``(T + 1, 10, 10, C)`` bool grids.
        actions: per episode, ``(T,)`` int64 indices into ``action_set`` (the chosen, not the executed, actions).
        rewards: per episode, ``(T,)`` float32.
        terminal: per episode, whether it ended by termination (not by the step budget).
        action_set: the game's minimal action set (MinAtar action ids).
        branches: per episode and step, ``(probabilities (K,), next grids (K, 10, 10, C))``: the next frame's
            distribution given the full game state and the chosen action; empty unless ``floor_samples > 0``.
    """

    game: str
    states: list[np.ndarray]
    actions: list[np.ndarray]
    rewards: list[np.ndarray]
    terminal: list[bool]
    action_set: list[int]
    branches: list[list[tuple[np.ndarray, np.ndarray]]] = field(default_factory=list)

    @property
    def num_steps(self) -> int:
        """Total number of transitions."""
        return int(sum(len(a) for a in self.actions))


def _branch(env: object, action: int, sticky: float, samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Next-frame outcomes of ``action`` in a copy of the inner game (sticky repeat enumerated, rng re-seeded)."""
    game = env.env  # type: ignore[attr-defined]
    last = int(env.last_action)  # type: ignore[attr-defined]
    options = [(1.0 - sticky, action), (sticky, last)] if last != action and sticky > 0 else [(1.0, action)]
    probs, grids = [], []
    for weight, executed in options:
        for s in range(samples):
            clone = copy.deepcopy(game)
            clone.random = np.random.RandomState(seed + s)
            clone.act(executed)
            probs.append(weight / samples)
            grids.append(clone.state())
    return np.asarray(probs), np.stack(grids)


def collect_minatar(
    game: str,
    num_steps: int,
    *,
    seed: int = 0,
    epsilon: float = 1.0,
    policy: Policy | None = None,
    sticky_action_prob: float = 0.1,
    max_episode_steps: int = 500,
    floor_samples: int = 0,
) -> MinAtarEpisodes:
    """Play ``game`` for ``num_steps`` transitions with an epsilon-greedy policy and record the episodes.

    Args:
        game: ``"breakout"`` or ``"freeway"``.
        num_steps: total transitions to record (the last episode is cut at the budget).
        seed: seeds the game and the policy's exploration.
        epsilon: probability of a uniform random action (1.0: a random policy).
        policy: greedy policy ``grid (10, 10, C) -> action index`` used with probability ``1 - epsilon``.
        sticky_action_prob: MinAtar's sticky-action probability (its default 0.1).
        max_episode_steps: episodes are cut after this many steps.
        floor_samples: when positive, also record the next-frame distribution of every step (see
            :class:`MinAtarEpisodes`) with this many re-seeded game copies per executed action.

    Returns:
        The recorded :class:`MinAtarEpisodes`.

    Example:
        >>> episodes = collect_minatar("breakout", 30, seed=0)  # doctest: +SKIP
        >>> episodes.num_steps, episodes.states[0].shape[1:]  # doctest: +SKIP
        (30, (10, 10, 4))
    """
    if game not in GAMES:
        raise ValueError(f"game must be one of {GAMES}, got {game!r}")
    for name, value in (("num_steps", num_steps), ("max_episode_steps", max_episode_steps)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"epsilon must lie in [0, 1], got {epsilon}")
    if epsilon < 1.0 and policy is None:
        raise ValueError(f"epsilon={epsilon} < 1 needs a greedy policy, got policy=None")
    if not 0.0 <= sticky_action_prob < 1.0:
        raise ValueError(f"sticky_action_prob must lie in [0, 1), got {sticky_action_prob}")
    if not isinstance(floor_samples, int) or floor_samples < 0:
        raise ValueError(f"floor_samples must be a non-negative integer, got {floor_samples!r}")
    minatar = require("minatar", extra="rl", purpose="MinAtar environments")
    env = minatar.Environment(game, sticky_action_prob=sticky_action_prob)
    env.seed(seed)
    rng = np.random.default_rng(seed + 1_000_003)
    action_set = [int(a) for a in env.minimal_action_set()]
    out = MinAtarEpisodes(game, [], [], [], [], action_set)
    remaining = num_steps
    while remaining > 0:
        env.reset()
        grids: list[np.ndarray] = [env.state().copy()]
        acts: list[int] = []
        rews: list[float] = []
        branches: list[tuple[np.ndarray, np.ndarray]] = []
        done = False
        while not done and len(acts) < min(max_episode_steps, remaining):
            if policy is not None and rng.random() >= epsilon:
                index = int(policy(grids[-1]))
            else:
                index = int(rng.integers(len(action_set)))
            if floor_samples:
                branches.append(
                    _branch(env, action_set[index], sticky_action_prob, floor_samples, int(rng.integers(2**31)))
                )
            reward, done = env.act(action_set[index])
            grids.append(env.state().copy())
            acts.append(index)
            rews.append(float(reward))
        remaining -= len(acts)
        out.states.append(np.stack(grids))
        out.actions.append(np.asarray(acts, dtype=np.int64))
        out.rewards.append(np.asarray(rews, dtype=np.float32))
        out.terminal.append(bool(done))
        if floor_samples:
            out.branches.append(branches)
    return out


def noise_floor(episodes: MinAtarEpisodes, codebook: PatchCodebook) -> float:
    """Mean per-cell entropy (nats) of the next token given the full game state and the chosen action.

    For every recorded step (needs ``floor_samples > 0`` at collection) the next frame's outcomes are tokenised,
    and at each of the 25 cells the entropy of the token's distribution is computed; the figure is the mean over
    cells and steps. It is the smallest next-frame cross-entropy per cell that a model predicting cells
    independently can reach when it knows the game's full state; a world model sees only past frames and actions
    (not MinAtar's hidden timers and the executed last action), so its attainable loss is at or above this.

    Example:
        >>> eps = MinAtarEpisodes("breakout", [], [], [], [], [0], branches=[[(
        ...     np.array([0.5, 0.5]), np.stack([np.zeros((2, 2, 1), bool), np.ones((2, 2, 1), bool)]))]])
        >>> round(noise_floor(eps, PatchCodebook.fit(np.array([0, 15]))), 4)  # one cell, a fair coin
        0.6931
    """
    steps = [step for episode in episodes.branches for step in episode]
    if not steps:
        raise ValueError("episodes hold no next-frame branches; collect them with floor_samples > 0")
    total = 0.0
    for probs, grids in steps:
        tokens = codebook.encode(patch_keys(grids)).reshape(len(probs), -1)  # (K, cells)
        cells = tokens.shape[1]
        entropy = 0.0
        for cell in range(cells):
            values, inverse = np.unique(tokens[:, cell], return_inverse=True)
            mass = np.bincount(inverse.ravel(), weights=probs, minlength=len(values))
            mass = mass[mass > 0]
            entropy -= float((mass * np.log(mass)).sum())
        total += entropy / cells
    return total / len(steps)


def token_bits(codebook: PatchCodebook, channels: int, patch: int = PATCH) -> np.ndarray:
    """``(V, patch, patch, C)`` bool: the grid patch of every token (the inverse of :func:`patch_keys`).

    Example:
        >>> token_bits(PatchCodebook.fit(np.array([2])), 1)[1, :, :, 0].tolist()
        [[False, True], [False, False]]
    """
    shifts = np.arange(patch * patch * channels, dtype=np.int64)
    bits = (codebook.keys[:, None] >> shifts[None, :]) & 1
    return bits.reshape(-1, patch, patch, channels).astype(bool)


class FrameRules:
    """Reward and termination of a MinAtar transition read off two token frames (for imagined rollouts).

    Breakout: the reward is the number of bricks that disappear; the episode ends when the ball is in the bottom
    row (the game moves it there only when the paddle misses). Freeway: the reward is 1 when the chicken was in
    one of the two top rows and is back in the bottom row (a crossing; a collision in those rows reads the same,
    an accepted approximation); episodes do not end (MinAtar's own time limit is not modelled).

    Args:
        game: ``"breakout"`` or ``"freeway"``.
        codebook: the token codebook.

    Example:
        >>> book = PatchCodebook.fit(np.array([8]))  # the patch with the brick bit (channel 3) in its top-left cell
        >>> rules = FrameRules("breakout", book)
        >>> frame = torch.zeros(1, 5, 5, dtype=torch.long)
        >>> frame[0, 0, 0] = 1
        >>> rules(frame, torch.zeros(1, 5, 5, dtype=torch.long))
        (tensor([1.]), tensor([False]))
    """

    def __init__(self, game: str, codebook: PatchCodebook) -> None:
        if game not in GAMES:
            raise ValueError(f"game must be one of {GAMES}, got {game!r}")
        self.game = game
        channels = 4 if game == "breakout" else 7
        bits = torch.as_tensor(token_bits(codebook, channels))  # (V, 2, 2, C)
        self.bits = bits

    def grids(self, tokens: torch.Tensor) -> torch.Tensor:
        """``(B, 10, 10, C)`` bool grids of ``(B, 5, 5)`` token frames."""
        patches = self.bits[tokens.long()]  # (B, 5, 5, 2, 2, C)
        batch, rows, cols = tokens.shape
        return patches.permute(0, 1, 3, 2, 4, 5).reshape(batch, rows * PATCH, cols * PATCH, -1)

    def __call__(self, frame: torch.Tensor, next_frame: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(reward (B,), done (B,))`` of the transition ``frame -> next_frame``."""
        now, nxt = self.grids(frame), self.grids(next_frame)
        if self.game == "breakout":
            removed = (now[..., 3].flatten(1).sum(1) - nxt[..., 3].flatten(1).sum(1)).clamp(min=0)
            return removed.float(), nxt[:, 9, :, 1].any(1)
        chicken_top = now[:, :2, :, 0].flatten(1).any(1)
        chicken_bottom = nxt[:, 9, :, 0].any(1)
        return (chicken_top & chicken_bottom).float(), torch.zeros(len(frame), dtype=torch.bool)
