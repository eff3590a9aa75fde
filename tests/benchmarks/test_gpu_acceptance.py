"""The GPU acceptance script on the CPU: the dry run writes every target unmeasured, and it refuses without CUDA."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from benchmarks.gpu import acceptance
from lightning_icml26.acceptance import ACCEPTANCE_CHECKS


def test_dry_run_writes_every_target_unmeasured(tmp_path: Path) -> None:
    path = tmp_path / "acc.json"
    figures = acceptance.main(["--dry-run", "--minutes", "10", "--json", str(path)])
    record = json.loads(path.read_text())
    assert record["benchmark"] == "gpu_acceptance"
    targets = record["figures"]["targets"]
    assert set(targets) == set(figures["targets"])
    rows = acceptance.rows(path)
    names = {f"check_{key}" for c in ACCEPTANCE_CHECKS for key in c.result_keys()}
    names |= {f"{r.name}.{t[0]}" for r in rows for t in r.headline}
    assert set(targets) == names
    assert "isa_latency.isa_triton_latency_ratio_64k" in names
    # an unmeasured check still states its tolerance
    assert (targets["check_arm_float32"]["target"], targets["check_sdpa_bfloat16"]["target"]) == (
        "<= 0.0001",
        "<= 0.03",
    )
    assert all(entry["met"] is False and math.isnan(entry["value"]) for entry in targets.values())
    assert record["figures"]["complete"] is True
    assert record["figures"]["dry_run"] is True
    checks = [key for c in ACCEPTANCE_CHECKS for key in c.result_keys()]
    assert record["figures"]["skipped"] == checks + [r.name for r in rows]  # nothing ran
    plan = record["figures"]["plan"]
    assert [r["stage"] for r in plan][-len(rows) :] == ["upipe_memory", "isa_latency", "itc_short", "arbg_short"]
    assert sum(r["seconds"] for r in plan) <= 10 * 60 + 1e-6


def test_bad_minutes_and_no_cuda_are_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        acceptance.parse_args(["--minutes", "0"])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit, match="needs a CUDA device"):
        acceptance.main(["--json", str(tmp_path / "never.json")])
    assert not (tmp_path / "never.json").exists()
