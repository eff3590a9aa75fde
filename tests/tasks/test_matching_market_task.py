"""The wayse_market task: its outputs agree with each other and bad policy lists are refused by name."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from lightning_icml26.tasks import MatchingMarketConfig, matching_market_task


def test_task_writes_curves_and_a_summary_that_agree(tmp_path: Path) -> None:
    summary = matching_market_task(
        MatchingMarketConfig(
            tmp_path, n_players=2, n_arms=3, horizon=400, policies=["wayse", "etgs"], seeds=2, plot=False
        )
    )
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    with (tmp_path / "regret_curves.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    for name in ("wayse", "etgs"):
        last = [r for r in rows if r["policy"] == name][-1]
        assert int(last["step"]) == 400
        assert float(last["regret_mean"]) == pytest.approx(summary[name]["regret"])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"policies": ["wayse", "greedy"]}, "policies"),
        ({"policies": []}, "policies"),
        ({"two_sided": True, "policies": ["wayse2s", "etgs"]}, r"arm side.*\['etgs'\]"),
        ({"seeds": 0}, "seeds"),
    ],
)
def test_task_refuses_bad_policy_lists(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        MatchingMarketConfig(None, n_players=2, n_arms=2, horizon=50, **kwargs)
