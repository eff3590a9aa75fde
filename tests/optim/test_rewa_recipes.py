"""The ReWA recipes run end to end at a tiny size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lightning_icml26 import _recipes
from lightning_icml26.data.fashion_mnist import FASHION_MNIST_ROOT

_QUIET = ["trainer.enable_progress_bar=false"]


def test_rewa_linear_recipe_runs(tmp_path: Path) -> None:
    overrides = [
        "trainer.max_epochs=3",
        "data.num_train=50",
        "data.num_val=20",
        "data.num_features=40",
        "data.num_nonzero=3",
        "data.batch_size=25",
        *_QUIET,
    ]
    cfg = _recipes.compose("rewa_linear", overrides, run_dir=tmp_path)
    summary = _recipes.run(cfg)
    text = json.dumps(summary)
    assert "sparsity/compression_ratio" in text
    assert "val_support_f1" in text


@pytest.mark.slow
@pytest.mark.skipif(not Path(FASHION_MNIST_ROOT).is_dir(), reason="needs apt-get install dataset-fashion-mnist")
def test_rewa_fashion_recipe_runs(tmp_path: Path) -> None:
    overrides = [
        "trainer.max_epochs=1",
        "data.num_train=256",
        "data.num_val=128",
        "data.num_test=128",
        "data.batch_size=64",
        "model.net.width=4",
        *_QUIET,
    ]
    cfg = _recipes.compose("rewa_fashion", overrides, run_dir=tmp_path)
    summary = _recipes.run(cfg)
    assert "sparsity/sparsity" in json.dumps(summary)
    sweep = json.loads((tmp_path / "magnitude_prune.json").read_text())["sweep_results"]
    assert [r["threshold"] for r in sweep] == [0.0, 0.0001, 0.001, 0.003, 0.01, 0.03, 0.1]
    assert all(0.0 <= r["score"] <= 1.0 for r in sweep)
