"""LCPBSCM's local-pattern and random-graph studies: properties that hold by construction, and the PC wrapper."""

from __future__ import annotations

import numpy as np
import pytest

from lightning_icml26.tasks import LCPBSCM_METHODS, LcpbscmGraphsConfig, LcpbscmLocalConfig, pc_gsq


def test_local_exact_tests_recover_every_pattern_class() -> None:
    out = LcpbscmLocalConfig(n=2_000, seeds=1, base_seed=3).run()
    assert out["exact-test accuracy"] == 1.0  # the closed-form oracle answers every test exactly
    assert 0.0 <= out["accuracy"] <= 1.0
    assert out["accuracy"] >= out["skeleton right"] * out["accuracy given skeleton"] - 1e-12


def test_graphs_rows_one_per_method_and_exact_skeleton_is_complete() -> None:
    pytest.importorskip("causallearn")
    rows = LcpbscmGraphsConfig(p=4, n_latent=0, n=1_000, seeds=1, base_seed=2).run()["rows"]
    assert [r["method"] for r in rows] == list(LCPBSCM_METHODS)
    exact = rows[-1]
    assert exact["skeleton F1"] == 1.0  # the closed-form oracle finds every adjacency
    assert all(r["p"] == 4 and r["n"] == 1_000 and r["SHD sd"] == 0.0 for r in rows)  # one seed: no spread


def test_pc_gsq_finds_the_dependent_pair_only() -> None:
    pytest.importorskip("causallearn")
    rng = np.random.default_rng(1)
    a = rng.poisson(2.0, 3000)
    X = np.stack([a, a + rng.poisson(0.5, 3000), rng.poisson(2.0, 3000)], axis=1)
    code = pc_gsq(X)
    assert code[0, 1] or code[1, 0]
    assert code[0, 2] == code[2, 0] == code[1, 2] == code[2, 1] == 0


def test_settings_checks() -> None:
    with pytest.raises(ValueError, match="p must be"):
        LcpbscmGraphsConfig(p=1)
    with pytest.raises(ValueError, match="seeds must be"):
        LcpbscmLocalConfig(seeds=0)
