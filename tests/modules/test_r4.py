"""R4 reward model: losses against independent references, data module, errors, checkpoint/resume."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import ot
import pytest
import torch
import torch.nn.functional as F
from lightning.pytorch import Trainer
from scipy.stats import kendalltau, rankdata

from lightning_icml26.data.rl import RatingDataModule, Segments, simulate_ratings
from lightning_icml26.modules.r4 import R4RewardModel, average_ranks, bradley_terry_loss, ranking_mse_loss, rbrl_loss


def _inversions(perm: tuple[int, ...]) -> int:
    return sum(perm[i] > perm[j] for i, j in itertools.combinations(range(len(perm)), 2))


def test_ranking_mse_zero_for_perfect_order_and_grows_with_swaps() -> None:
    n = 5
    perms = list(itertools.permutations(range(n)))
    returns = 2.0 * torch.tensor(perms, dtype=torch.float64)  # gaps of 2 > eps = 1: soft ranks are hard ranks
    per_item = torch.stack([ranking_mse_loss(r[None], regularization_strength=1.0) for r in returns])
    # Independent reference: mean squared difference of scipy ranks and the class ranks 1..n.
    ref = np.array([np.mean((rankdata(p) - np.arange(1, n + 1)) ** 2) for p in perms])
    np.testing.assert_allclose(per_item.numpy(), ref, atol=1e-12)
    assert per_item[0] == 0.0  # identity permutation: perfectly ordered classes
    # Any strictly increasing reward with gaps >= eps also gives zero, at any offset or scale.
    assert ranking_mse_loss(torch.tensor([[-7.0, -3.0, 10.0, 11.0, 30.0]])) == 0.0
    # Adding one more swap along a chain of adjacent transpositions always increases the loss.
    chain = [list(range(n))]
    for i, j in [(3, 4), (2, 3), (1, 2), (0, 1), (3, 4), (2, 3), (1, 2), (3, 4), (2, 3), (3, 4)]:
        nxt = chain[-1].copy()
        nxt[i], nxt[j] = nxt[j], nxt[i]
        chain.append(nxt)
    losses = [float(ranking_mse_loss(2.0 * torch.tensor([c], dtype=torch.float64))) for c in chain]
    assert [_inversions(tuple(c)) for c in chain] == list(range(11))
    assert all(b > a for a, b in zip(losses, losses[1:], strict=False))
    # Across all permutations, the loss is monotone in the number of inversions on average (Spearman footrule).
    by_inv = {k: ref[[_inversions(p) == k for p in perms]].mean() for k in range(11)}
    assert all(by_inv[k + 1] > by_inv[k] for k in range(10))


def test_gradients_flow_through_soft_ranks() -> None:
    returns = torch.tensor([[0.3, 0.1, 0.2, 0.5], [1.0, 0.0, 2.5, 2.0]], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda r: ranking_mse_loss(r), (returns,))
    ranking_mse_loss(returns).backward()
    assert returns.grad is not None
    assert returns.grad.abs().sum() > 0
    # A gradient step reduces the loss of a mis-ordered item.
    start = ranking_mse_loss(returns).item()
    stepped = ranking_mse_loss(returns - 0.1 * returns.grad).item()
    assert stepped < start
    # ... and it reaches the reward network's parameters through the segment returns.
    model = R4RewardModel(3, 1, num_classes=3, ensemble_size=2, hidden=8, depth=1)
    batch = {"obs": torch.randn(4, 3, 6, 3), "act": torch.randn(4, 3, 6, 1), "ratings": torch.arange(3).repeat(4, 1)}
    model.compute_loss(batch).backward()
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None and g.abs().sum() > 0 for g in grads)


def _rbrl_reference(returns: np.ndarray, ratings: np.ndarray, n: int, k: float) -> float:
    r = (returns - returns.min()) / (returns.max() - returns.min())
    srt = np.sort(r)
    counts = np.bincount(ratings, minlength=n)
    bounds = [0.0]
    for c in range(1, n):
        m = counts[:c].sum()
        bounds.append(srt[m - 1] if m > 0 else 0.0)
    bounds.append(1.0)
    logits = np.stack([-k * (r - bounds[c]) * (r - bounds[c + 1]) for c in range(n)], axis=1)
    logp = (
        logits
        - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True))
        - logits.max(1, keepdims=True)
    )
    return float(-logp[np.arange(len(r)), ratings].mean())


def test_rbrl_loss_matches_reference_and_boundaries() -> None:
    gen = torch.Generator().manual_seed(0)
    returns = torch.randn(40, generator=gen, dtype=torch.float64)
    ratings = torch.randint(0, 4, (40,), generator=gen)
    ours = rbrl_loss(returns, ratings, num_classes=4, k=30.0)
    np.testing.assert_allclose(float(ours), _rbrl_reference(returns.numpy(), ratings.numpy(), 4, 30.0), rtol=1e-10)
    # When returns are ordered like the ratings, the class with the largest logit reproduces the class
    # proportions of the batch (RbRL's boundaries split the sorted batch at the cumulative class counts).
    counts = [5, 12, 3, 10]
    ratings = torch.repeat_interleave(torch.arange(4), torch.tensor(counts))
    returns = torch.linspace(0, 1, 30, dtype=torch.float64) ** 2
    normalised = (returns - returns.min()) / (returns.max() - returns.min())
    srt = torch.sort(normalised).values
    cum = torch.tensor(counts).cumsum(0)[:-1]
    bounds = torch.cat([torch.zeros(1, dtype=torch.float64), srt[cum - 1], torch.ones(1, dtype=torch.float64)])
    logits = -30 * (normalised[:, None] - bounds[:-1]) * (normalised[:, None] - bounds[1:])
    # Points strictly inside an interval get a positive logit only for their own class.
    inside = (logits > 0).sum(1) == 1
    assert torch.equal(logits.argmax(1)[inside], ratings[inside])
    assert torch.bincount(logits.argmax(1), minlength=4).tolist() == counts


def test_bradley_terry_matches_closed_form() -> None:
    a, b = torch.tensor([1.0, -2.0, 0.5]), torch.tensor([0.0, 1.0, 0.5])
    p = torch.tensor([1.0, 0.0, 0.5])
    d = a - b
    ref = -(p * F.logsigmoid(d) + (1 - p) * F.logsigmoid(-d)).mean()
    torch.testing.assert_close(bradley_terry_loss(a, b, p), ref)


def test_simulated_ratings_are_quantile_classes_with_noise() -> None:
    returns = torch.randn(1000, generator=torch.Generator().manual_seed(1))
    ratings = simulate_ratings(returns, 4)
    edges = np.quantile(returns.numpy(), [0.25, 0.5, 0.75])
    np.testing.assert_array_equal(ratings.numpy(), np.searchsorted(edges, returns.numpy(), side="right"))
    assert torch.bincount(ratings).tolist() == [250, 250, 250, 250]
    noisy = simulate_ratings(returns, 4, label_noise=0.3, generator=torch.Generator().manual_seed(2))
    flipped = (noisy != ratings).float().mean().item()
    assert 0.25 < flipped < 0.35  # every flip moves to a different class


def test_clear_errors() -> None:
    with pytest.raises(ValueError, match="num_classes must be an integer of at least 2"):
        simulate_ratings(torch.randn(5), num_classes=1)
    with pytest.raises(ValueError, match="num_classes must be an integer of at least 2"):
        R4RewardModel(3, 1, num_classes=1)
    pool = Segments(torch.randn(30, 5, 2), torch.randn(30, 5, 1), torch.zeros(30))
    dm = RatingDataModule(pool, num_classes=3, num_ratings=20, num_heldout=5)
    with pytest.raises(ValueError, match="fewer than two rating classes"):
        dm.setup("fit")  # all true returns equal: one class only
    with pytest.raises(ValueError, match=r"ratings must lie in \{0, ..., 2\}"):
        rbrl_loss(torch.randn(3), torch.tensor([0, 1, 3]), num_classes=3)
    model = R4RewardModel(2, 1, num_classes=3, hidden=4, depth=1)
    batch = {"obs": torch.randn(2, 3, 5, 2), "act": torch.randn(2, 3, 5, 1), "ratings": torch.tensor([[0, 1, 7]] * 2)}
    with pytest.raises(ValueError, match=r"ratings must lie in .* got the value\(s\) \[7\]"):
        model.compute_loss(batch)
    with pytest.raises(ValueError, match="same length"):
        Segments.from_list([torch.zeros(5, 2), torch.zeros(6, 2)], [torch.zeros(5, 1), torch.zeros(6, 1)], [0, 1])
    with pytest.raises(ValueError, match="must agree on"):
        Segments(torch.zeros(2, 5, 2), torch.zeros(2, 6, 1), torch.zeros(2))
    with pytest.raises(ValueError, match="n >= 2 segments"):
        ranking_mse_loss(torch.zeros(4, 1))
    with pytest.raises(TypeError, match="integer tensor"):
        rbrl_loss(torch.randn(3), torch.tensor([0.0, 1.0, 1.0]), num_classes=2)
    with pytest.raises(ValueError, match="loss must be one of"):
        R4RewardModel(2, 1, loss="mse")


@pytest.mark.parametrize("loss", ["rmse", "rbrl"])
def test_l2_penalty_adds_official_unsquared_norms(loss: str) -> None:
    torch.manual_seed(0)
    base = R4RewardModel(2, 1, loss=loss, num_classes=3, ensemble_size=2, hidden=6, depth=2)
    penalised = R4RewardModel(2, 1, loss=loss, num_classes=3, ensemble_size=2, hidden=6, depth=2, l2_lambda=0.01)
    penalised.load_state_dict(base.state_dict())
    if loss == "rmse":
        batch = {
            "obs": torch.randn(4, 3, 5, 2),
            "act": torch.randn(4, 3, 5, 1),
            "ratings": torch.arange(3).repeat(4, 1),
        }
    else:
        batch = {"obs": torch.randn(6, 5, 2), "act": torch.randn(6, 5, 1), "ratings": torch.tensor([0, 1, 2, 0, 1, 2])}
    # Independent reference: numpy Euclidean norm of every parameter tensor (weights and biases), un-squared.
    norms = sum(np.linalg.norm(p.detach().numpy().ravel()) for p in base.net.parameters())
    assert len(list(base.net.parameters())) == 2 * 2 * 3  # 2 members x 3 linear layers x (weight, bias)
    diff = penalised.compute_loss(batch) - base.compute_loss(batch)
    assert float(diff) == pytest.approx(0.01 * norms, rel=1e-5)
    with pytest.raises(ValueError, match="l2_lambda must be a non-negative number, got -0.1"):
        R4RewardModel(2, 1, l2_lambda=-0.1)


def _synthetic(n: int, seed: int) -> Segments:
    gen = torch.Generator().manual_seed(seed)
    obs = torch.randn(n, 8, 3, generator=gen) + torch.randn(n, 1, 3, generator=gen)
    act = torch.randn(n, 8, 1, generator=gen)
    true = (obs @ torch.tensor([1.0, -0.5, 0.2]) + 0.3 * act[..., 0]).sum(-1)
    return Segments(obs, act, true)


def test_data_module_items_one_segment_per_class() -> None:
    pool = _synthetic(200, 0)
    dm = RatingDataModule(pool, loss="rmse", num_classes=4, num_ratings=60, num_heldout=50, batch_size=16)
    dm.setup("fit")
    assert dm.heldout is not None
    assert dm.rated is not None
    assert dm.ratings is not None
    assert len(dm.heldout) == 50
    assert len(dm.rated) == 60
    batch = next(iter(dm.train_dataloader()))
    assert batch["obs"].shape == (15, 4, 8, 3) or batch["obs"].shape[1:] == (4, 8, 3)
    assert torch.equal(batch["ratings"], torch.arange(4).expand_as(batch["ratings"]))
    # Each segment in slot c really has rating c: look every picked segment up in the rated pool.
    flat = dm.rated.obs.reshape(60, -1)
    for item in batch["obs"]:
        for c, seg in enumerate(item):
            index = torch.nonzero((flat == seg.reshape(-1)).all(1)).flatten()
            assert dm.ratings[index[0]] == c
    bt = RatingDataModule(pool, loss="bradley_terry", num_classes=4, num_ratings=60, num_heldout=50)
    bt.setup("fit")
    assert bt.pairs is not None
    assert bt.ratings is not None
    a, b, p = bt.pairs
    assert len(p) == sum(x != y for x, y in itertools.combinations(bt.ratings.tolist(), 2))
    queries = RatingDataModule(pool, loss="bradley_terry", num_ratings=60, num_heldout=50, preference_source="queries")
    queries.setup("fit")
    assert queries.pairs is not None
    a, b, p = queries.pairs
    assert len(p) == 60
    assert torch.equal(p, (a.true_returns > b.true_returns).float())


@pytest.mark.slow
@pytest.mark.parametrize("loss", ["rmse", "rbrl", "bradley_terry"])
def test_training_aligns_reward_with_true_return(loss: str) -> None:
    pool = _synthetic(300, 1)
    dm = RatingDataModule(
        pool, loss=loss, num_classes=5, num_ratings=100, num_heldout=150, batch_size=16, items_per_epoch=160
    )
    model = R4RewardModel(
        3,
        1,
        loss=loss,
        num_classes=5,
        ensemble_size=2,
        hidden=32,
        depth=1,
        optimizer=lambda p: torch.optim.Adam(p, lr=3e-3),
    )
    trainer = Trainer(
        max_steps=80,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        limit_val_batches=0,
    )
    trainer.fit(model, datamodule=dm)
    metrics = trainer.test(model, datamodule=dm, verbose=False)[0]
    assert dm.heldout is not None
    assert dm.rated is not None
    pred = model.segment_returns(dm.heldout.obs, dm.heldout.act).mean(0).detach().numpy()
    tau = kendalltau(pred, dm.heldout.true_returns.numpy()).statistic
    assert metrics["test_kendall_tau"] == pytest.approx(tau, abs=1e-6)
    assert tau > 0.7
    # Normalisation was fitted on the rated segments at the end of training.
    rewards = model.reward(dm.rated.obs, dm.rated.act)
    assert abs(rewards.mean().item()) < 1e-4
    assert abs(rewards.std().item() - 1) < 1e-3


def test_checkpoint_and_resume(tmp_path: Path) -> None:
    pool = _synthetic(120, 2)

    def make_trainer(steps: int) -> Trainer:
        return Trainer(
            max_steps=steps,
            logger=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            num_sanity_val_steps=0,
            limit_val_batches=0,
            default_root_dir=tmp_path,
            enable_checkpointing=False,
        )

    dm = RatingDataModule(pool, num_classes=3, num_ratings=60, num_heldout=20, batch_size=8, items_per_epoch=40)
    model = R4RewardModel(3, 1, num_classes=3, ensemble_size=2, hidden=8, depth=1)
    trainer = make_trainer(6)
    trainer.fit(model, datamodule=dm)
    path = tmp_path / "reward.ckpt"
    trainer.save_checkpoint(path)
    loaded = R4RewardModel.load_from_checkpoint(path)
    assert loaded.hparams["num_classes"] == 3
    assert loaded.hparams["loss"] == "rmse"
    torch.testing.assert_close(loaded.reward(pool.obs, pool.act), model.reward(pool.obs, pool.act))
    assert loaded.reward_std.item() == model.reward_std.item() != 1.0
    # Resume: the step counter and the Adam state continue from the checkpoint.
    resumed = R4RewardModel(3, 1, num_classes=3, ensemble_size=2, hidden=8, depth=1)
    trainer2 = make_trainer(10)
    trainer2.fit(resumed, datamodule=dm, ckpt_path=path)
    assert trainer2.global_step == 10
    adam_steps = {int(s["step"]) for s in trainer2.optimizers[0].state.values()}
    assert adam_steps == {10}


def test_average_ranks_match_scipy() -> None:
    scores = torch.tensor([[2.0, 0.0, 2.0, 1.0], [1.0, 1.0, 1.0, 0.0], [3.0, 2.0, 1.0, 0.0]])
    np.testing.assert_allclose(average_ranks(scores).numpy(), rankdata(scores.numpy(), axis=-1))


def test_ot_ranking_mse_is_the_official_variant() -> None:
    """The OT variant: MSE between OT soft ranks of standardised returns and the ratings' hard ranks."""
    returns = torch.tensor([[0.5, 0.1, 2.0], [3.0, -1.0, 0.0]], dtype=torch.float64)
    loss = ranking_mse_loss(returns, soft_rank_method="ot")
    # independent reference: POT's plan on each standardised row, ranks against (1, 2, 3)
    expected = []
    for row in returns.numpy():
        z = (row - row.mean()) / (row.std(ddof=1) + 1e-8)
        cost = (z[:, None] - np.linspace(0, 1, 3)[None, :]) ** 2
        plan = ot.sinkhorn(
            np.full(3, 1 / 3), np.full(3, 1 / 3), cost, 0.1, method="sinkhorn_log", stopThr=1e-13, numItermax=10**5
        )
        expected.append(((3 * (plan * np.arange(1, 4)).sum(1) - np.arange(1, 4)) ** 2).mean())
    # the loss iterates Sinkhorn to a 1e-5 marginal tolerance (as the official code does), POT to convergence
    assert float(loss) == pytest.approx(float(np.mean(expected)), abs=5e-3)
    # near-perfect order scores far below the reversed order, and the module trains with it
    assert float(ranking_mse_loss(torch.tensor([[0.0, 1.0, 2.0]]), soft_rank_method="ot")) < 0.01
    assert float(ranking_mse_loss(torch.tensor([[2.0, 1.0, 0.0]]), soft_rank_method="ot")) > 2.0
    model = R4RewardModel(2, 1, num_classes=3, hidden=4, depth=1, soft_rank="ot")
    batch = {"obs": torch.randn(4, 3, 5, 2), "act": torch.randn(4, 3, 5, 1), "ratings": torch.arange(3).repeat(4, 1)}
    model.compute_loss(batch).backward()
    assert all(p.grad is not None and bool(torch.isfinite(p.grad).all()) for p in model.parameters())
    with pytest.raises(ValueError, match="soft_rank_method must be one of"):
        ranking_mse_loss(returns, soft_rank_method="sinkhorn")
    with pytest.raises(ValueError, match="soft_rank must be one of"):
        R4RewardModel(2, 1, soft_rank="sinkhorn")


