"""The acceptance run's plumbing: the plan, the time budget, skipped stages, failures and the partial figures."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
import torch

from lightning_icml26.acceptance import (
    ACCEPTANCE_CHECKS,
    AcceptanceCheck,
    AcceptanceRow,
    Budget,
    CheckResult,
    acceptance_plan,
    run_acceptance,
    target_entry,
)

CPU = torch.device("cpu")


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_bad_budget_plan_and_op_raise() -> None:
    with pytest.raises(ValueError, match="budget must be positive"):
        Budget(0.0)
    with pytest.raises(ValueError, match="minutes must be positive"):
        acceptance_plan(-1.0)
    with pytest.raises(ValueError, match="op must be one of"):
        target_entry(1.0, "==", 1.0)
    with pytest.raises(ValueError, match="min_minutes must be positive"):
        AcceptanceRow("x", lambda m: {}, (), 0.0)


def test_plan_fits_the_budget_and_keeps_the_row_order() -> None:
    rows = [AcceptanceRow(n, lambda m: {}, (), 1.0) for n in ("a", "b", "c")]
    plan = acceptance_plan(10.0, ACCEPTANCE_CHECKS, rows)
    n_checks = sum(len(c.dtypes) for c in ACCEPTANCE_CHECKS)
    assert [r["stage"] for r in plan[n_checks:]] == ["a", "b", "c"]
    assert sum(r["seconds"] for r in plan) == pytest.approx(600.0)


def test_budget_skips_what_does_not_fit_and_figures_are_written_after_each_stage() -> None:
    clock = _Clock()
    calls: list[str] = []

    def slow_check(device: torch.device, dtype: torch.dtype) -> CheckResult:
        calls.append(str(dtype))
        clock.now += 40.0  # each check eats 40 s of a 100 s budget
        return CheckResult("fake", str(dtype).removeprefix("torch."), 1e-6 if dtype == torch.float32 else 1.0, 1e-2)

    check = AcceptanceCheck("fake", slow_check, (torch.float32, torch.bfloat16, torch.float64), estimate_s=30.0)
    row = AcceptanceRow("row", lambda m: {"targets": {"x": {"value": 1.0}}}, (("x", ">=", 0.5),), min_minutes=2.0)
    snapshots: list[dict[str, Any]] = []
    figures = run_acceptance(
        CPU,
        Budget(100.0, clock=clock),
        checks=[check],
        rows=[row],
        write=lambda f: snapshots.append(json.loads(json.dumps(f))),
    )
    # two checks ran (80 s); the third needs 30 s of the 20 left, and the row 2 min: both skipped
    assert calls == ["torch.float32", "torch.bfloat16"]
    assert figures["skipped"] == ["fake_float64", "row"]
    t = figures["targets"]
    assert (t["check_fake_float32"]["met"], t["check_fake_bfloat16"]["met"]) == (True, False)
    assert t["check_fake_bfloat16"]["value"] == 1.0
    assert math.isnan(t["check_fake_float64"]["value"])
    assert math.isnan(t["row.x"]["value"])
    assert [s["complete"] for s in snapshots] == [False, False, False, True]
    assert list(snapshots[1]["checks"]) == ["fake_float32"]
    assert math.isnan(snapshots[1]["targets"]["check_fake_bfloat16"]["value"])
    assert figures["seconds_used"] == 80.0


def test_rows_get_the_time_left_and_a_failing_row_does_not_stop_the_next() -> None:
    given: list[float] = []

    def broken(minutes: float) -> dict[str, Any]:
        raise SystemExit(2)

    def good(minutes: float) -> dict[str, Any]:
        given.append(minutes)
        return {"figures": {"targets": {"ratio": {"value": 0.3}}}}  # a benchmark record's shape

    rows = [AcceptanceRow("broken", broken, (), 1.0), AcceptanceRow("good", good, (("ratio", "<=", 0.4),), 1.0)]
    figures = run_acceptance(CPU, Budget(600.0, clock=lambda: 0.0), checks=[], rows=rows)
    assert "SystemExit(2)" in figures["measures"]["broken"]["exception"]
    assert given == [10.0]  # the last row gets all that is left
    assert figures["targets"]["good.ratio"] == {"value": 0.3, "target": "<= 0.4", "met": True}
    assert figures["complete"] is True
