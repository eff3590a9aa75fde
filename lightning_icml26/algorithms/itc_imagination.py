"""A small actor-critic trained purely in the imagination of a token world model (the ITC agent experiment).

The policy reads the current frame of cell tokens. Each update starts from real context windows, lets the
policy act for ``horizon`` steps inside the world model, decodes every imagined frame with the chosen next-frame
decoder (``"itc"``, ``"sample"`` or ``"argmax"``, see :func:`lightning_icml26.ops.decode_next_frame`), scores the
imagined transitions with a reward-and-termination function, and takes one advantage actor-critic step on
lambda-returns (value baseline, entropy bonus). Nothing here touches the real environment.

Simplifications against the TWM/ITC agent (documented): rewards and terminations come from a function of the
imagined frames passed by the caller (the official agent learns reward and termination heads); the policy sees
one frame (no recurrent state); the update is a plain advantage actor-critic, not PPO.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from lightning_icml26.ops import DECODERS, ITCDecoder, decode_next_frame, gumbel_noise

__all__ = ["ImaginationConfig", "TokenPolicy", "imagine", "train_in_imagination"]

LogitsFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
RewardFn = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


class TokenPolicy(nn.Module):
    """Actor-critic over a ``(H, W)`` frame of tokens: token embeddings, flattened, one hidden layer, two heads.

    Args:
        vocab_size: number of cell tokens.
        cells: ``H * W``.
        num_actions: number of actions.
        embed: token embedding width.
        hidden: hidden width.

    Example:
        >>> policy = TokenPolicy(vocab_size=4, cells=6, num_actions=3)
        >>> logits, value = policy(torch.zeros(2, 2, 3, dtype=torch.long))
        >>> logits.shape, value.shape
        (torch.Size([2, 3]), torch.Size([2]))
    """

    def __init__(self, vocab_size: int, cells: int, num_actions: int, embed: int = 8, hidden: int = 128) -> None:
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("cells", cells), ("num_actions", num_actions)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        self.cells = cells
        self.embedding = nn.Embedding(vocab_size, embed)
        self.body = nn.Sequential(nn.Linear(cells * embed, hidden), nn.Tanh())
        self.actor = nn.Linear(hidden, num_actions)
        self.critic = nn.Linear(hidden, 1)

    def forward(self, frame: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Action logits ``(B, A)`` and value ``(B,)`` of ``(B, H, W)`` token frames."""
        if frame.dim() != 3 or frame.shape[1] * frame.shape[2] != self.cells:
            raise ValueError(f"frame must be (B, H, W) with H * W = {self.cells}, got {tuple(frame.shape)}")
        x = self.body(self.embedding(frame.long()).flatten(1))
        return self.actor(x), self.critic(x).squeeze(-1)


@dataclass
class ImaginationConfig:
    """Settings of :func:`train_in_imagination`.

    Args:
        horizon: imagined steps per update.
        updates: number of updates.
        batch_size: imagined trajectories per update.
        gamma: discount.
        lam: lambda of the lambda-returns.
        lr: Adam learning rate.
        entropy_coef: entropy bonus.
        value_coef: weight of the value loss.
    """

    horizon: int = 10
    updates: int = 100
    batch_size: int = 64
    gamma: float = 0.95
    lam: float = 0.9
    lr: float = 3e-3
    entropy_coef: float = 0.01
    value_coef: float = 0.5

    def __post_init__(self) -> None:
        for name in ("horizon", "updates", "batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        for name in ("gamma", "lam"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {getattr(self, name)}")


def imagine(
    policy: TokenPolicy,
    logits_fn: LogitsFn,
    frames: torch.Tensor,
    actions: torch.Tensor,
    horizon: int,
    decoder: str,
    reward_fn: RewardFn,
    *,
    itc: ITCDecoder | None = None,
    generator: torch.Generator | None = None,
) -> dict[str, torch.Tensor]:
    """Let ``policy`` act for ``horizon`` steps in the world model from context ``frames``.

    Args:
        policy: the actor-critic.
        logits_fn: ``(frames (B, T, H, W), actions (B, T)) -> (B, H, W, V)`` next-frame logits.
        frames: ``(B, T, H, W)`` real context frames.
        actions: ``(B, T - 1)`` real actions between them.
        horizon: imagined steps.
        decoder: ``"itc"``, ``"sample"`` or ``"argmax"``.
        reward_fn: ``(frame, next_frame) -> (reward (B,), done (B,) bool)`` on imagined frames.
        itc: ITC configuration.
        generator: random generator for actions and decoding noise.

    Returns:
        ``frames (B, horizon + 1, H, W)``, ``actions (B, horizon)``, ``rewards``, ``dones`` (``(B, horizon)``;
        ``dones[:, t]`` ends the episode after step ``t``), ``alive (B, horizon)`` (the step is before any end).
    """
    if decoder not in DECODERS:
        raise ValueError(f"decoder must be one of {DECODERS}, got {decoder!r}")
    if frames.dim() != 4 or actions.shape != (frames.shape[0], frames.shape[1] - 1):
        raise ValueError(
            f"frames must be (B, T, H, W) and actions (B, T - 1); got {tuple(frames.shape)} and {tuple(actions.shape)}"
        )
    history = list(frames.unbind(1))
    acts = list(actions.unbind(1))
    context = frames.shape[1]
    chosen, rewards, dones = [], [], []
    alive = torch.ones(frames.shape[0], dtype=torch.bool)
    alive_steps = []
    with torch.no_grad():
        for _ in range(horizon):
            logits, _ = policy(history[-1])
            probs = torch.softmax(logits, -1)
            action = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
            acts.append(action)
            window = torch.stack(history[-context:], 1)
            window_actions = torch.stack(acts[-context:], 1)
            next_logits = logits_fn(window, window_actions)
            gumbel = None if decoder == "argmax" else gumbel_noise(next_logits.shape, generator)
            nxt = decode_next_frame(next_logits, history[-1], decoder, itc=itc, gumbel=gumbel)
            reward, done = reward_fn(history[-1], nxt)
            chosen.append(action)
            rewards.append(reward.float() * alive)
            dones.append(done.bool())
            alive_steps.append(alive.clone())
            alive = alive & ~done.bool()
            history.append(nxt)
    return {
        "frames": torch.stack(history[-(horizon + 1) :], 1),
        "actions": torch.stack(chosen, 1),
        "rewards": torch.stack(rewards, 1),
        "dones": torch.stack(dones, 1),
        "alive": torch.stack(alive_steps, 1),
    }