@pytest.mark.parametrize("loss", ["rmse", "bradley_terry"])
def test_ood_regulariser_is_the_official_term(loss: str) -> None:
    torch.manual_seed(0)
    low, high = [-1.0, -2.0, -0.5], [1.0, 2.0, 0.5]
    base = R4RewardModel(2, 1, loss=loss, num_classes=3, ensemble_size=2, hidden=6, depth=1)
    reg = R4RewardModel(2, 1, loss=loss, num_classes=3, ensemble_size=2, hidden=6, depth=1, ood_coeff=0.1,
                        ood_low=low, ood_high=high, ood_batch_size=7)  # fmt: skip
    reg.load_state_dict(base.state_dict())
    if loss == "rmse":
        batch = {
            "obs": torch.randn(4, 3, 5, 2),
            "act": torch.randn(4, 3, 5, 1),
            "ratings": torch.arange(3).repeat(4, 1),
        }
        inside = [(batch["obs"], batch["act"])]
    else:
        batch = {"obs_a": torch.randn(4, 5, 2), "act_a": torch.randn(4, 5, 1), "obs_b": torch.randn(4, 5, 2),
                 "act_b": torch.randn(4, 5, 1), "preference": torch.tensor([1.0, 0.0, 0.5, 1.0])}  # fmt: skip
        inside = [(batch["obs_a"], batch["act_a"]), (batch["obs_b"], batch["act_b"])]
    torch.manual_seed(5)
    diff = reg.compute_loss(batch) - base.compute_loss(batch)
    # reference: the same uniform draws, each member's reward by a direct forward pass of its MLP
    torch.manual_seed(5)
    points = torch.tensor(low) + (torch.tensor(high) - torch.tensor(low)) * torch.rand(7, 3)
    expected = 0.0
    for member in base.net.members:
        steps = torch.cat([member(torch.cat([o, a], -1)).flatten() for o, a in inside])
        expected += float(member(points).mean() - steps.mean())
    assert float(diff) == pytest.approx(0.1 * expected, rel=1e-5, abs=1e-7)
    assert bool(((points >= torch.tensor(low)) & (points <= torch.tensor(high))).all())


def test_ood_option_errors() -> None:
    with pytest.raises(ValueError, match="needs ood_low and ood_high"):
        R4RewardModel(2, 1, ood_coeff=0.1)
    with pytest.raises(ValueError, match="obs_dim \\+ act_dim = 3 numbers, got 2 and 3"):
        R4RewardModel(2, 1, ood_coeff=0.1, ood_low=[0, 0], ood_high=[1, 1, 1])
    with pytest.raises(ValueError, match="every ood_high entry above"):
        R4RewardModel(2, 1, ood_coeff=0.1, ood_low=[0, 0, 0], ood_high=[1, 0, 1])
    with pytest.raises(ValueError, match="ood_coeff is 0"):
        R4RewardModel(2, 1, ood_low=[0, 0, 0], ood_high=[1, 1, 1])
    with pytest.raises(ValueError, match="ood_coeff must be a non-negative number"):
        R4RewardModel(2, 1, ood_coeff=-1.0)
    with pytest.raises(ValueError, match="ood_batch_size must be a positive integer"):
        R4RewardModel(2, 1, ood_coeff=0.1, ood_low=[0, 0, 0], ood_high=[1, 1, 1], ood_batch_size=0)
