"""benchmarks/novelty_selfplay.py: per-seed summaries, targets and the void rule."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

bench = importlib.import_module("benchmarks.novelty_selfplay")


def _run(scores: list[float], coverage: float) -> dict:
    return {"score": scores, "coverage": [coverage] * len(scores), "seen_rate": [0.5] * len(scores)}


def _summaries(unc_final: float) -> dict:
    return {
        "uncertainty": bench._summary([_run([40, 70, unc_final], 0.5), _run([40, 60, unc_final], 0.7)]),
        "r_zero": bench._summary([_run([40, 60, 55], 1.0)] * 2),
        "memory": bench._summary([_run([40, 70, 60], 1.0), _run([40, 70, 70], 1.0)]),
        "seen": bench._summary([_run([40, 70, 68], 1.2), _run([40, 66, 65], 0.9)]),
    }


def test_summary_and_targets() -> None:
    summ = _summaries(50.0)
    np.testing.assert_allclose(summ["uncertainty"]["drop"], [20, 10])
    t = bench.build_targets(summ)
    assert t["uncertainty_collapse"] == {"value": 15.0, "target": ">= 10", "met": True}
    assert t["seen_peak_minus_final"]["value"] == pytest.approx(1.5)
    assert t["seen_peak_minus_final"]["met"] is True
    assert t["seen_final_over_uncertainty"]["value"] == pytest.approx(66.5 / 50)
    assert t["seen_minus_memory_final"]["value"] == pytest.approx(((68 - 60) + (65 - 70)) / 2)
    assert t["seen_beats_memory_share"] == {"value": 0.5, "target": ">= 0.8", "met": False}
    assert t["coverage_entropy_ratio"]["value"] == pytest.approx(1.05 / 0.6)
    assert t["coverage_entropy_ratio"]["met"] is True


def test_void_rule_marks_the_comparison_missed() -> None:
    t = bench.build_targets(_summaries(65.0))  # uncertainty drops 5 and -5: no collapse
    assert t["uncertainty_collapse"]["met"] is False
    assert not any(entry["met"] for entry in t.values())
    assert t["seen_peak_minus_final"]["value"] == pytest.approx(1.5)  # the figures themselves are kept


def test_an_arm_is_one_novelty_toy_recipe_run_read_back_from_its_csv(tmp_path) -> None:
    from lightning_icml26.cli import run_recipe

    arm = bench.run_arm("memory", seed=3, iterations=2)
    assert len(arm["score"]) == len(arm["coverage"]) == 2
    overrides = ["seed=3", "trainer.max_epochs=2", "model.beta=0.0", "model.lambda_rep=1.0", "model.lambda_mem=1.0"]
    summary = run_recipe("novelty_toy", overrides, run_dir=tmp_path)
    assert summary["metrics"]["selfplay/score"] == pytest.approx(arm["score"][-1], rel=1e-6)
