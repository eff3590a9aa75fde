"""ITC decoder, rollouts, the token world model and the recipes."""

from __future__ import annotations

import itertools
import sys

import pytest
import torch
import torch.nn.functional as F

from lightning_icml26 import _recipes
from lightning_icml26.modules.itc import TokenWorldModel, VQTokenizer, rollout
from lightning_icml26.ops import ITCDecoder, build_itc_cost, decode_next_frame, grid_coordinates, solve_assignment


def _random_frame(batch: int, height: int, width: int, vocab: int, seed: int) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, height, width), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("solver", ["sinkhorn", "pot", "hungarian"])
def test_assignment_is_one_to_one(solver: str) -> None:
    prev = _random_frame(3, 3, 4, 5, 0)
    logits = torch.randn(3, 3, 4, 5, generator=torch.Generator().manual_seed(1))
    out = ITCDecoder(solver=solver).assign(logits, prev, generator=torch.Generator().manual_seed(2))
    source, cost = out["source"], out["cost"]
    length = 12
    for b in range(3):
        rows = source[b].tolist()
        assert len(set(rows)) == length  # every position has its own row
        assert all(0 <= r < 2 * length for r in rows)
        # never a forbidden pair: copies within the cutoff, generator g only at position g
        assert all(torch.isfinite(cost[b, r, j]) for j, r in enumerate(rows))


def test_hungarian_is_optimal_on_small_problems() -> None:
    gen = torch.Generator().manual_seed(3)
    cost = torch.rand(2, 5, 5, generator=gen, dtype=torch.float64)
    cost[0, 0, :2] = float("inf")
    rows = solve_assignment(cost, solver="hungarian")
    for b in range(2):
        best = min(sum(float(cost[b, p[j], j]) for j in range(5)) for p in itertools.permutations(range(5)))
        assert sum(float(cost[b, rows[b, j], j]) for j in range(5)) == pytest.approx(best)


@pytest.mark.parametrize("solver", ["sinkhorn", "pot", "hungarian"])
def test_identity_distribution_copies_every_token(solver: str) -> None:
    prev = _random_frame(2, 4, 5, 6, 4)
    logits = 12.0 * F.one_hot(prev, 6).float()  # the model's distribution is "every token stays"
    decoder = ITCDecoder(solver=solver)
    out = decoder.assign(logits, prev, generator=torch.Generator().manual_seed(5))
    assert out["source"].tolist() == [list(range(20))] * 2  # copy i -> i for every cell
    assert torch.equal(decoder(logits, prev, generator=torch.Generator().manual_seed(5)), prev)


def test_translation_is_recovered_as_copies_and_far_moves_are_not() -> None:
    prev = torch.zeros(1, 5, 5, dtype=torch.long)
    prev[0, 2, 1] = 3
    target = torch.zeros(1, 5, 5, dtype=torch.long)
    target[0, 2, 2] = 3  # object moved one cell right
    logits = 12.0 * F.one_hot(target, 4).float()
    out = ITCDecoder(alpha=0.1, solver="hungarian").assign(logits, prev, generator=torch.Generator().manual_seed(0))
    assert int(out["source"][0, 2 * 5 + 2]) == 2 * 5 + 1  # the object at (2,1) is copied to (2,2)
    far = torch.zeros(1, 5, 5, dtype=torch.long)
    far[0, 2, 4] = 3  # a 3-cell jump: beyond the cutoff, so the token must be generated
    out = ITCDecoder(alpha=0.1, solver="hungarian").assign(
        12.0 * F.one_hot(far, 4).float(), prev, generator=torch.Generator().manual_seed(0)
    )
    assert int(out["source"][0, 2 * 5 + 4]) >= 25


def test_cost_matrix_matches_dense_definition() -> None:
    gen = torch.Generator().manual_seed(6)
    probs = torch.softmax(torch.randn(1, 6, 4, generator=gen), -1)
    prev = torch.randint(0, 4, (1, 6), generator=gen)
    sampled = torch.randint(0, 4, (1, 6), generator=gen)
    coords = grid_coordinates(2, 3)
    cost = build_itc_cost(probs, prev, sampled, coords, alpha=0.5, trash_cost=0.2, distance_cutoff=1.5)
    for i in range(6):
        for j in range(6):
            d = float(((coords[i] - coords[j]) ** 2).sum())
            want = float("inf") if d > 1.5 else 0.5 * d - float(probs[0, j, prev[0, i]]) - 0.2
            assert float(cost[0, i, j]) == pytest.approx(want)
            assert float(cost[0, 6 + i, j]) == (-float(probs[0, j, sampled[0, j]]) if i == j else float("inf"))
    assert torch.all(cost[0, :, 6:] == 0)