def _lambda_returns(
    rewards: torch.Tensor, values: torch.Tensor, dones: torch.Tensor, gamma: float, lam: float
) -> torch.Tensor:
    """``(B, T)`` lambda-returns from ``rewards (B, T)``, ``values (B, T + 1)`` and ``dones (B, T)``."""
    returns = torch.zeros_like(rewards)
    nxt = values[:, -1]
    for t in reversed(range(rewards.shape[1])):
        cont = gamma * (~dones[:, t]).float()
        nxt = rewards[:, t] + cont * ((1 - lam) * values[:, t + 1] + lam * nxt)
        returns[:, t] = nxt
    return returns


def train_in_imagination(
    policy: TokenPolicy,
    logits_fn: LogitsFn,
    starts: tuple[torch.Tensor, torch.Tensor],
    decoder: str,
    reward_fn: RewardFn,
    config: ImaginationConfig | None = None,
    *,
    itc: ITCDecoder | None = None,
    seed: int = 0,
    max_seconds: float | None = None,
) -> list[float]:
    """Train ``policy`` purely in imagination; return the mean imagined return per update.

    Args:
        policy: the actor-critic (updated in place).
        logits_fn: the world model's next-frame logits.
        starts: real context windows ``(frames (N, T, H, W), actions (N, T - 1))`` to start from.
        decoder: next-frame decoder of the imagined frames.
        reward_fn: reward and termination of imagined transitions.
        config: the settings (default :class:`ImaginationConfig()`).
        itc: ITC configuration.
        seed: seeds the start sampling, the actions and the decoding noise.
        max_seconds: optional wall-clock cap; no update starts after it (the curve's length says how many ran).

    Example:
        >>> stay = lambda f, a: 5.0 * F.one_hot(f[:, -1], 2).float()  # a world where nothing changes
        >>> reward = lambda f, g: (g.flatten(1).sum(1).float(), torch.zeros(len(f), dtype=torch.bool))
        >>> policy = TokenPolicy(2, 4, 2)
        >>> starts = (torch.ones(8, 2, 2, 2, dtype=torch.long), torch.zeros(8, 1, dtype=torch.long))
        >>> config = ImaginationConfig(horizon=3, updates=2)
        >>> curve = train_in_imagination(policy, stay, starts, "argmax", reward, config)
        >>> len(curve), round(curve[0], 3)  # 4 tokens of value 1 over 3 discounted steps
        (2, 11.41)
    """
    config = config or ImaginationConfig()
    if max_seconds is not None and not max_seconds > 0:
        raise ValueError(f"max_seconds must be positive or None, got {max_seconds!r}")
    frames, actions = starts
    started = time.perf_counter()
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.lr)
    generator = torch.Generator().manual_seed(seed)
    curve = []
    for _ in range(config.updates):
        if max_seconds is not None and time.perf_counter() - started >= max_seconds:
            break
        index = torch.randint(0, frames.shape[0], (config.batch_size,), generator=generator)
        out = imagine(
            policy, logits_fn, frames[index], actions[index], config.horizon, decoder, reward_fn, itc=itc,
            generator=generator,
        )  # fmt: skip
        batch, steps = out["actions"].shape
        logits, values = policy(out["frames"].flatten(0, 1))
        logits = logits.reshape(batch, steps + 1, -1)[:, :-1]
        values = values.reshape(batch, steps + 1)
        returns = _lambda_returns(out["rewards"], values.detach(), out["dones"], config.gamma, config.lam)
        mask = out["alive"].float()
        log_probs = F.log_softmax(logits, -1)
        chosen = log_probs.gather(-1, out["actions"].unsqueeze(-1)).squeeze(-1)
        advantage = (returns - values[:, :-1]).detach()
        entropy = -(log_probs.exp() * log_probs).sum(-1)
        denom = mask.sum().clamp(min=1)
        loss = (
            -(chosen * advantage * mask).sum() / denom
            + config.value_coef * (((values[:, :-1] - returns) ** 2) * mask).sum() / denom
            - config.entropy_coef * (entropy * mask).sum() / denom
        )
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
        optimizer.step()
        discount = config.gamma ** torch.arange(steps, dtype=torch.float32)
        curve.append(float((out["rewards"] * discount).sum(1).mean()))
    return curve
