"""Recourse tables: shapes, favourable-is-1 labels, specs that hold for every row, z-scores."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.preprocessing import StandardScaler

from lightning_icml26.data.recourse_tables import RECOURSE_TABLES, load_recourse_table, make_credit

SHAPES = {
    "compas": (6172, 7),
    "pima": (532, 7),
    "german": (1000, 10),
    "breast_cancer": (569, 30),
    "wine": (178, 13),
    "credit": (2000, 7),
}


@pytest.mark.parametrize("name", RECOURSE_TABLES)
def test_tables_load_offline_with_a_spec_every_row_satisfies(name: str) -> None:
    table = load_recourse_table(name)
    assert table.X.shape == SHAPES[name]
    assert table.spec.n_features == len(table.feature_names) == table.X.shape[1]
    table.spec.check(table.X)
    raw = load_recourse_table(name, standardize=False)
    np.testing.assert_allclose(table.X, StandardScaler().fit_transform(raw.X), atol=1e-9)
    np.testing.assert_array_equal(table.y, raw.y)
    assert set(np.unique(table.y)) == ({0, 1, 2} if name == "wine" else {0, 1})


def test_declared_actionability() -> None:
    pima = load_recourse_table("pima", standardize=False)
    names = pima.feature_names
    assert not pima.spec.mutable[names.index("npreg")]
    assert pima.spec.direction[names.index("age")] == 1
    assert pima.y.mean() == pytest.approx(355 / 532)  # MASS Pima.tr + Pima.te: 355 without diabetes
    compas = load_recourse_table("compas", standardize=False)
    assert compas.spec.direction[compas.feature_names.index("priors_count")] == -1
    credit = make_credit(n=500, seed=1, standardize=False)
    assert credit.spec.grids[credit.feature_names.index("accounts")] == (0.0, 1.0, 2.0, 3.0, 4.0, 5.0)
    with pytest.raises(ValueError, match="name must be one of"):
        load_recourse_table("australian")
