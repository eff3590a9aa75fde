"""The ArBG DW-4 study's new axes: argument parsing, the probe plan, the range check and the axes claim."""

from __future__ import annotations

import argparse
import importlib
import math

import numpy as np
import pytest
import torch

from lightning_icml26.modules.arbg import ArBG
from lightning_icml26.modules.arbg.module import augment
from tests._support.skips import requires_module

pytestmark = [requires_module("transformers"), requires_module("zuko")]

study = importlib.import_module("benchmarks.arbg_dw4_study")
flow_bench = importlib.import_module("benchmarks.arbg_vs_flow")
heldout_nll, train = flow_bench.heldout_nll, flow_bench.train


def _args(grids: list[str]) -> argparse.Namespace:
    return argparse.Namespace(
        grids=grids, bins=[128, 512], ranges=[6.0], transforms=[4], spline_bins=[8], lrs=[3e-4, 1e-3], archs=["32x2"]
    )


def test_parse_arch() -> None:
    assert study.parse_arch("256X8") == (256, 8)
    for bad in ("128", "128x", "0x4", "ax4", "1x2x3"):
        with pytest.raises(ValueError, match=f"WIDTHxDEPTH.*got '{bad}'"):
            study.parse_arch(bad)


def test_plan_covers_each_axis_for_both_models() -> None:
    plan = study.plan_runs(_args(["size", "conditioning", "lr", "arch"]), [100, 200], 512, 6.0)
    keys = [(m, g, n) for m, g, n, _ in plan]
    assert keys[:4] == [("arbg", "size", 100), ("flow", "size", 100), ("arbg", "size", 200), ("flow", "size", 200)]
    by_grid = {g: [(m, cfg) for m, gg, _, cfg in plan if gg == g] for g in ("conditioning", "lr", "arch")}
    assert [cfg.get("value_embedding") for m, cfg in by_grid["conditioning"] if m == "arbg"] == [True, None]
    assert [(m, cfg.get("com_noise")) for m, cfg in by_grid["conditioning"] if "com_noise" in cfg] == [
        ("arbg", False),
        ("flow", False),
    ]
    assert [(m, cfg["lr"]) for m, cfg in by_grid["lr"]] == [("arbg", 3e-4), ("flow", 3e-4)]  # 1e-3 is the size row
    assert by_grid["arch"] == [
        ("arbg", {"bins": 512, "range": 6.0, "hidden": 32, "layers": 2}),
        ("flow", {"transforms": 4, "spline_bins": 8, "match": {"hidden": 32, "layers": 2}}),
    ]
    assert all(n == 100 for _, g, n, _ in plan if g != "size")  # every other grid at the smallest size


def test_range_check_against_dense_count() -> None:
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(300, 4, 2, generator=gen, dtype=torch.float64) * 1.5
    out = study.range_check(x, x, 1.0, seed=5)
    centred = (x - x.mean(1, keepdim=True)).reshape(300, -1).abs()
    for r in (3, 4):
        assert out["val"][str(r)]["coords"] == pytest.approx(float((centred > r).double().mean()))
        assert out["val"][str(r)]["conformations"] == pytest.approx(float((centred > r).any(1).double().mean()))
    # the training side is the same augmentation drawn with the same generator, five times
    g = torch.Generator().manual_seed(5)
    aug = torch.cat([augment(x, True, 0.5, g) for _ in range(5)]).reshape(1500, -1).abs()
    assert out["train_augmented"]["3"]["coords"] == pytest.approx(float((aug > 3).double().mean()))
    assert out["train_augmented"]["6"]["max_abs"] == pytest.approx(float(aug.max()))
    assert out["val"]["3"]["coords"] > 0  # the check is sensitive at this spread


def test_axes_claim_only_for_grids_that_ran() -> None:
    rows = [
        {"model": "arbg", "grid": "size", "n_train": 4000, "val_nll": 2.0},
        {"model": "flow", "grid": "size", "n_train": 4000, "val_nll": 1.6},
        {"model": "flow", "grid": "lr", "n_train": 4000, "val_nll": 1.5},  # the flow's own probes do not move it
    ]
    assert study.build_targets(rows) == {}
    rows += [
        {"model": "arbg", "grid": "lr", "n_train": 4000, "val_nll": 1.9},
        {"model": "arbg", "grid": "conditioning", "n_train": 4000, "val_nll": 1.7},
        {"model": "arbg", "grid": "arch", "n_train": 4000, "val_nll": math.nan},  # could not run: never chosen
    ]
    claims = study.build_targets(rows)
    assert set(claims) == {"arbg_axes_gain_share_of_gap"}
    assert claims["arbg_axes_gain_share_of_gap"] == {"value": pytest.approx(0.75), "target": ">= 0.5", "met": True}


