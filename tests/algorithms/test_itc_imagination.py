"""The imagination actor-critic: lambda-returns, imagined rollouts and learning, against hand computations."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lightning_icml26.algorithms import ImaginationConfig, TokenPolicy, imagine, train_in_imagination
from lightning_icml26.algorithms.itc_imagination import _lambda_returns


def test_lambda_returns_closed_forms() -> None:
    rewards = torch.tensor([[1.0, 0.0, 2.0]])
    values = torch.tensor([[0.5, 0.4, 0.3, 10.0]])
    no_end = torch.zeros(1, 3, dtype=torch.bool)
    g = 0.9
    # lambda = 1: the discounted sum bootstrapped with the last value
    full = _lambda_returns(rewards, values, no_end, g, 1.0)
    assert full[0, 0].item() == pytest.approx(1.0 + g * 0.0 + g**2 * 2.0 + g**3 * 10.0)
    # lambda = 0: one-step targets r_t + g * V_{t+1}
    one = _lambda_returns(rewards, values, no_end, g, 0.0)
    assert one[0].tolist() == pytest.approx([1.0 + g * 0.4, 0.0 + g * 0.3, 2.0 + g * 10.0])
    # an end after step 1 cuts the bootstrap
    ended = _lambda_returns(rewards, values, torch.tensor([[False, True, False]]), g, 1.0)
    assert ended[0, 0].item() == pytest.approx(1.0 + g * 0.0)
    # general lambda: the recursive definition G_t = r_t + g ((1 - l) V_{t+1} + l G_{t+1}) by hand
    lam = 0.5
    mid = _lambda_returns(rewards, values, no_end, g, lam)
    g2 = 2.0 + g * 10.0
    g1 = 0.0 + g * ((1 - lam) * 0.3 + lam * g2)
    g0 = 1.0 + g * ((1 - lam) * 0.4 + lam * g1)
    assert mid[0].tolist() == pytest.approx([g0, g1, g2])


def _shift_right(frames: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """A world where every token moves one cell right (wrapping), with near-certain logits."""
    return 20.0 * F.one_hot(frames[:, -1].roll(1, dims=-1), 3).float()


def test_imagine_rewards_and_ends_by_hand() -> None:
    start = torch.zeros(2, 2, 1, 4, dtype=torch.long)
    start[0, :, 0, 1] = 2  # object at column 1: reaches column 3 after 2 steps
    start[1, :, 0, 3] = 2  # object at column 3: wraps to column 0, back to 3 after 4 steps
    actions = torch.zeros(2, 1, dtype=torch.long)

    def reward_fn(frame: torch.Tensor, nxt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        at_end = nxt[:, 0, 3] == 2
        return at_end.float(), at_end

    policy = TokenPolicy(3, 4, 2)
    gen = torch.Generator().manual_seed(0)
    out = imagine(policy, _shift_right, start, actions, 5, "argmax", reward_fn, generator=gen)
    assert out["frames"].shape == (2, 6, 1, 4)
    assert out["rewards"].tolist() == [[0.0, 1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0, 0.0]]
    assert out["alive"].tolist() == [[True, True, False, False, False], [True, True, True, True, False]]
    with pytest.raises(ValueError, match="decoder must be one of"):
        imagine(policy, _shift_right, start, actions, 2, "beam", reward_fn)


def test_training_in_imagination_finds_the_rewarded_action() -> None:
    # the next frame shows the action just taken everywhere; reward = 1 when that action is 2
    def world(frames: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        shown = actions[:, -1].reshape(-1, 1, 1).expand(-1, 2, 2)
        return 20.0 * F.one_hot(shown, 3).float()

    def reward_fn(frame: torch.Tensor, nxt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return (nxt[:, 0, 0] == 2).float(), torch.zeros(len(frame), dtype=torch.bool)

    torch.manual_seed(0)
    policy = TokenPolicy(3, 4, 3)
    starts = (torch.zeros(16, 2, 2, 2, dtype=torch.long), torch.zeros(16, 1, dtype=torch.long))
    config = ImaginationConfig(horizon=4, updates=40, batch_size=8, lr=2e-2)
    curve = train_in_imagination(policy, world, starts, "argmax", reward_fn, config, seed=0)
    probs = torch.softmax(policy(torch.zeros(1, 2, 2, dtype=torch.long))[0].detach(), -1)[0]
    assert float(probs[2]) > 0.8
    discounted_best = float(np.sum(0.95 ** np.arange(4)))
    assert curve[-1] > 0.8 * discounted_best > curve[0]


def test_bad_settings() -> None:
    with pytest.raises(ValueError, match="horizon must be a positive integer"):
        ImaginationConfig(horizon=0)
    with pytest.raises(ValueError, match="gamma must lie"):
        ImaginationConfig(gamma=1.5)
    with pytest.raises(ValueError, match="frame must be"):
        TokenPolicy(3, 4, 2)(torch.zeros(1, 3, 3, dtype=torch.long))


def test_wall_clock_cap_stops_before_the_next_update() -> None:
    stay = lambda f, a: 5.0 * F.one_hot(f[:, -1], 2).float()  # noqa: E731
    reward = lambda f, g: (g.flatten(1).sum(1).float(), torch.zeros(len(f), dtype=torch.bool))  # noqa: E731
    starts = (torch.ones(4, 2, 2, 2, dtype=torch.long), torch.zeros(4, 1, dtype=torch.long))
    config = ImaginationConfig(horizon=2, updates=5, batch_size=2)
    assert (
        len(train_in_imagination(TokenPolicy(2, 4, 2), stay, starts, "argmax", reward, config, max_seconds=1e-12)) == 0
    )
    assert len(train_in_imagination(TokenPolicy(2, 4, 2), stay, starts, "argmax", reward, config, max_seconds=600)) == 5
    with pytest.raises(ValueError, match="max_seconds must be positive"):
        train_in_imagination(TokenPolicy(2, 4, 2), stay, starts, "argmax", reward, config, max_seconds=0)
