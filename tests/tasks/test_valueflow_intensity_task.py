"""valueflow_intensity_task: the metric-based evaluator on a simulated judge, its JSON, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lightning_icml26.tasks import valueflow_intensity_task


def test_simulated_judge_is_scored_far_better_than_chance(tmp_path: Path) -> None:
    out = valueflow_intensity_task(out_dir=tmp_path, n_responses=80, seed=2)
    # a constant 0 on intensities uniform on [-9, 9] has MAE 4.5; bucket anchors 4 apart bound the error near 1
    assert out["mae_pl"] < 1.5
    assert out["mae_borda"] < 1.5
    assert out["spearman_pl"] > 0.95
    assert json.loads((tmp_path / "valueflow_intensity.json").read_text()) == out


def test_unknown_judge() -> None:
    with pytest.raises(ValueError, match="judge must be"):
        valueflow_intensity_task(judge="gpt")
