"""benchmarks/fedusd_diagnose.py: gap closure, the findings as targets (same keys whatever ran), a tiny run."""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path
from typing import Any

import pytest

diag = importlib.import_module("benchmarks.fedusd_diagnose")

_KEYS = {
    "paper_fedusd_minus_dm_hob_gap_closed_min",
    "paper_fedusd_minus_dm_var_gap_closed_min",
    "diag_fedusd_pixel_change_at_most_steps_max",
    "diag_fedusd_over_dm_grad_rms_max",
    "diag_dm_fewest_minus_fedusd_most_steps_hob_gap_closed_min",
}


def _row(teacher: str, loss: str, packed: bool, steps: int, hob_after: float, var_after: float, **kw: float) -> dict:
    row: dict[str, Any] = {"teacher": teacher, "loss": loss, "packed": packed, "steps": steps}
    row |= {"hob_gap_before": 1.0, "hob_gap_after": hob_after, "var_gap_before": 2.0, "var_gap_after": var_after}
    return row | {"grad_rms": 1.0, "rel_pixel_change": 0.0} | kw


def _rows(usd_most_pixels: float = 0.003) -> list[dict]:
    rows = []
    for teacher in ("reinit", "perturb"):
        rows += [
            _row(teacher, "hob_w1", False, 40, 0.99, 1.98, grad_rms=5e-6, rel_pixel_change=0.5),  # fewer steps
            _row(teacher, "hob_w1", False, 400, 0.97, 1.9, grad_rms=5e-6, rel_pixel_change=usd_most_pixels),
            _row(teacher, "dm", False, 40, 0.75, 1.2, grad_rms=0.1),
            _row(teacher, "dm", False, 400, 0.6, 1.0, grad_rms=0.1),
        ]
    return rows


def test_gap_closed_is_the_share_of_the_gap_removed() -> None:
    assert diag.gap_closed({"var_gap_before": 2.0, "var_gap_after": 2.5}, "var") == pytest.approx(-0.25)
    assert math.isnan(diag.gap_closed({"hob_gap_before": 0.0, "hob_gap_after": 0.0}, "hob"))


def test_targets_pair_rows_by_teacher_packing_and_steps() -> None:
    targets = diag.build_targets(_rows())
    assert targets.keys() == _KEYS
    # FedUSD closes 0.01 / 0.03 of the HOB gap against DM's 0.25 / 0.4: the worst difference is at 400 steps
    assert targets["paper_fedusd_minus_dm_hob_gap_closed_min"]["value"] == pytest.approx(0.03 - 0.4)
    assert targets["paper_fedusd_minus_dm_hob_gap_closed_min"]["met"] is False
    assert targets["paper_fedusd_minus_dm_var_gap_closed_min"]["value"] == pytest.approx(0.05 - 0.5)
    # only the most steps count: the 0.5 change at 40 steps is not read
    assert targets["diag_fedusd_pixel_change_at_most_steps_max"] == {"value": 0.003, "target": "<= 0.01", "met": True}
    assert targets["diag_fedusd_over_dm_grad_rms_max"]["value"] == pytest.approx(5e-5)
    assert targets["diag_fedusd_over_dm_grad_rms_max"]["met"] is True
    # DM at 40 steps (0.25) against FedUSD at 400 (0.03)
    assert targets["diag_dm_fewest_minus_fedusd_most_steps_hob_gap_closed_min"]["value"] == pytest.approx(0.22)
    assert targets["diag_dm_fewest_minus_fedusd_most_steps_hob_gap_closed_min"]["met"] is True
    moving = diag.build_targets(_rows(usd_most_pixels=0.02))  # a loss that moved the pixels contradicts it
    assert moving["diag_fedusd_pixel_change_at_most_steps_max"]["met"] is False
    rows = _rows()
    rows[1]["hob_gap_after"] = 0.5  # FedUSD at 400 steps closing half the gap beats DM at 40 on that teacher
    assert diag.build_targets(rows)["diag_dm_fewest_minus_fedusd_most_steps_hob_gap_closed_min"]["met"] is False
    empty = diag.build_targets([])
    assert empty.keys() == _KEYS
    assert all(math.isnan(e["value"]) and not e["met"] for e in empty.values())


def test_tiny_run_on_digits_writes_the_json(tmp_path: Path) -> None:
    args = diag._parser().parse_args(["--steps", "1", "2", "--source", "digits"])
    args.num_train = None  # all of scikit-learn's digits
    rows = diag.run(args)
    assert len(rows) == 2 * 2 * 2 * 2  # teachers x losses x packing x step counts
    assert {(r["teacher"], r["loss"], r["packed"], r["steps"]) for r in rows} == {
        (t, loss, p, n)
        for t in ("reinit", "perturb")
        for loss in ("hob_w1", "dm")
        for p in (False, True)
        for n in (1, 2)
    }
    for row in rows:
        assert row["rel_pixel_change"] > 0
        assert row["hob_gap_before"] > 0
    figures = {"rows": rows, "targets": diag.build_targets(rows)}
    path = tmp_path / "diag.json"
    diag.write_json(path, "fedusd_diagnose", figures, args)
    record = json.loads(path.read_text())
    assert record["figures"]["targets"].keys() == _KEYS
    assert len(record["figures"]["rows"]) == 16
