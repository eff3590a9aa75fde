"""Recipe equals benchmark (FedUSD): a cell of ``fedusd --quick`` is the ``fedusd_digits`` recipe run.

The benchmark's quick path at a tiny size (one round, two client and server steps) records each cell's overrides
and its accuracy after every round; the recipe, run on its own with the same overrides and seed, must log the same
accuracy per round (``val/acc`` in ``logs/metrics.csv``) and the same largest client payload.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from benchmarks.fedusd import main
from lightning_icml26.cli import run_recipe

TINY = ["--quick", "--rounds", "2", "--distill-steps", "2", "--server-steps", "2", "--methods", "fedavg", "fedusd"]


def test_quick_cell_equals_the_recipe_with_the_same_overrides(tmp_path: Path) -> None:
    main([*TINY, "--json", str(tmp_path / "fedusd.json")])
    figures = json.loads((tmp_path / "fedusd.json").read_text())["figures"]
    assert figures["recipe"] == "fedusd_digits"
    (cell,) = figures["per_seed"]["0.01"]["fedusd"]
    assert "fed_method=fedusd" in cell["overrides"]
    assert len(cell["acc"]) == 2
    summary = run_recipe("fedusd_digits", cell["overrides"], tmp_path / "recipe")
    assert summary["status"] == "finished"
    with (tmp_path / "recipe" / "logs" / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    acc = [float(r["val/acc"]) for r in rows if r.get("val/acc")]
    assert acc == pytest.approx(cell["acc"], abs=1e-7)
    assert summary["metrics"]["val/acc"] == pytest.approx(cell["acc"][-1], abs=1e-7)
    row = next(r for r in figures["rows"] if r["method"] == "fedusd")
    sent = max(float(r["fed/bytes_max_per_client"]) for r in rows if r.get("fed/bytes_max_per_client"))
    assert row["bytes/client/round (max)"] == sent
    assert row["best baseline"] == "fedavg"