def test_copy_mask_and_done_use_generated_tokens() -> None:
    prev = _random_frame(2, 3, 3, 4, 7)
    logits = torch.zeros(2, 3, 3, 4)
    logits[..., 0] = 5.0  # the sample is (almost surely) token 0 everywhere
    gumbel = torch.zeros(2, 3, 3, 4)
    mask = torch.zeros(3, 3, dtype=torch.bool)
    out = ITCDecoder(trash_cost=10.0)(logits, prev, copy_mask=mask, gumbel=gumbel)
    assert torch.all(out == 0)
    out = ITCDecoder(trash_cost=10.0)(logits, prev, done=torch.tensor([True, False]), gumbel=gumbel)
    assert torch.all(out[0] == 0)
    assert torch.equal(out[1], prev[1])  # big copy bonus: episode 1 copies


def test_clear_errors() -> None:
    prev = _random_frame(1, 2, 2, 3, 0)
    with pytest.raises(ValueError, match="decoder must be one of"):
        decode_next_frame(torch.zeros(1, 2, 2, 3), prev, "beam")
    with pytest.raises(ValueError, match="prev_frame must have shape"):
        decode_next_frame(torch.zeros(1, 2, 3, 3), prev, "itc")
    cost = torch.zeros(1, 3, 3)
    cost[0, :, 1] = float("inf")
    with pytest.raises(ValueError, match="infeasible"):
        solve_assignment(cost)
    cost = torch.zeros(1, 3, 3)
    cost[0, :2, :2] = float("inf")  # rows 0, 1 may only use column 2: no perfect matching
    with pytest.raises(ValueError, match="infeasible"):
        solve_assignment(cost, solver="hungarian")
    with pytest.raises(ValueError, match="nan or inf"):
        ITCDecoder()(torch.full((1, 2, 2, 3), float("nan")), prev)
    with pytest.raises(ValueError, match="solver"):
        ITCDecoder(solver="auction")
    model = TokenWorldModel(vocab_size=3, height=2, width=2, num_actions=2, d_model=8, num_heads=2)
    with pytest.raises(ValueError, match=r"model expects \(H, W\) = \(2, 2\)"):
        model(torch.zeros(1, 1, 3, 2, dtype=torch.long), torch.zeros(1, 1, dtype=torch.long))
    with pytest.raises(ValueError, match="decoder must be one of"):
        rollout(model, torch.zeros(1, 1, 2, 2, dtype=torch.long), torch.zeros(1, 3, dtype=torch.long), 2, "greedy")
    with pytest.raises(ValueError, match="actions must cover"):
        rollout(model, torch.zeros(1, 1, 2, 2, dtype=torch.long), torch.zeros(1, 1, dtype=torch.long), 3, "itc")


@pytest.mark.parametrize("solver", ["sinkhorn", "pot", "hungarian"])
def test_infeasible_costs_raise_for_every_solver(solver: str) -> None:
    cost = torch.zeros(2, 4, 4)
    cost[1, :3, :3] = float("inf")  # problem 1: three rows share one allowed column
    with pytest.raises(ValueError, match="problem 1 is infeasible"):
        solve_assignment(cost, solver=solver)
    with pytest.raises(ValueError, match="nan or -inf"):
        solve_assignment(torch.full((1, 2, 2), float("-inf")), solver=solver)


def test_project_sinkhorn_and_pot_give_the_same_itc_assignment() -> None:
    prev = _random_frame(2, 3, 3, 4, 11)
    logits = 2.0 * torch.randn(2, 3, 3, 4, generator=torch.Generator().manual_seed(12))
    gumbel = torch.zeros(2, 3, 3, 4)
    ours = ITCDecoder(solver="sinkhorn", reg=0.1, num_iters=300).assign(logits, prev, gumbel=gumbel)
    ref = ITCDecoder(solver="pot", reg=0.1, num_iters=300).assign(logits, prev, gumbel=gumbel)
    assert torch.equal(ours["source"], ref["source"])


