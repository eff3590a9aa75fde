"""benchmarks/asr_icl_diagnose.py: per-cell ratios, the findings as targets (same keys whatever ran), a tiny run."""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path
from typing import Any

import pytest

diag = importlib.import_module("benchmarks.asr_icl_diagnose")

_KEYS = (
    {f"paper_asr_icl_over_unrefined_full_zo_l1_plus_l0_{d}" for d in diag.DATASETS}
    | {f"diag_asr_icl_over_refined_full_zo_cost_{d}" for d in ("compas", "pima", "german", "credit")}
    | {f"diag_unrefined_full_zo_changed_share_{d}" for d in diag.DATASETS}
)


def _cell(data: str, predictor: str, asr: dict[str, float], full: dict[str, float], bare: dict[str, float]) -> list:
    base = {"data": data, "ICL": predictor, "seed": 0, "features": 7}
    return [
        base | {"method": "asr_icl"} | asr,
        base | {"method": "full_zo"} | full,
        base | {"method": "full_zo_norefine"} | bare,
        base | {"method": "asr_icl_budget", "cost": 99.0, "l1_plus_l0": 99.0},  # not read by the targets
    ]


def test_cells_and_targets_take_the_worst_measured_cell_per_data_set() -> None:
    nan = float("nan")
    rows: list[dict[str, Any]] = []
    rows += _cell(
        "pima", "lsa", {"cost": 0.3, "l1_plus_l0": 1.2}, {"cost": 0.4}, {"l1_plus_l0": 6.0, "changed_share": 1.0}
    )
    rows += _cell(
        "pima", "kernel", {"cost": 0.5, "l1_plus_l0": 2.0}, {"cost": 0.5}, {"l1_plus_l0": 5.0, "changed_share": 0.95}
    )
    # ASR-ICL found nothing here: the cell's ratios are nan and left out of the worst case
    rows += _cell(
        "pima", "logistic", {"cost": nan, "l1_plus_l0": nan}, {"cost": 0.1}, {"l1_plus_l0": 5.0, "changed_share": 0.5}
    )
    rows += _cell(
        "compas", "lsa", {"cost": 0.2, "l1_plus_l0": 1.3}, {"cost": 0.2}, {"l1_plus_l0": 1.4, "changed_share": 0.45}
    )
    cells = diag.cell_ratios(rows)
    assert [(c["data"], c["ICL"]) for c in cells] == [
        ("pima", "lsa"),
        ("pima", "kernel"),
        ("pima", "logistic"),
        ("compas", "lsa"),
    ]
    assert cells[0]["asr_icl_over_unrefined_l1_plus_l0"] == pytest.approx(0.2)
    assert cells[0]["asr_icl_over_refined_cost"] == pytest.approx(0.75)
    assert math.isnan(cells[2]["asr_icl_over_refined_cost"])
    targets = diag.build_targets(cells)
    assert targets.keys() == _KEYS
    paper = targets["paper_asr_icl_over_unrefined_full_zo_l1_plus_l0_pima"]
    assert paper == {"value": pytest.approx(0.4), "target": "<= 0.3", "met": False}  # 2.0 / 5.0, the largest
    assert targets["diag_asr_icl_over_refined_full_zo_cost_pima"]["value"] == pytest.approx(0.75)  # the smallest
    assert targets["diag_asr_icl_over_refined_full_zo_cost_pima"]["met"] is True
    assert targets["diag_unrefined_full_zo_changed_share_pima"]["value"] == 0.5  # RACOS alone found this one
    assert targets["diag_unrefined_full_zo_changed_share_pima"]["met"] is False
    assert targets["paper_asr_icl_over_unrefined_full_zo_l1_plus_l0_compas"]["value"] == pytest.approx(1.3 / 1.4)
    absent = targets["paper_asr_icl_over_unrefined_full_zo_l1_plus_l0_german"]
    assert math.isnan(absent["value"])
    assert absent["met"] is False
    empty = diag.build_targets([])
    assert empty.keys() == _KEYS
    assert not any(entry["met"] for entry in empty.values())


def test_tiny_run_shares_first_flips_and_writes_the_json(tmp_path: Path) -> None:
    rows = diag.run("credit", "lsa", 2, 0)
    by = {row["method"]: row for row in rows}
    assert set(by) == {"full_zo", "full_zo_norefine", "full_zo_first_refined", "asr_icl", "asr_icl_norefine",
                       "asr_icl_budget"}  # fmt: skip
    # same seed, same search until the first flip: the variants differ only after it
    for a, b in (("full_zo", "full_zo_norefine"), ("full_zo", "full_zo_first_refined"), ("asr_icl", "asr_icl_budget")):
        assert by[a]["first_flip_query"] == by[b]["first_flip_query"]
        assert by[a]["first_flip_cost"] == by[b]["first_flip_cost"]
    assert by["full_zo_first_refined"]["queries"] <= by["full_zo"]["queries"]
    assert by["asr_icl_norefine"]["queries"] <= by["asr_icl"]["queries"] <= by["asr_icl_budget"]["queries"]
    for row in rows:
        assert row["features"] == 7
        assert row["rows"] == 2
        if row["validity"] > 0:
            assert 0 < row["changed_share"] <= 1
            assert row["l1_plus_l0"] >= row["changed"]  # L1 over every feature plus the count
    cells = diag.cell_ratios(rows)
    figures = {"rows": rows, "cells": cells, "targets": diag.build_targets(cells)}
    path = tmp_path / "diag.json"
    diag.write_json(path, "asr_icl_diagnose", figures, diag.benchmark_parser("x").parse_args([]))
    record = json.loads(path.read_text())
    assert record["figures"]["targets"].keys() == _KEYS
    assert record["figures"]["cells"][0]["data"] == "credit"
