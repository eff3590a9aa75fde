"""The ITC MinAtar benchmark's target builder, on hand-made results."""

from __future__ import annotations

import importlib

import pytest

pytest.importorskip("minatar")


def _results(itc_pe: list[float], itc_return: list[float]) -> dict:
    per = {
        "persistence_error_rate": [0.2, 0.4],
        "token_accuracy": [0.9, 0.8],
        "object_motion": [0.5, 0.5],
    }
    rollouts = {
        "itc": {**per, "persistence_error_rate": itc_pe, "object_motion": [0.45, 0.45]},
        "sample": per,
        "argmax": {**per, "object_motion": [0.1, 0.1]},
        "truth": {"object_motion": [0.5, 0.5]},
    }
    agents = {"itc": itc_return, "sample": [1.0, 2.0, 3.0], "argmax": [0.0, 0.0, 0.0], "random": [0.5, 0.5, 0.5]}
    return {"world_model": {"val_loss": 0.105, "floor": 0.1}, "rollouts": rollouts, "agents": agents}


def test_targets_read_the_results() -> None:
    summarise = importlib.import_module("benchmarks.itc_minatar").summarise
    rows, targets = summarise({"breakout": _results([0.1, 0.2], [2.0, 2.0, 3.0])}, 2)
    assert targets["breakout_itc_minus_sample_return"]["value"] == pytest.approx(1.0 / 3.0)
    assert targets["breakout_itc_minus_sample_return"]["met"] is True
    assert targets["breakout_itc_over_sample_persistence_worst_h"] == {"value": 0.5, "target": "< 1", "met": True}
    assert targets["breakout_itc_motion_rel_error"]["value"] == pytest.approx(0.1)
    assert targets["breakout_wm_val_loss_over_floor"]["value"] == pytest.approx(1.05)
    itc_row = next(r for r in rows if r["decoder"] == "itc")
    assert itc_row["real_return"] == pytest.approx(7.0 / 3.0)
    # ITC worse than sampling at one horizon: the persistence target is missed even though the other is lower
    _, missed = summarise({"breakout": _results([0.1, 0.5], [0.0, 0.0, 0.0])}, 2)
    assert missed["breakout_itc_over_sample_persistence_worst_h"]["value"] == pytest.approx(1.25)
    assert missed["breakout_itc_over_sample_persistence_worst_h"]["met"] is False
    assert missed["breakout_itc_minus_sample_return"]["met"] is False
