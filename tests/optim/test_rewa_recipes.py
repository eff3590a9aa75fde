"""The ReWA recipes run end to end at a tiny size."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import Lasso

from lightning_icml26 import _recipes
from lightning_icml26.data import SparseRegressionDataModule
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


def _metric(summary: dict, name: str) -> float:
    found = [v for k, v in _flat(summary) if k == name]
    assert found, f"{name} missing from the summary: {json.dumps(summary)[:500]}"
    return float(found[0])


def _flat(node: object, key: str = "") -> list[tuple[str, object]]:
    if isinstance(node, dict):
        return [pair for k, v in node.items() for pair in _flat(v, str(k))]
    return [(key, node)]


def test_rewa_linear_recovers_the_support_beside_lasso(tmp_path: Path) -> None:
    """The recipe as shipped: exact support and a weight error within 2x of a validation-tuned Lasso."""
    cfg = _recipes.compose("rewa_linear", _QUIET, run_dir=tmp_path)
    summary = _recipes.run(cfg)
    assert _metric(summary, "test_support_f1") >= 0.9
    assert _metric(summary, "test_w_error") <= 2 * _metric(summary, "lasso_test_w_error")

    # The Lasso figures against an independent fit on the same rows (alpha chosen on the validation rows).
    dm = SparseRegressionDataModule(noise=0.01, seed=int(cfg.seed))
    dm.setup()
    x_tr, y_tr = (t.double().numpy() for t in dm._splits["train"].tensors)
    x_va, y_va = (t.double().numpy() for t in dm._splits["val"].tensors)
    errors = {}
    for alpha in np.logspace(-4, 0, 17):
        coef = Lasso(alpha=alpha, fit_intercept=False, max_iter=20000).fit(x_tr, y_tr).coef_
        errors[alpha] = (float(np.mean((x_va @ coef - y_va) ** 2)), float(np.linalg.norm(coef - dm.w_star.numpy())))
    best = min(errors, key=lambda a: errors[a][0])
    assert _metric(summary, "lasso_alpha") == pytest.approx(best)
    assert _metric(summary, "lasso_test_w_error") == pytest.approx(errors[best][1], rel=1e-4)


def test_rewa_linear_random_start_loses_the_support(tmp_path: Path) -> None:
    """Why the recipe starts from least squares: from a random start ReWA (M >= 1) cannot flip signs."""
    cfg = _recipes.compose("rewa_linear", ["model.init=normal", *_QUIET], run_dir=tmp_path)
    summary = _recipes.run(cfg)
    assert _metric(summary, "test_support_f1") < 0.9
