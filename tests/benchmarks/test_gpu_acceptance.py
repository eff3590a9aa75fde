"""The GPU acceptance script's plumbing on the CPU: the dry run, the time budget, the partial JSON."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
import torch

from benchmarks.gpu import acceptance


def test_dry_run_writes_every_target_unmeasured(tmp_path) -> None:
    path = tmp_path / "acc.json"
    figures = acceptance.main(["--dry-run", "--minutes", "10", "--json", str(path)])
    record = json.loads(path.read_text())
    assert record["benchmark"] == "gpu_acceptance"
    targets = record["figures"]["targets"]
    assert set(targets) == set(figures["targets"])
    names = {f"check_{c.name}_{str(d).removeprefix('torch.')}" for c in acceptance.CHECKS for d in c.dtypes}
    names |= {f"{m.name}.{t[0]}" for m in acceptance.MEASURES for t in m.headline}
    assert set(targets) == names
    assert all(entry["met"] is False and math.isnan(entry["value"]) for entry in targets.values())
    assert record["figures"]["complete"] is True
    assert record["figures"]["dry_run"] is True
    checks = [f"{c.name}_{str(d).removeprefix('torch.')}" for c in acceptance.CHECKS for d in c.dtypes]
    assert record["figures"]["skipped"] == checks + [m.name for m in acceptance.MEASURES]  # nothing ran
    # the plan fits the budget: checks first, then every row in order of importance
    plan = record["figures"]["plan"]
    assert [r["stage"] for r in plan][-len(acceptance.MEASURES) :] == [m.name for m in acceptance.MEASURES]
    assert sum(r["seconds"] for r in plan) <= 10 * 60 + 1e-6


def test_bad_minutes_and_budget_raise() -> None:
    with pytest.raises(SystemExit):
        acceptance.parse_args(["--minutes", "0"])
    with pytest.raises(ValueError, match="budget"):
        acceptance.Budget(0.0)
    with pytest.raises(ValueError, match="minutes"):
        acceptance.plan(-1.0)


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_budget_skips_what_does_not_fit_and_json_is_partial_after_each_stage(tmp_path, monkeypatch) -> None:
    clock = _Clock()
    calls: list[str] = []

    def slow_check(device: torch.device, dtype: torch.dtype) -> float:
        calls.append(str(dtype))
        clock.now += 40.0  # each check eats 40 s of a 100 s budget
        return 1e-6 if dtype == torch.float32 else 1.0  # the second dtype fails its tolerance

    monkeypatch.setattr(
        acceptance,
        "CHECKS",
        (
            acceptance.Check(
                "fake",
                slow_check,
                (torch.float32, torch.bfloat16, torch.float64),
                {torch.float32: 1e-3, torch.bfloat16: 1e-2, torch.float64: 1e-9},
                estimate_s=30.0,
            ),
        ),
    )
    monkeypatch.setattr(acceptance, "MEASURES", (acceptance.MEASURES[0],))
    snapshots: list[dict[str, Any]] = []
    args = acceptance.parse_args(["--minutes", str(100 / 60), "--json", str(tmp_path / "a.json")])
    budget = acceptance.Budget(100.0, clock=clock)
    figures = acceptance.run(args, torch.device("cpu"), budget, lambda f: snapshots.append(json.loads(json.dumps(f))))
    # two checks ran (80 s), the third needs 30 s of the 20 left: skipped, and so is the row (2 min)
    assert calls == ["torch.float32", "torch.bfloat16"]
    assert figures["skipped"] == ["fake_float64", "upipe_memory"]
    t = figures["targets"]
    assert t["check_fake_float32"]["met"] is True
    assert t["check_fake_bfloat16"]["met"] is False
    assert t["check_fake_bfloat16"]["value"] == 1.0
    assert math.isnan(t["check_fake_float64"]["value"])
    assert math.isnan(t["upipe_memory.cuda_attn_peak_P2"]["value"])
    # partial JSON: written before anything ran, after each stage, and at the end; only the last is complete
    assert [s["complete"] for s in snapshots] == [False, False, False, True]
    assert list(snapshots[1]["checks"]) == ["fake_float32"]
    assert snapshots[1]["targets"]["check_fake_float32"]["met"] is True
    assert math.isnan(snapshots[1]["targets"]["check_fake_bfloat16"]["value"])
    assert figures["seconds_used"] == 80.0


def test_a_failing_path_is_recorded_and_the_run_goes_on(monkeypatch) -> None:
    def broken(device: torch.device, dtype: torch.dtype) -> float:
        raise RuntimeError("kernel crashed")

    monkeypatch.setattr(
        acceptance, "CHECKS", (acceptance.Check("broken", broken, (torch.float32,), {torch.float32: 1e-3}),)
    )
    monkeypatch.setattr(acceptance, "MEASURES", ())
    args = acceptance.parse_args(["--minutes", "1", "--json", ""])
    figures = acceptance.run(args, torch.device("cpu"), acceptance.Budget(60.0), lambda f: None)
    assert figures["checks"]["broken_float32"]["ok"] is False
    assert "kernel crashed" in figures["checks"]["broken_float32"]["exception"]
    assert figures["complete"] is True
    assert figures["targets"]["check_broken_float32"]["met"] is False


def test_measure_targets_are_read_from_a_script_record() -> None:
    record = {"figures": {"targets": {"ess_min": {"value": 0.2, "target": ">= 0.01", "met": True}}}}
    got = acceptance.build_targets({}, {"arbg_short": {"targets": acceptance._targets_of(record)}})
    assert got["arbg_short.ess_min"] == {"value": 0.2, "target": ">= 0.01", "met": True}
    assert got["arbg_short.e_w2_max"]["met"] is False
