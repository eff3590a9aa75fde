"""benchmarks/fedusd.py: summary rows and targets (same keys at --quick and full size)."""

from __future__ import annotations

import importlib
import math

import pytest

fedusd = importlib.import_module("benchmarks.fedusd")


def _runs(finals: dict[str, float]) -> dict[str, list[dict]]:
    return {
        m: [{"acc": [0.1, acc], "bytes_max": 100 if m == "fedavg" else 50, "bytes_mean": 1.0, "seconds": 1.0}]
        for m, acc in finals.items()
    }


def _rows(alphas: list[float]) -> list[dict]:
    rows = []
    for alpha in alphas:
        finals = {"fedavg": 0.30, "dm": 0.60, "fedaf": 0.62, "fedusd": 0.70, "fedusd_proj": 0.66, "dm_mf": 0.65}
        rows += fedusd.summarise(_runs(finals), alpha, "digits")
    return rows


def test_summary_ratio_and_difference_to_the_best_baseline() -> None:
    rows = _rows([0.01])
    usd = next(r for r in rows if r["method"] == "fedusd")
    assert usd["best baseline"] == "fedaf"
    assert usd["ratio"] == pytest.approx(0.70 / 0.62)
    assert usd["diff (points)"] == pytest.approx(8.0)


def test_targets_have_the_same_keys_at_both_sizes() -> None:
    quick = fedusd.build_targets(_rows([0.01]), [0.01])
    full = fedusd.build_targets(_rows([0.01, 0.1, 0.5]), [0.01, 0.1, 0.5])
    assert quick.keys() == full.keys()
    assert full["fedusd_gain_points_at_alpha_0.01"]["met"] is True
    assert full["fedusd_minus_dm_packed_points_at_lowest_alpha"]["value"] == pytest.approx(5.0)
    assert full["fedusd_min_gain_points_at_alpha_0.1_0.5"]["value"] == pytest.approx(8.0)
    assert math.isnan(quick["fedusd_min_gain_points_at_alpha_0.1_0.5"]["value"])
    assert full["projection_minus_code_loss_points_at_lowest_alpha"]["value"] == pytest.approx(-4.0)
    assert full["synthetic_bytes_at_most_fedavg"]["met"] is True
