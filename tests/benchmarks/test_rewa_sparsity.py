"""benchmarks/rewa_sparsity.py: each cell's recipe overrides, the validation choice and the summary over seeds."""

from __future__ import annotations

import argparse
import importlib
import math
import random

import numpy as np
import pytest

bench = importlib.import_module("benchmarks.rewa_sparsity")


def _args(**kw: object) -> argparse.Namespace:
    base = {"epochs": 3, "num_val": 100, "num_train": 200, "num_test": None, "warmup_epochs": 1}
    return argparse.Namespace(**{**base, **kw})


def test_overrides_name_each_method_and_its_strength() -> None:
    rewa = bench.overrides("ReWA", 1e-3, 4, _args())
    assert {"seed=4", "trainer.max_epochs=3", "data.num_train=200", "data.num_test=null"} <= set(rewa)
    assert rewa[-1] == "model.optimizer.weight_decay=0.001"
    sub = bench.overrides("L1 sub", 3e-4, 0, _args())
    assert {"model/optimizer=l1_sgd", "model.optimizer.mode=subgradient", "model.optimizer.l1=0.0003"} <= set(sub)
    assert "model.optimizer.weight_decay=0.0" in sub
    gmp = bench.overrides("GMP", 0.9, 0, _args())
    assert "model/optimizer=sgd" in gmp
    assert "model.optimizer.weight_decay=0.0001" in gmp
    assert "+callbacks.gmp.final_sparsity=0.9" in gmp
    assert "+callbacks.gmp._target_=lightning_icml26.callbacks.GradualMagnitudePrune" in gmp
    assert not any("gmp" in o for o in bench.overrides("dense", 1e-4, 0, _args()))


def test_best_at_drop_matches_brute_force() -> None:
    rng = random.Random(0)
    points = [{"score": rng.uniform(0.8, 0.9), "compression_ratio": rng.uniform(1, 50), "id": i} for i in range(60)]
    for drop in bench.DROPS:
        ok = [p for p in points if p["score"] >= 0.9 - drop]
        got = bench.best_at_drop(points, 0.9, drop)
        assert got["id"] == max(ok, key=lambda p: p["compression_ratio"])["id"] if ok else got is None
    assert bench.best_at_drop(points, 2.0, 0.01) is None


def _cell(method: str, strength: float, points: list[tuple[float, float, float]]) -> dict:
    sweep = [
        {"threshold": i, "score": v, "test_score": t, "compression_ratio": c} for i, (v, t, c) in enumerate(points)
    ]
    return {"method": method, "strength": strength, "sweep": sweep}


def test_seed_figures_choose_on_validation_and_report_test() -> None:
    cells = [
        _cell("dense", 1e-4, [(0.90, 0.89, 1.0)]),
        _cell("ReWA", 1e-3, [(0.89, 0.88, 5.0), (0.87, 0.80, 40.0)]),  # 3 pt below dense at CR 40
        _cell("L1 prox", 1e-4, [(0.895, 0.89, 8.0)]),
        _cell("L1 sub", 1e-4, [(0.88, 0.87, 20.0)]),
    ]
    figures = bench.seed_figures(cells, seed=0)
    assert figures["dense_val_accuracy"] == 0.90
    assert figures["dense_test_accuracy"] == 0.89
    assert figures["chosen"]["ReWA@1"]["compression_ratio"] == 5.0
    assert figures["chosen"]["ReWA@3.5"]["compression_ratio"] == 40.0
    assert figures["chosen"]["ReWA@3.5"]["test_score"] == 0.80
    assert figures["chosen"]["L1@1"]["arm"] == "L1 prox"  # the better L1 form within the drop
    assert figures["chosen"]["L1@2"]["arm"] == "L1 sub"
    assert math.isnan(figures["chosen"]["GMP@1"]["compression_ratio"])  # not run: unmeasured


def test_summarise_takes_per_seed_ratios_and_test_drops() -> None:
    def seed(rewa: float, l1: float, dense_test: float, rewa_test: float) -> dict:
        chosen = {
            f"{m}@{d * 100:g}": {
                "compression_ratio": rewa if m == "ReWA" else l1,
                "test_score": rewa_test if m == "ReWA" else dense_test,
            }
            for m in ("ReWA", "L1", "L1 prox", "L1 sub", "GMP", "dense")
            for d in bench.DROPS
        }
        return {"dense_test_accuracy": dense_test, "chosen": chosen}

    out = bench.summarise([seed(30.0, 10.0, 0.9, 0.87), seed(20.0, 10.0, 0.88, 0.86)])
    s = out["summary"]["ReWA@3.5"]
    assert s["cr_over_l1_per_seed"] == [3.0, 2.0]
    assert s["cr_over_l1_mean"] == pytest.approx(2.5)
    assert s["CR / L1 CR sd"] == pytest.approx(np.std([3.0, 2.0], ddof=1))
    assert s["test drop (pt) mean"] == pytest.approx(2.5)
    assert bench.build_targets(out)["rewa_cr_over_l1"] == {"value": 2.5, "target": ">= 2", "met": True}
    nan_seed = seed(30.0, float("nan"), 0.9, 0.87)
    assert bench.build_targets(bench.summarise([nan_seed]))["rewa_cr_over_l1"]["met"] is False