def _two_atom_arbg(bins: int, scale: float, hidden: int = 8) -> ArBG:
    return ArBG(
        2, 1, num_bins=bins, coord_range=(-3.0, 3.0), scale=scale, hidden_size=hidden, num_layers=1, num_heads=2,
        rotate=False, com_noise=False,
    )  # fmt: skip


def test_marginal_nll_matches_arbg_that_is_the_marginal() -> None:
    # centred two-atom 1-d conformations (a, -a) with a symmetric in sign: both positions share one marginal, so an
    # ArBG whose head ignores the context and outputs that histogram is exactly the product of the marginals
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(400, generator=gen, dtype=torch.float64) * 0.8
    a = torch.cat([a, -a])
    train_x = torch.stack([a, -a], 1)[:, :, None]
    val_a = torch.randn(300, generator=gen, dtype=torch.float64) * 0.8
    val_x = torch.stack([val_a, -val_a], 1)[:, :, None] + 0.3  # scored after centring
    model = _two_atom_arbg(bins=24, scale=1.3)
    counts = torch.bincount(model.tokenizer.encode(train_x)[:, 0], minlength=24).double()
    prior = 0.5
    with torch.no_grad():
        model.head.weight.zero_()
        model.head.bias.copy_(torch.log((counts + prior) / (counts.sum() + 24 * prior)))
    report = study.dependence_report(model, train_x, val_x, copies=3, seed=0, prior=prior)
    assert report["arbg_position_nll"] == pytest.approx(report["marginal_position_nll"], abs=1e-5)
    assert report["dependence_gain"] == pytest.approx(0.0, abs=1e-5)
    # and the per-position figures are in the units of log_prob (nats per coordinate, physical units)
    assert report["arbg_val_nll"] == pytest.approx(heldout_nll(model, val_x), abs=1e-5)
    assert sum(report["arbg_position_nll"]) == pytest.approx(float(-model.log_prob(val_x - 0.3).mean()), abs=1e-4)


def test_marginal_nll_against_known_density_and_bad_input() -> None:
    rng = np.random.default_rng(0)
    edges = np.linspace(-1.0, 3.0, 9)
    train = rng.uniform(-1.0, 3.0, size=(20000, 2))
    val = rng.uniform(-1.0, 3.0, size=(2000, 2))
    assert study.marginal_position_nll(train, val, edges) == pytest.approx([math.log(4.0)] * 2, abs=0.01)
    with pytest.raises(ValueError, match="val has values outside the bin edges"):
        study.marginal_position_nll(train, val + 5.0, edges)
    with pytest.raises(ValueError, match="prior must be >= 0, got -1"):
        study.marginal_position_nll(train, val, edges, prior=-1.0)
    with pytest.raises(ValueError, match="must be \\(N, d\\) and \\(M, d\\)"):
        study.marginal_position_nll(train, val[:, :1], edges)


def test_trained_arbg_shows_dependence_gain_at_checkpoints(request: pytest.FixtureRequest) -> None:
    # position 2 of a centred pair is minus position 1: a model that learns it beats the marginals by about the
    # marginal entropy of that position; the checkpoints come from one run through train(on_epoch=...)
    gen = torch.Generator().manual_seed(1)
    a = torch.randn(512, generator=gen, dtype=torch.float64) * 0.8
    train_x = torch.stack([a, -a], 1)[:, :, None]
    val_a = torch.randn(256, generator=gen, dtype=torch.float64) * 0.8
    val_x = torch.stack([val_a, -val_a], 1)[:, :, None]
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a 32-wide model: threads only add synchronisation on a shared machine
    request.addfinalizer(lambda: torch.set_num_threads(threads))
    model = _two_atom_arbg(bins=12, scale=1.0, hidden=32)
    gains: list[tuple[int, float]] = []

    def measure(epoch: int, steps: int) -> None:
        if epoch in (1, 40):
            gains.append((steps, study.dependence_report(model, train_x, val_x, 1, 0)["dependence_gain"]))

    train(model, train_x, val_x, epochs=40, budget_s=None, batch_size=128, lr=1e-2, seed=0, evals=1, on_epoch=measure)
    assert [s for s, _ in gains] == [4, 160]
    assert gains[-1][1] > 1.0 > gains[0][1]  # the second position's marginal entropy is about 2 nats here