def test_frames_that_do_not_match_the_model_raise() -> None:
    model = TokenWorldModel(vocab_size=3, height=2, width=3, num_actions=2, d_model=8, num_heads=2).eval()
    actions = torch.zeros(1, 4, dtype=torch.long)
    with pytest.raises(ValueError, match=r"frames have cells \(3, 2\) but the model expects \(H, W\) = \(2, 3\)"):
        rollout(model, torch.zeros(1, 1, 3, 2, dtype=torch.long), actions, 2, "itc")
    with pytest.raises(ValueError, match=r"frames must be a \(B, T0, H, W\)"):
        rollout(model, torch.zeros(1, 2, 3, dtype=torch.long), actions, 2, "sample")
    with pytest.raises(ValueError, match="frame tokens must lie in"):
        rollout(model, torch.full((1, 1, 2, 3), 5, dtype=torch.long), actions, 2, "argmax")
    with pytest.raises(ValueError, match="eval_decoders must be drawn from"):
        TokenWorldModel(vocab_size=3, height=2, width=3, num_actions=2, eval_decoders=["itc", "nucleus"])
    with pytest.raises(ValueError, match="logits must be a"):
        decode_next_frame(torch.zeros(1, 6, 3), torch.zeros(1, 2, 3, dtype=torch.long), "itc")


def test_rollout_decoders_and_shared_noise() -> None:
    model = TokenWorldModel(vocab_size=4, height=3, width=3, num_actions=2, d_model=8, num_heads=2).eval()
    frames = _random_frame(2, 3, 3, 4, 9).unsqueeze(1)
    actions = torch.zeros(2, 4, dtype=torch.long)
    outs = {
        d: rollout(model, frames, actions, 4, d, generator=torch.Generator().manual_seed(0))
        for d in ("itc", "sample", "argmax")
    }
    assert all(o.shape == (2, 4, 3, 3) for o in outs.values())
    first = model.next_frame_logits(frames, actions[:, :1])
    assert torch.equal(outs["argmax"][:, 0], first.argmax(-1))
    again = rollout(model, frames, actions, 4, "sample", generator=torch.Generator().manual_seed(0))
    assert torch.equal(again, outs["sample"])


