"""valueflow_intensity_task: the metric-based evaluator on a simulated judge, its settings object, its JSON,
bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lightning_icml26.algorithms.valueflow_intensity import estimate_intensity
from lightning_icml26.tasks import ValueflowIntensityConfig, valueflow_intensity_task
from lightning_icml26.tasks.valueflow_intensity import simulated_judgements


def test_simulated_judge_is_scored_far_better_than_chance(tmp_path: Path) -> None:
    out = ValueflowIntensityConfig(out_dir=str(tmp_path), n_responses=80, seed=2).run()
    # a constant 0 on intensities uniform on [-9, 9] has MAE 4.5; bucket anchors 4 apart bound the error near 1
    assert out["mae_pl"] < 1.5
    assert out["mae_borda"] < 1.5
    assert out["spearman_pl"] > 0.95
    assert json.loads((tmp_path / "valueflow_intensity.json").read_text()) == out


def test_the_metric_path_equals_the_direct_estimator() -> None:
    # the task's AnchorPLIntensity (torch) against estimate_intensity (numpy) on the same judgements
    config = ValueflowIntensityConfig(n_responses=40, sampling="random", seed=5)
    truth, rankings, anchors = simulated_judgements(config, np.random.default_rng(5))
    direct = float(np.mean(np.abs(estimate_intensity(rankings, anchors) - truth)))
    assert valueflow_intensity_task(config)["mae_pl"] == pytest.approx(direct, abs=1e-3)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("judge", "gpt", "judge must be"), ("sampling", "even", "sampling must be"), ("k", 1, "k must be"),
     ("n_responses", 0, "n_responses must be"), ("judge_scale", 0.0, "judge_scale must be")],
)  # fmt: skip
def test_bad_settings_are_refused(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ValueflowIntensityConfig(**{field: value})  # type: ignore[arg-type]


def test_the_task_takes_only_its_settings_object() -> None:
    with pytest.raises(TypeError, match="ValueflowIntensityConfig"):
        valueflow_intensity_task({"judge": "simulated"})  # type: ignore[arg-type]
