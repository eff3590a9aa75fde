"""MinAtar collector, patch tokens and the next-frame noise floor, against brute force and Monte Carlo."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from lightning_icml26.data.rl.minatar import PatchCodebook, collect_minatar, noise_floor, patch_keys

pytest.importorskip("minatar")


def test_patch_keys_match_a_loop() -> None:
    rng = np.random.default_rng(0)
    grids = rng.random((3, 10, 10, 4)) < 0.3
    keys = patch_keys(grids)
    assert keys.shape == (3, 5, 5)
    for n in range(3):
        for r in range(5):
            for c in range(5):
                bits = [grids[n, 2 * r + dr, 2 * c + dc, ch] for dr in range(2) for dc in range(2) for ch in range(4)]
                assert keys[n, r, c] == sum(int(b) << k for k, b in enumerate(bits))
    with pytest.raises(ValueError, match="divisible by patch"):
        patch_keys(np.zeros((9, 10, 4), dtype=bool))


def test_codebook_round_trip_and_nearest_unknown() -> None:
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 2**16, 40)
    book = PatchCodebook.fit(keys)
    assert book.keys[0] == 0
    assert np.array_equal(book.decode(book.encode(keys)), keys)
    unknown = rng.integers(0, 2**16, 30)
    ids = book.encode(unknown)
    for key, token in zip(unknown, ids, strict=True):
        distances = [bin(int(key) ^ int(k)).count("1") for k in book.keys]
        assert distances[token] == min(distances)
    with pytest.raises(ValueError, match="token ids must lie"):
        book.decode(np.array([book.size]))


def test_collector_is_seeded_and_consistent() -> None:
    first = collect_minatar("breakout", 60, seed=3)
    again = collect_minatar("breakout", 60, seed=3)
    other = collect_minatar("breakout", 60, seed=4)
    assert first.num_steps == 60
    assert all(np.array_equal(a, b) for a, b in zip(first.states, again.states, strict=True))
    assert any(not np.array_equal(a, b) for a, b in zip(first.actions, other.actions, strict=False))
    for states, actions, rewards in zip(first.states, first.actions, first.rewards, strict=True):
        assert states.shape == (len(actions) + 1, 10, 10, 4)
        assert actions.min() >= 0
        assert actions.max() < len(first.action_set)
        # Breakout: a reward is exactly one brick removed
        bricks = states[:, :, :, 3].reshape(len(states), -1).sum(1)
        assert np.array_equal(rewards, np.clip(bricks[:-1] - bricks[1:], 0, None).astype(np.float32))
    freeway = collect_minatar("freeway", 20, seed=0, max_episode_steps=10)
    assert [len(a) for a in freeway.actions] == [10, 10]
    assert freeway.states[0].shape[-1] == 7


def test_branches_match_monte_carlo_of_the_sticky_environment() -> None:
    minatar = pytest.importorskip("minatar")
    episodes = collect_minatar("breakout", 12, seed=5, floor_samples=1, max_episode_steps=12)
    step = next(t for t, (_, g) in enumerate(episodes.branches[0]) if len({x.tobytes() for x in g}) > 1)
    probs, grids = episodes.branches[0][step]
    assert sorted(probs.tolist()) == pytest.approx([0.1, 0.9])  # the sticky repeat gives a second outcome
    # replay the episode to step 3, then act many times from copies with fresh randomness
    env = minatar.Environment("breakout", sticky_action_prob=0.1)
    env.seed(5)
    env.reset()
    actions = episodes.actions[0]
    for t in range(step):
        env.act(episodes.action_set[int(actions[t])])
    assert np.array_equal(env.state(), episodes.states[0][step])
    counts: dict[bytes, int] = {}
    trials = 2000
    for k in range(trials):
        clone = copy.deepcopy(env)
        clone.seed(10_000 + k)
        clone.act(episodes.action_set[int(actions[step])])
        key = clone.state().tobytes()
        counts[key] = counts.get(key, 0) + 1
    exact: dict[bytes, float] = {}
    for p, g in zip(probs, grids, strict=True):
        exact[g.tobytes()] = exact.get(g.tobytes(), 0.0) + float(p)
    assert set(counts) <= set(exact)
    for key, p in exact.items():
        assert counts.get(key, 0) / trials == pytest.approx(p, abs=0.03)


def test_noise_floor_brute_force_and_errors() -> None:
    episodes = collect_minatar("breakout", 40, seed=2, floor_samples=1)
    keys = np.concatenate([patch_keys(s) for s in episodes.states])
    book = PatchCodebook.fit(
        np.concatenate([keys.ravel()] + [patch_keys(g).ravel() for e in episodes.branches for _, g in e])
    )
    want = []
    for episode in episodes.branches:
        for probs, grids in episode:
            tokens = book.encode(patch_keys(grids)).reshape(len(probs), -1)
            h = 0.0
            for cell in range(25):
                dist: dict[int, float] = {}
                for p, tok in zip(probs, tokens[:, cell], strict=True):
                    dist[int(tok)] = dist.get(int(tok), 0.0) + float(p)
                h -= sum(p * np.log(p) for p in dist.values() if p > 0)
            want.append(h / 25)
    assert noise_floor(episodes, book) == pytest.approx(float(np.mean(want)))
    assert noise_floor(episodes, book) > 0  # random play changes the paddle action, so the sticky repeat matters
    with pytest.raises(ValueError, match="floor_samples > 0"):
        noise_floor(collect_minatar("breakout", 5, seed=0), book)
    with pytest.raises(ValueError, match="game must be one of"):
        collect_minatar("pong", 5)
    with pytest.raises(ValueError, match="needs a greedy policy"):
        collect_minatar("breakout", 5, epsilon=0.5)
