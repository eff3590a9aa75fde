"""``python -m benchmarks.arm_kv_budget --pool``: per-seed runs, and a seed split by kind between runs, pool into
the figures one run of all the cells would give (checked against means computed here), and bad sets are refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.arm_kv_budget import main

DERIVED = {
    "full": ("full", "snapkv", "h2o"),
    "streaming": ("streaming",),
    "gsa": ("gsa",),
    "arm_fixed": ("arm_fixed", "arm_top_p"),
    "arm_learned": ("arm_learned",),
}
BUDGET = ("task.budget=64",)
SLOTS = {"arm_fixed": 48.0, "arm_top_p": 20.0, "arm_learned": 16.0}


def cell(trained: str, seed: int) -> dict[str, float]:
    """Made-up metrics of one trained kind and seed: recall ``0.1 * rank + 0.01 * seed``, decode cost on kv kinds."""
    metrics: dict[str, float] = {"train_s": 1.0 + seed}
    for name in DERIVED[trained]:
        rank = list(sum(DERIVED.values(), ())).index(name)
        metrics[f"recall_{name}"] = 0.1 * rank + 0.01 * seed
        metrics[f"slots_{name}"] = SLOTS.get(name, float("nan"))
    if trained in ("full", "arm_fixed"):
        for length in (512, 1024, 2048):
            metrics[f"ms_per_token_{length}"] = 1.0 + seed
            metrics[f"kv_bytes_{length}"] = float(length if trained == "full" else 512)
    return metrics


def write_run(path: Path, seed: int, trained: tuple[str, ...], overrides: tuple[str, ...] = BUDGET) -> Path:
    """A JSON record as ``--seed SEED --kinds ...`` writes it, with made-up cells."""
    config = {"recipe": "arm_kv_budget", "overrides": list(overrides), "seeds": [seed], "budget": "1/8"}
    figures = {"config": config, "cells": {kind: {str(seed): cell(kind, seed)} for kind in trained}}
    path.write_text(json.dumps({"benchmark": "arm_kv_budget", "figures": figures}))
    return path


def rows_by_kind(figures: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["kind"]: row for row in figures["mqar"]}


def test_a_seed_split_by_kind_pools_like_whole_seeds(tmp_path: Path) -> None:
    whole = write_run(tmp_path / "seed0.json", 0, tuple(DERIVED))
    first = write_run(tmp_path / "seed3a.json", 3, ("full", "streaming", "gsa"))
    second = write_run(tmp_path / "seed3b.json", 3, ("arm_fixed", "arm_learned"))
    figures = main(["--pool", str(whole), str(first), str(second), "--json", str(tmp_path / "pooled.json")])

    assert figures["config"]["seeds"] == [0, 3]
    rows = rows_by_kind(figures)
    assert set(rows) == {name for names in DERIVED.values() for name in names}
    assert rows["h2o"]["recall"] == pytest.approx((0.2 + 0.23) / 2)
    assert rows["h2o"]["recall_sd"] == pytest.approx(0.015)
    assert rows["arm_learned"]["recall"] == pytest.approx((0.7 + 0.73) / 2)
    assert rows["arm_learned"]["slots_read"] == 16.0
    # the decode cost comes from the first run that measured it (seed 0: 1 ms per token)
    assert {row["ms_per_token"] for row in figures["decode_cost"]} == {1.0}
    targets = figures["targets"]
    assert targets["full_kv_bytes_ratio_2048_over_512"]["value"] == pytest.approx(4.0)
    assert targets["arm_kv_bytes_ratio_2048_over_512"]["value"] == pytest.approx(1.0)
    written = json.loads((tmp_path / "pooled.json").read_text())
    assert written["figures"]["config"]["pooled_from"] == [str(whole), str(first), str(second)]


def test_a_cell_in_two_runs_is_refused_naming_both(tmp_path: Path) -> None:
    first = write_run(tmp_path / "a.json", 1, ("full", "arm_fixed"))
    second = write_run(tmp_path / "b.json", 1, ("arm_fixed",))
    with pytest.raises(ValueError, match=r"arm_fixed seed 1 is in both .*a\.json and .*b\.json"):
        main(["--pool", str(first), str(second)])


def test_a_kind_missing_a_seed_is_refused(tmp_path: Path) -> None:
    whole = write_run(tmp_path / "seed0.json", 0, tuple(DERIVED))
    part = write_run(tmp_path / "seed1.json", 1, ("full", "streaming", "gsa"))
    with pytest.raises(ValueError, match=r"no arm_fixed cell for seed\(s\) \[1\]"):
        main(["--pool", str(whole), str(part)])


def test_runs_with_other_settings_are_refused(tmp_path: Path) -> None:
    first = write_run(tmp_path / "a.json", 0, tuple(DERIVED))
    second = write_run(tmp_path / "b.json", 1, tuple(DERIVED), overrides=("task.budget=32",))
    with pytest.raises(ValueError, match="only runs with the same settings can be pooled"):
        main(["--pool", str(first), str(second)])
