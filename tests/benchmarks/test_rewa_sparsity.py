"""benchmarks/rewa_sparsity.py helpers: stacked MLPs, GMP schedule and masks, threshold sweep, selection, summary."""

from __future__ import annotations

import argparse
import importlib
import math
import random

import numpy as np
import pytest
import torch
import torch.nn.functional as F

mlp = importlib.import_module("benchmarks._rewa_mlp")
bench = importlib.import_module("benchmarks.rewa_sparsity")

SIZES = (6, 5, 4, 3)


def _loop_forward(weights: list[torch.Tensor], biases: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    h = x
    for i, (w, b) in enumerate(zip(weights, biases, strict=True)):
        h = F.linear(h, w.T, b)
        if i < len(weights) - 1:
            h = torch.relu(h)
    return h


def test_stacked_forward_and_gradients_match_independent_models() -> None:
    net = mlp.StackedMLP(3, SIZES, seed=1)
    with torch.no_grad():  # make the models differ
        for layer in net.weights:
            for g, w in enumerate(layer):
                w.mul_(1.0 + 0.5 * g)
    x, y = torch.randn(7, SIZES[0]), torch.randint(0, SIZES[-1], (7,))
    out = net(x)
    loss = sum(F.cross_entropy(out[g], y) for g in range(3))
    loss.backward()
    for g in range(3):
        ws = [layer[g].detach().clone().requires_grad_() for layer in net.weights]
        bs = [layer[g].detach().clone().requires_grad_() for layer in net.biases]
        ref = _loop_forward(ws, bs, x)
        torch.testing.assert_close(out[g], ref)
        F.cross_entropy(ref, y).backward()
        for w_ref, w in zip(ws, net.model_weights(g), strict=True):
            torch.testing.assert_close(w.grad, w_ref.grad)
    # every model starts from the same initial weights (PyTorch's nn.Linear bound 1 / sqrt(fan_in))
    fresh = mlp.StackedMLP(2, SIZES, seed=4)
    torch.testing.assert_close(fresh.weights[0][0], fresh.weights[0][1])
    assert float(fresh.weights[0][0].detach().abs().max()) <= 1 / math.sqrt(SIZES[0])
    with pytest.raises(ValueError, match="num_models"):
        mlp.StackedMLP(0, SIZES)


def test_lr_schedule_warmup_and_cosine() -> None:
    total, warm = 50, 5
    assert [mlp.lr_at(t, total, warm, 0.2) for t in range(warm)] == pytest.approx([0.04, 0.08, 0.12, 0.16, 0.2])
    for t in range(warm, total):
        expected = 0.1 * (1 + math.cos(math.pi * (t - warm) / (total - warm)))
        assert mlp.lr_at(t, total, warm, 0.2) == pytest.approx(expected)


def test_gmp_cubic_schedule() -> None:
    s_f, t0, t1 = 0.9, 10, 50
    assert mlp.gmp_sparsity(0, s_f, t0, t1) == 0.0
    assert mlp.gmp_sparsity(t1 + 5, s_f, t0, t1) == pytest.approx(s_f)
    for t in range(t0, t1 + 1):
        assert mlp.gmp_sparsity(t, s_f, t0, t1) == pytest.approx(s_f * (1 - (1 - (t - t0) / (t1 - t0)) ** 3))
    with pytest.raises(ValueError, match="final"):
        mlp.gmp_sparsity(0, 1.0, t0, t1)
    with pytest.raises(ValueError, match="end must exceed start"):
        mlp.gmp_sparsity(0, 0.5, 5, 5)


def test_global_magnitude_masks_remove_the_smallest_entries() -> None:
    gen = torch.Generator().manual_seed(0)
    weights = [torch.randn(4, 5, generator=gen), torch.randn(7, generator=gen)]
    flat = np.concatenate([w.numpy().ravel() for w in weights])
    for sparsity in (0.0, 0.3, 0.5, 0.9):
        masks = mlp.global_magnitude_masks(weights, sparsity)
        kept = np.concatenate([m.numpy().ravel() for m in masks])
        k = round(sparsity * flat.size)
        assert (~kept).sum() == k
        if 0 < k < flat.size:  # every removed magnitude is below every kept one
            assert np.abs(flat[~kept]).max() < np.abs(flat[kept]).min()


def test_threshold_sweep_against_brute_force() -> None:
    net = mlp.StackedMLP(2, SIZES, seed=2)
    x, y = torch.randn(40, SIZES[0]), torch.randint(0, SIZES[-1], (40,))
    thresholds = [0.0, 0.05, 0.1, 0.2, 0.3, 10.0]
    sweep = mlp.sweep_thresholds(net, 1, thresholds, (x, y))
    ws = [layer[1].detach() for layer in net.weights]
    bs = [layer[1].detach() for layer in net.biases]
    for thr, point in zip(thresholds, sweep, strict=True):
        pruned = [w * (w.abs() > thr) for w in ws]
        nnz = sum(int(np.count_nonzero(w.numpy())) for w in pruned)
        assert point["compression_ratio"] == pytest.approx(sum(w.numel() for w in ws) / max(nnz, 1))
        acc = float((_loop_forward(pruned, bs, x).argmax(-1) == y).float().mean())
        assert point["accuracy"] == pytest.approx(acc)
    torch.testing.assert_close(net.weights[0][1].detach(), ws[0])  # model left unchanged


def test_compression_at_drop_matches_brute_force() -> None:
    rng = random.Random(0)
    cands = [
        {"val_accuracy": rng.uniform(0.8, 0.9), "compression_ratio": rng.uniform(1, 50), "id": i} for i in range(60)
    ]
    for drop in (0.005, 0.01, 0.02, 0.035):
        ok = [c for c in cands if c["val_accuracy"] >= 0.9 - drop]
        got = mlp.compression_at_drop(cands, 0.9, drop)
        if ok:
            assert got["id"] == max(ok, key=lambda c: c["compression_ratio"])["id"]
        else:
            assert got is None
    assert mlp.compression_at_drop(cands, 2.0, 0.01) is None
    with pytest.raises(ValueError, match="drop"):
        mlp.compression_at_drop(cands, 0.9, -0.1)


def test_summarise_takes_per_seed_ratios_and_test_drops() -> None:
    def seed(rewa: float, l1: float, dense_test: float, rewa_test: float) -> dict:
        chosen = {}
        for method in ("ReWA", "L1", "L1 prox", "L1 sub", "GMP", "dense"):
            for drop in bench.DROPS:
                cr = rewa if method == "ReWA" else l1
                test = rewa_test if method == "ReWA" else dense_test
                chosen[f"{method}@{drop * 100:g}"] = {"compression_ratio": cr, "test_accuracy": test}
        return {"dense_test_accuracy": dense_test, "chosen": chosen}

    out = bench.summarise([seed(30.0, 10.0, 0.9, 0.87), seed(20.0, 10.0, 0.88, 0.86)])
    s = out["summary"]["ReWA@3.5"]
    assert s["cr_over_l1_per_seed"] == [3.0, 2.0]
    assert s["cr_over_l1_mean"] == pytest.approx(2.5)
    assert s["cr_over_l1_sd"] == pytest.approx(np.std([3.0, 2.0], ddof=1))
    assert s["test_drop_mean"] == pytest.approx(2.5)
    assert bench.build_targets(out)["rewa_cr_over_l1"] == {"value": 2.5, "target": ">= 2", "met": True}


def test_summarise_marks_an_unmeasured_point_nan_instead_of_failing() -> None:
    def seed(l1: float) -> dict:
        chosen = {
            f"{m}@{d * 100:g}": {"compression_ratio": 10.0 if m != "dense" else l1, "test_accuracy": 0.9}
            for m in ("ReWA", "L1", "L1 prox", "L1 sub", "GMP", "dense")
            for d in bench.DROPS
        }
        return {"dense_test_accuracy": 0.9, "chosen": chosen}

    out = bench.summarise([seed(float("nan")), seed(2.0), seed(3.0)])
    assert math.isnan(out["summary"]["dense@3.5"]["cr_mean"])
    assert math.isnan(out["summary"]["dense@3.5"]["cr_sd"])
    assert out["summary"]["ReWA@3.5"]["cr_over_l1_sd"] == 0.0


def _record(seeds: list[int], **overrides: str) -> dict:
    args = {"quick": "False", "json": "a.json", "seed": "0", "seeds": "2", "epochs": "30", "threads": "2"}
    args.update(overrides)
    per_seed = [{"seed": s, "dense_val_accuracy": 0.9} for s in seeds]
    return {"benchmark": "rewa_sparsity", "args": args, "figures": {"per_seed": per_seed}}


def test_load_for_merge_checks_settings_and_keeps_the_stored_seeds() -> None:
    ns = argparse.Namespace(quick=False, json=None, seed=2, seeds=1, epochs=30, threads=1, merge="a.json")
    got = bench.load_for_merge(_record([0, 1]), ns)
    assert [s["seed"] for s in got] == [0, 1]
    with pytest.raises(ValueError, match="'epochs' is 30 here but '5'"):
        bench.load_for_merge(_record([0, 1], epochs="5"), ns)
    with pytest.raises(ValueError, match="seed twice"):
        bench.load_for_merge(_record([0, 0]), ns)
    with pytest.raises(ValueError, match="benchmark="):
        bench.load_for_merge({**_record([0]), "benchmark": "other"}, ns)
    with pytest.raises(ValueError, match="per_seed"):
        bench.load_for_merge({**_record([0]), "figures": {}}, ns)


def test_merged_seeds_summarise_like_one_run() -> None:
    def seed(k: int, rewa: float) -> dict:
        chosen = {
            f"{m}@{d * 100:g}": {"compression_ratio": rewa if m == "ReWA" else 10.0, "test_accuracy": 0.9}
            for m in ("ReWA", "L1", "L1 prox", "L1 sub", "GMP", "dense")
            for d in bench.DROPS
        }
        return {"seed": k, "dense_test_accuracy": 0.9, "chosen": chosen}

    ns = argparse.Namespace(quick=False, json=None, seed=2, seeds=1, epochs=30, threads=1, merge="a.json")
    stored = _record([0, 1])
    stored["figures"]["per_seed"] = [seed(0, 10.0), seed(1, 20.0)]
    merged = bench.load_for_merge(stored, ns) + [seed(2, 30.0)]
    s = bench.summarise(merged)["summary"]["ReWA@3.5"]
    assert s["cr_over_l1_per_seed"] == [1.0, 2.0, 3.0]
    assert s["cr_over_l1_mean"] == pytest.approx(2.0)
    assert s["cr_over_l1_sd"] == pytest.approx(1.0)
