"""benchmarks/g_substrate.py: the targets computed from per-seed results (same keys at every size)."""

from __future__ import annotations

import argparse
import json

import pytest

import benchmarks.g_substrate as bench


def _result(level: dict[str, float]) -> dict[str, dict[str, float]]:
    out = {}
    for regime, value in level.items():
        res = dict.fromkeys(bench._COLUMNS, value)
        res["cycle"] = value + (0.2 if regime == "isolated" else 0.0)
        res["mean_em"] = sum(res[t] for t in bench.QA_TASKS) / len(bench.QA_TASKS)
        out[regime] = res
    return out


def test_targets_from_per_seed_results(tmp_path) -> None:
    per_seed = [_result({"isolated": 0.5, "multitask": 0.4, "interleaved": 0.45}),
                _result({"isolated": 0.5, "multitask": 0.4, "interleaved": 0.47})]  # fmt: skip
    path = tmp_path / "g.json"
    bench.report(per_seed, [], {"steps": 1}, argparse.Namespace(json=path, quick=True), final=False)
    targets = json.loads(path.read_text())["figures"]["targets"]
    assert set(targets) == {
        "interleaved_minus_multitask_mean_em_points",
        "interleaved_minus_isolated_worst_task_points",
    }
    assert targets["interleaved_minus_multitask_mean_em_points"]["value"] == pytest.approx(6.0)
    assert targets["interleaved_minus_multitask_mean_em_points"]["met"] is True
    # isolated is 0.2 better on cycles: interleaved (mean 0.46) is 24 points below it there
    assert targets["interleaved_minus_isolated_worst_task_points"]["value"] == pytest.approx(-24.0)
    assert targets["interleaved_minus_isolated_worst_task_points"]["met"] is False
