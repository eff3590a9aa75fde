"""PGFSkeleton and LCPBSCM on planted graphs; input validation."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from lightning_icml26.algorithms.causal import LCPBSCM, PGFSkeleton, check_counts
from lightning_icml26.data import PBSCMSimulator


def _graph(edges: list[tuple[str, str]], nodes: str, latents: tuple[str, ...] = ()) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(nodes, mu=1.5, latent=False)
    g.add_nodes_from(latents, mu=2.0, latent=True)
    g.add_edges_from(edges, alpha=0.7)
    return g


def test_lcpbscm_recovers_latent_pair_between_colliders() -> None:
    g = _graph([("A", "B"), ("L", "B"), ("L", "C"), ("D", "C")], "ABCD", ("L",))
    sim = PBSCMSimulator(g)
    est = LCPBSCM().fit(sim.sample(20000, seed=1))
    np.testing.assert_array_equal(est.graph_, sim.true_graph())
    assert est.latent_pairs_[1, 2]
    assert est.latent_pairs_.sum() == 2
    assert est.orientation_[0, 1]
    assert est.orientation_[3, 2]
    assert est.orientation_.sum() == 2


def test_lcpbscm_chain_is_an_equivalence_class_not_a_guess() -> None:
    g = _graph([("A", "B"), ("B", "C")], "ABC")
    est = LCPBSCM().fit(PBSCMSimulator(g).sample(20000, seed=2))
    np.testing.assert_array_equal(est.graph_, [[0, 1, 0], [1, 0, 1], [0, 1, 0]])  # adjacent, not oriented
    members = est.equivalence_classes_[(0, 1, 2)]
    assert ["X0->X1", "X1->X2"] in members
    assert ["X1->X0", "X1->X2"] in members
    assert len(members) == 5


def test_lcpbscm_triangle_sink_has_arrowheads() -> None:
    g = _graph([("A", "B"), ("B", "C"), ("A", "C")], "ABC")
    est = LCPBSCM().fit(PBSCMSimulator(g).sample(100000, seed=3))
    assert est.adjacency_.sum() == 6
    assert est.orientation_[0, 2]
    assert est.orientation_[1, 2]
    assert ["X0->X1", "X0->X2", "X1->X2"] in est.equivalence_classes_[(0, 1, 2)]


def test_pgf_skeleton_collider_and_independence() -> None:
    g = _graph([("A", "C"), ("B", "C")], "ABCD")
    est = PGFSkeleton().fit(PBSCMSimulator(g).sample(20000, seed=4))
    np.testing.assert_array_equal(est.adjacency_[3], [False] * 4)  # D independent of everything
    assert est.orientation_[0, 2]
    assert est.orientation_[1, 2]
    assert not est.latent_pairs_.any()


@pytest.mark.parametrize("estimator", [LCPBSCM, PGFSkeleton])
def test_bad_inputs_name_the_argument(estimator: type) -> None:
    good = np.ones((200, 3), dtype=int)
    with pytest.raises(ValueError, match=r"non-negative counts; X\[0, 1\] = -1"):
        estimator().fit(np.array([[0, -1, 2]] * 200))
    with pytest.raises(ValueError, match="integer counts"):
        estimator().fit(good + 0.5)
    with pytest.raises(ValueError, match="finite"):
        estimator().fit(np.where(np.eye(200, 3) > 0, np.nan, 1.0))
    with pytest.raises(ValueError, match="at least 3 variables"):
        estimator().fit(good[:, :2])
    with pytest.raises(ValueError, match="n_samples=50"):
        estimator().fit(good[:50])
    with pytest.raises(ValueError, match="alpha must lie in"):
        estimator(alpha=1.5)
    with pytest.raises(ValueError, match="z0 must lie in"):
        estimator(z0=1.0)


def test_check_counts_shape() -> None:
    with pytest.raises(ValueError, match="2-D array"):
        check_counts(np.ones(5))
