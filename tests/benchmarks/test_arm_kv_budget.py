"""benchmarks/arm_kv_budget.py: ``--kinds`` validation and ``--merge`` of a stored run's rows."""

from __future__ import annotations

import importlib

import pytest

bench = importlib.import_module("benchmarks.arm_kv_budget")


def test_kinds_are_validated_and_ordered() -> None:
    assert bench.parse_kinds("arm_learned") == ("arm_learned",)
    assert bench.parse_kinds(" h2o , full") == ("full", "h2o")
    for bad in ("", "arm", "full,lru"):
        with pytest.raises(ValueError, match="--kinds"):
            bench.parse_kinds(bad)


def test_merge_keeps_stored_rows_of_kinds_not_rerun() -> None:
    stored = {
        "figures": {
            "mqar": [
                {"budget": "1/8", "kind": "full", "recall": 0.8},
                {"budget": "1/8", "kind": "arm_fixed", "recall": 0.5},
                {"budget": "1/8", "kind": "arm_learned", "recall": 0.06},
                {"budget": "1/4", "kind": "full", "recall": 0.9},
            ],
            "decode_cost": [{"kind": "full", "context": 512}, {"kind": "arm_fixed", "context": 512}],
        }
    }
    new = [{"budget": "1/8", "kind": "arm_learned", "recall": 0.4}]
    rows, cost = bench.merge_stored(new, [], stored, ("arm_learned",))
    assert [(r["kind"], r["recall"], r["source"]) for r in rows] == [
        ("full", 0.8, "stored"),
        ("arm_fixed", 0.5, "stored"),
        ("arm_learned", 0.4, "rerun"),  # the stored 0.06 is replaced; the other budget is not merged
    ]
    assert rows[2]["vs_full"] == pytest.approx(0.5)
    assert [(c["kind"], c["source"]) for c in cost] == [("full", "stored"), ("arm_fixed", "stored")]
