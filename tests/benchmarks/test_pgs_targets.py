"""benchmarks/pgs.py: pooled part-1 figures (tasks.summarise_detection), fix-rate ratio edge cases, target keys."""

from __future__ import annotations

import importlib
import math

import pytest

from lightning_icml26.tasks import COUNTEREXAMPLE_CHOICES, summarise_detection

pgs = importlib.import_module("benchmarks.pgs")


def _row(public: bool, caught: bool, tokens: tuple[float, float, float] = (3, 5, 9)) -> dict:
    row = {"mutant": "m", "public": public, "pgs": caught, "property": caught and not public}
    for name, value in zip(COUNTEREXAMPLE_CHOICES, tokens, strict=True):
        row[f"{name}_tokens"], row[f"{name}_covers"] = value, 1.0
    return row


def test_summary_pools_seeds_and_ignores_uncaught_bugs() -> None:
    stopped = {**_row(False, True, (2, float("nan"), 10)), "hypothesis_incomplete": True}
    seed0 = {"rows": [_row(True, True), stopped, _row(False, False)]}
    seed1 = {"rows": [_row(True, True, (4, 6, 8)), _row(False, True)]}
    table, figures = summarise_detection([seed0, seed1])
    assert [r["PGS caught"] for r in table] == [2, 2]
    assert figures["public_caught"] == 2.0
    assert figures["pgs_caught"] == 4.0
    assert figures["catch_ratio"] == 2.0
    assert figures["min_token_tokens"] == pytest.approx((3 + 2 + 4 + 3) / 4)
    assert figures["hypothesis_tokens"] == pytest.approx((5 + 6 + 5) / 3)  # a missing shrink is skipped
    assert figures["hypothesis_found"] == 3.0
    assert figures["hypothesis_incomplete"] == 1.0  # the missing shrink stopped at the sandbox's limits
    assert figures["min_token_vs_random"] == pytest.approx(figures["min_token_tokens"] / figures["random_tokens"])


def test_fix_ratio_and_target_keys() -> None:
    assert pgs.fix_ratio(0.5, 0.25) == 2.0
    assert pgs.fix_ratio(0.2, 0.0) == math.inf
    assert math.isnan(pgs.fix_ratio(0.0, 0.0))
    p1 = {"catch_ratio": 1.6, "min_token_vs_random": 0.4}
    p2 = {"PGS": {"fix_rate": 0.3}, "Self-Debug": {"fix_rate": 0.0}}
    targets = pgs.build_targets(p1, p2)
    assert all(t["met"] for t in targets.values())
    assert pgs.build_targets(p1, None).keys() == targets.keys()
    assert not pgs.build_targets(p1, None)["pgs_vs_self_debug_fix_rate"]["met"]
