"""MinAtar token windows: windows against a loop, the DataModule's draws against torch.randint."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lightning_icml26.data.rl import TokenWindowDataModule, episode_windows, heuristic_policy


def test_windows_cover_every_run_inside_episodes() -> None:
    tokens = [torch.arange(5).reshape(5, 1, 1), 10 + torch.arange(3).reshape(3, 1, 1)]
    actions = [np.arange(4), np.arange(100, 102)]
    frames, acts, where = episode_windows(tokens, actions, 3)
    expected = [(e, s) for e, tok in enumerate(tokens) for s in range(len(tok) - 2)]
    assert where == expected
    for (e, s), f, a in zip(where, frames, acts, strict=True):
        assert f[:, 0, 0].tolist() == tokens[e][s : s + 3, 0, 0].tolist()
        assert a.tolist() == actions[e][s : s + 2].tolist()
    with pytest.raises(ValueError, match="no episode holds 9 frames"):
        episode_windows(tokens, actions, 9)
    with pytest.raises(ValueError, match="length must be a positive integer"):
        episode_windows(tokens, actions, 0)


def test_training_batches_are_seeded_draws_with_replacement() -> None:
    frames = torch.arange(7).reshape(7, 1, 1, 1).expand(7, 2, 1, 1).contiguous()
    actions = torch.zeros(7, 1, dtype=torch.long)
    dm = TokenWindowDataModule(frames, actions, frames, actions, batch_size=5, num_steps=4, seed=3)
    gen = torch.Generator().manual_seed(3)
    drawn = [batch[0][:, 0, 0, 0].tolist() for batch in dm.train_dataloader()]
    assert drawn == [torch.randint(0, 7, (5,), generator=gen).tolist() for _ in range(4)]
    assert [b[0][:, 0, 0, 0].tolist() for b in dm.train_dataloader()] == drawn  # every epoch the same draws
    assert sum(len(b[0]) for b in dm.val_dataloader()) == 7
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        TokenWindowDataModule(frames, actions, frames, actions, batch_size=0)
    with pytest.raises(ValueError, match="train_frames must be"):
        TokenWindowDataModule(frames, actions[:, :0], frames, actions)


def test_heuristic_refuses_unknown_games() -> None:
    with pytest.raises(ValueError, match="game must be one of"):
        heuristic_policy("pong")
