"""benchmarks/arm_kv_budget.py's ``--quick`` path and the ``arm_kv_budget`` recipe with the same overrides give
the same figures (same seed): the benchmark measures what ``icml26 run arm_kv_budget`` runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.arm_kv_budget import QUICK, main
from lightning_icml26.cli import run_recipe

TINY = ["task.seq_len=64", "task.train_len=32", "task.pairs=4", "task.budget=16", "task.d_model=16",
        "task.num_heads=2", "task.steps=3", "task.batch_size=2", "task.n_eval=4"]  # fmt: skip


def test_quick_benchmark_equals_the_recipe(tmp_path: Path) -> None:
    args = ["--quick", "--seed", "1", "--kinds", "arm_fixed,arm_top_p", "--json", str(tmp_path / "b.json")]
    figures = main([*args, *(f"--set={item}" for item in TINY)])
    overrides = [item for item in QUICK if item.split("=")[0] not in {t.split("=")[0] for t in TINY}]
    cell = ["task.kind=arm_fixed", "seed=1", "task.decode_cost=True", *overrides, *TINY]
    recipe = run_recipe("arm_kv_budget", cell, run_dir=tmp_path / "recipe")["metrics"]
    rows = {row["kind"]: row for row in figures["mqar"]}
    assert set(rows) == {"arm_fixed", "arm_top_p"}
    for kind in rows:
        assert rows[kind]["recall"] == pytest.approx(recipe[f"recall_{kind}"], abs=1e-9)
        assert rows[kind]["slots_read"] == pytest.approx(recipe[f"slots_{kind}"], abs=1e-9)
    assert figures["cells"]["arm_fixed"]["1"]["nll_arm_fixed"] == pytest.approx(recipe["nll_arm_fixed"], abs=1e-6)
    assert [row["kv_bytes"] for row in figures["decode_cost"]] == [recipe[f"kv_bytes_{n}"] for n in (64, 128, 256)]
    assert set(figures["targets"]) >= {"full_minus_arm_recall_1_8", "arm_kv_bytes_ratio_2048_over_512"}
