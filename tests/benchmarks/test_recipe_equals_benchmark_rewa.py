"""Recipe equals benchmark (ReWA): a cell of ``rewa_sparsity --quick`` is the ``rewa_fashion_mlp`` recipe run.

The benchmark's quick path at a tiny size writes each cell's overrides and threshold sweep; the recipe, run on its
own with the same overrides and seed, must give the same validation and test accuracy and compression ratio at
every threshold, and the benchmark's chosen point must be one of those.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.rewa_sparsity import main
from lightning_icml26.cli import run_recipe
from lightning_icml26.data.fashion_mnist import FASHION_MNIST_ROOT

pytestmark = pytest.mark.skipif(not Path(FASHION_MNIST_ROOT).is_dir(), reason="needs dataset-fashion-mnist (make data)")

TINY = ["--quick", "--epochs", "1", "--num-train", "256", "--num-val", "128", "--num-test", "128"]


def test_quick_cell_equals_the_recipe_with_the_same_overrides(tmp_path: Path) -> None:
    main([*TINY, "--methods", "ReWA", "--grid-size", "1", "--json", str(tmp_path / "rewa.json")])
    figures = json.loads((tmp_path / "rewa.json").read_text())["figures"]
    (seed,) = figures["per_seed"]
    cell = next(c for c in seed["cells"] if c["method"] == "ReWA")
    assert "model.optimizer.weight_decay=0.0001" in cell["overrides"]
    summary = run_recipe("rewa_fashion_mlp", cell["overrides"], tmp_path / "recipe")
    assert summary["status"] == "finished"
    sweep = json.loads((tmp_path / "recipe" / "magnitude_prune.json").read_text())["sweep_results"]
    assert len(sweep) == len(cell["sweep"]) == 29
    for ours, theirs in zip(cell["sweep"], sweep, strict=True):
        for key in ("threshold", "score", "test_score", "compression_ratio"):
            assert ours[key] == pytest.approx(theirs[key], rel=1e-6, abs=1e-9), key
    dense = next(c for c in seed["cells"] if c["method"] == "dense")["sweep"][0]
    assert seed["dense_val_accuracy"] == dense["score"]