def test_world_model_learns_a_deterministic_shift() -> None:
    torch.manual_seed(0)
    model = TokenWorldModel(
        vocab_size=3, height=1, width=4, num_actions=1, context=1, d_model=16, num_heads=2, num_layers=1
    )
    opt = torch.optim.Adam(model.parameters(), lr=2e-2)

    def shifted(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        frames = torch.randint(0, 3, (n, 1, 1, 4))
        nxt = torch.roll(frames, 1, dims=-1)  # cells rotate right by one
        return torch.cat([frames, nxt], 1), torch.zeros(n, 1, dtype=torch.long)

    batch = shifted(64)
    for _ in range(60):
        loss, _ = model._next_frame_loss(*batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        _, heldout_acc = model._next_frame_loss(*shifted(256))  # fresh frames: the rule, not the batch, was learnt
    assert float(heldout_acc) > 0.95


def test_vq_tokenizer_nearest_code_and_loss_decreases() -> None:
    vq = VQTokenizer(channels=1, patch=2, codebook_size=4, dim=3)
    images = torch.rand(6, 1, 4, 4)
    tokens = vq.encode(images)
    z = vq.encoder(vq._patches(images))
    dense = torch.cdist(z.reshape(-1, 3), vq.codebook.weight).argmin(-1).reshape(tokens.shape)
    assert torch.equal(tokens, dense)
    opt = torch.optim.Adam(vq.parameters(), lr=1e-2)
    first = float(vq.loss(images))
    for _ in range(60):
        loss = vq.loss(images)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(vq.loss(images)) < first


@pytest.mark.slow
def test_itc_gridworld_recipe_end_to_end(tmp_path) -> None:
    overrides = [
        "trainer.max_epochs=1",
        "trainer.limit_train_batches=3",
        "trainer.limit_val_batches=1",
        "trainer.enable_progress_bar=false",
        "data.num_train_episodes=8",
        "data.num_val_episodes=4",
        "data.num_test_episodes=4",
        "data.test_horizon=3",
        "data.batch_size=4",
        "model.d_model=8",
        "model.num_heads=2",
        "model.num_layers=1",
    ]
    cfg = _recipes.compose("itc_gridworld", overrides, run_dir=tmp_path)
    summary = _recipes.run(cfg)
    metrics = summary["metrics"]
    for name in ("itc", "sample", "argmax"):
        assert 0.0 <= metrics[f"test_{name}_token_accuracy_h1"] <= 1.0
        assert metrics[f"test_{name}_duplication_rate_last"] >= 0.0
    assert (tmp_path / "summary.json").is_file()


def test_itc_minigrid_recipe_end_to_end(tmp_path) -> None:
    pytest.importorskip("minigrid")
    overrides = [
        "trainer.max_epochs=1",
        "trainer.limit_train_batches=2",
        "trainer.limit_val_batches=1",
        "trainer.enable_progress_bar=false",
        "data.num_train_episodes=2",
        "data.num_val_episodes=1",
        "data.num_test_episodes=2",
        "data.episode_length=6",
        "data.test_horizon=3",
        "data.batch_size=4",
        "model.d_model=8",
        "model.num_heads=2",
        "model.num_layers=1",
    ]
    summary = _recipes.run(_recipes.compose("itc_minigrid", overrides, run_dir=tmp_path))
    assert 0.0 <= summary["metrics"]["test_itc_token_accuracy_h1"] <= 1.0


@pytest.mark.slow
def test_lazy_imports() -> None:
    import subprocess

    code = (
        "import sys, lightning_icml26.data, lightning_icml26.modules, lightning_icml26.modules.itc; "
        "print(any(m in sys.modules for m in ('gymnasium', 'minigrid', 'ot')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "False"


def test_zero_neighbor_distance_hand_computed() -> None:
    # a 1 x 3 strip: squared distances 0 (stay), 1 (neighbour) and 4 (two cells); alpha = 0.5, tau = 0.1
    probs = torch.tensor([[[0.7, 0.3], [0.2, 0.8], [0.6, 0.4]]])  # p_j over 2 tokens at positions j = 0, 1, 2
    prev = torch.tensor([[1, 0, 0]])
    sampled = torch.tensor([[0, 1, 0]])
    coords = grid_coordinates(1, 3)
    off = build_itc_cost(probs, prev, sampled, coords, alpha=0.5, trash_cost=0.1, distance_cutoff=4.1)
    on = build_itc_cost(
        probs, prev, sampled, coords, alpha=0.5, trash_cost=0.1, distance_cutoff=4.1, zero_neighbor_distance=True
    )
    # row i = 0 holds token 1: p_j[1] = 0.3, 0.8, 0.4 at j = 0, 1, 2
    assert on[0, 0, :3].tolist() == pytest.approx([-0.3 - 0.1, -0.8 - 0.1, 0.5 * 4 - 0.4 - 0.1])
    assert off[0, 0, :3].tolist() == pytest.approx([-0.3 - 0.1, 0.5 * 1 - 0.8 - 0.1, 0.5 * 4 - 0.4 - 0.1])
    # row i = 1 holds token 0: p_j[0] = 0.7, 0.2, 0.6; both neighbours are free with the option
    assert on[0, 1, :3].tolist() == pytest.approx([-0.7 - 0.1, -0.2 - 0.1, -0.6 - 0.1])
    # only the copy block changes; a cutoff below 1 still forbids the neighbours
    assert torch.equal(on[0, 3:], off[0, 3:])
    assert torch.equal(on[0, :3, 3:], off[0, :3, 3:])
    tight = build_itc_cost(
        probs, prev, sampled, coords, alpha=0.5, trash_cost=0.1, distance_cutoff=0.5, zero_neighbor_distance=True
    )
    assert torch.isinf(tight[0, 0, 1])
    assert torch.isinf(tight[0, 1, 0])


def test_zero_neighbor_distance_decoder_flag() -> None:
    prev = torch.zeros(1, 3, 3, dtype=torch.long)
    prev[0, 1, 1] = 2
    gumbel = torch.zeros(1, 3, 3, 3)
    logits = torch.zeros(1, 3, 3, 3)
    logits[..., 0] = 3.0
    logits[0, 1, 2, 2] = 2.9  # the object probably moves one cell right
    logits[0, 1, 1, 2] = 2.9
    decoder = ITCDecoder(alpha=1.0, trash_cost=0.05, solver="hungarian")
    flagged = ITCDecoder(alpha=1.0, trash_cost=0.05, solver="hungarian", use_zero_neighbor_distance=True)
    cost_off = decoder.assign(logits, prev, gumbel=gumbel)["cost"]
    cost_on = flagged.assign(logits, prev, gumbel=gumbel)["cost"]
    dist = torch.cdist(grid_coordinates(3, 3), grid_coordinates(3, 3)).pow(2)
    allowed = dist <= 4.1
    assert torch.equal(torch.isinf(cost_on[0, :9, :9]), ~allowed)  # the cutoff is unchanged
    diff = (cost_off - cost_on)[0, :9, :9][allowed]
    assert torch.allclose(diff, (dist[allowed] == 1).float())  # alpha * 1 saved exactly on the 4 neighbours
    with pytest.raises(TypeError, match="use_zero_neighbor_distance"):
        ITCDecoder(use_zero_neighbor_distance="yes")  # type: ignore[arg-type]
