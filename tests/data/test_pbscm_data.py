"""PBSCMDataModule: seeded count tables with their planted graphs, shapes, disjoint splits, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lightning_icml26.data import PBSCMDataModule, PBSCMGraphs, PBSCMSimulator, graph_code


def test_batches_hold_counts_and_the_planted_graph() -> None:
    dm = PBSCMDataModule(num_val=2, num_test=3, n_observed=5, n_latent=2, n_samples=400, batch_size=2, seed=1)
    batches = list(dm.test_dataloader())
    assert [tuple(b["counts"].shape) for b in batches] == [(2, 400, 5), (1, 400, 5)]
    assert [tuple(b["target"].shape) for b in batches] == [(2, 5, 5), (1, 5, 5)]
    test = dm.graphs("test")
    for k in range(3):
        graph = test.graph(k)
        assert sum(graph.nodes[n]["latent"] for n in graph) == 2
        item = test[k]
        np.testing.assert_array_equal(item["target"].numpy(), graph_code(graph))  # independent re-encoding
        sim = PBSCMSimulator(graph)  # latent columns dropped; the same counts as a direct simulation
        _, sample_seed = test._seeds(k)
        np.testing.assert_array_equal(item["counts"].numpy(), sim.sample(400, seed=sample_seed))
        assert item["counts"].dtype == torch.int64
        assert bool((item["counts"] >= 0).all())
    assert len(list(dm.train_dataloader())) == 0


def test_seeded_and_splits_disjoint() -> None:
    a = PBSCMDataModule(num_val=3, num_test=3, n_observed=4, n_latent=1, n_samples=200, seed=7)
    b = PBSCMDataModule(num_val=3, num_test=3, n_observed=4, n_latent=1, n_samples=200, seed=7)
    c = PBSCMDataModule(num_val=3, num_test=3, n_observed=4, n_latent=1, n_samples=200, seed=8)
    for k in range(3):
        assert torch.equal(a.graphs("test")[k]["counts"], b.graphs("test")[k]["counts"])
        assert not torch.equal(a.graphs("test")[k]["counts"], c.graphs("test")[k]["counts"])
        assert not torch.equal(a.graphs("test")[k]["counts"], a.graphs("val")[k]["counts"])
    # access order does not change a draw
    fresh = PBSCMGraphs(3, 4, 1, 200, "test", seed=7)
    assert torch.equal(fresh[2]["counts"], a.graphs("test")[2]["counts"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_observed": 2}, "n_observed must be an integer >= 3, got 2"),
        ({"n_samples": 0}, "n_samples must be an integer >= 1, got 0"),
        ({"num_test": -1}, "num_test must be an integer >= 0, got -1"),
        ({"batch_size": 1.5}, "batch_size must be an integer >= 1, got 1.5"),
        ({"alpha_range": (0.5, 1.5)}, "alpha_range must be a pair"),
        ({"edges_per_node": -1.0}, "edges_per_node must be >= 0"),
    ],
)
def test_bad_arguments_are_named(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        PBSCMDataModule(**kwargs)


def test_bad_split_and_index() -> None:
    with pytest.raises(ValueError, match="split must be one of"):
        PBSCMGraphs(1, 3, 0, 10, "holdout")
    with pytest.raises(ValueError, match="split must be one of"):
        PBSCMDataModule().graphs("holdout")
    with pytest.raises(IndexError, match="index must lie in"):
        PBSCMGraphs(1, 3, 0, 10, "test")[1]
