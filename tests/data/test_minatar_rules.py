"""FrameRules read the real rewards and terminations of MinAtar off token frames."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lightning_icml26.data.rl.minatar import FrameRules, PatchCodebook, collect_minatar, patch_keys, token_bits

pytest.importorskip("minatar")


def _tokens(states: np.ndarray, book: PatchCodebook) -> torch.Tensor:
    return torch.as_tensor(book.encode(patch_keys(states)))


def test_breakout_rewards_and_ends_match_the_game() -> None:
    episodes = collect_minatar("breakout", 400, seed=1)
    book = PatchCodebook.fit(np.concatenate([patch_keys(s).ravel() for s in episodes.states]))
    rules = FrameRules("breakout", book)
    for states, rewards, terminal in zip(episodes.states, episodes.rewards, episodes.terminal, strict=True):
        tokens = _tokens(states, book)
        assert torch.equal(rules.grids(tokens), torch.as_tensor(states))  # lossless decoding of known patches
        reward, done = rules(tokens[:-1], tokens[1:])
        assert reward.tolist() == rewards.tolist()
        assert done.tolist() == [False] * (len(rewards) - 1) + [terminal]


def test_freeway_detects_every_crossing() -> None:
    episodes = collect_minatar("freeway", 600, seed=0, epsilon=0.0, policy=lambda grid: 1, max_episode_steps=600)
    book = PatchCodebook.fit(np.concatenate([patch_keys(s).ravel() for s in episodes.states]))
    rules = FrameRules("freeway", book)
    tokens = _tokens(episodes.states[0], book)
    reward, done = rules(tokens[:-1], tokens[1:])
    real = torch.as_tensor(episodes.rewards[0])
    assert real.sum() >= 1  # going up crosses the road at least once in 600 steps
    assert bool((reward[real > 0] == 1).all())
    assert not bool(done.any())
    assert token_bits(book, 7).shape == (book.size, 2, 2, 7)
    with pytest.raises(ValueError, match="game must be one of"):
        FrameRules("pong", book)
