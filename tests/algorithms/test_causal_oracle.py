"""LCPBSCM with exact closed-form PGF tests: the logic alone, without finite-sample error."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from lightning_icml26.algorithms.causal import (
    LCPBSCM,
    ClosedFormOracle,
    monomial_support,
    triple_patterns,
)
from lightning_icml26.data import PBSCMSimulator

_ADJ = ((True, True, True), (True, False, True))
_CASES = [(adj, index) for adj in _ADJ for index in range(len(triple_patterns(adj)))]


def _parametrise(graph: nx.DiGraph, seed: int) -> nx.DiGraph:
    rng = np.random.default_rng(seed)
    for node in graph:
        graph.nodes[node]["mu"] = float(rng.uniform(1, 3))
    for edge in graph.edges:
        graph.edges[edge]["alpha"] = float(rng.uniform(0.2, 1.0))
    return graph


@pytest.mark.parametrize(("adjacency", "index"), _CASES)
def test_exact_local_verdict_is_the_monomial_class(adjacency: tuple[bool, bool, bool], index: int) -> None:
    patterns = triple_patterns(adjacency)
    pattern, _ = patterns[index]
    graph = _parametrise(pattern.graph(), index)
    # the class from the monomial supports themselves (independent of the signature the estimator uses)
    support = monomial_support(graph)
    truth = sorted(sorted(p.edges(["X0", "X1", "X2"])) for p, _ in patterns if monomial_support(p.graph()) == support)
    est = LCPBSCM().fit_oracle(ClosedFormOracle(graph))
    code = PBSCMSimulator(graph).true_graph()
    np.testing.assert_array_equal(est.adjacency_, (code > 0) | (code.T > 0))
    found = sorted(sorted(edges) for edges in est.equivalence_classes_[(0, 1, 2)])
    assert set(map(tuple, truth)) <= set(map(tuple, found))  # monomially equivalent patterns are never split
    assert pattern.edges(["X0", "X1", "X2"]) in [list(e) for e in est.equivalence_classes_[(0, 1, 2)]]


def _planted(edges: list[tuple[str, str]], latents: tuple[str, ...]) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(sorted({n for e in edges for n in e} - set(latents)), latent=False)
    g.add_nodes_from(latents, latent=True)
    g.add_edges_from(edges)
    return _parametrise(g, 0)


@pytest.mark.parametrize(
    ("edges", "latents"),
    [
        ([("A", "B"), ("L", "B"), ("L", "C"), ("D", "C")], ("L",)),
        ([("A", "B"), ("L", "B"), ("L", "C"), ("D", "C"), ("M", "C"), ("M", "E"), ("F", "E")], ("L", "M")),
        ([("A", "B"), ("L", "B"), ("L", "C"), ("D", "C"), ("C", "E"), ("B", "F")], ("L",)),
    ],
)
def test_exact_assembly_marks_the_planted_latent_pairs(edges: list[tuple[str, str]], latents: tuple[str, ...]) -> None:
    graph = _planted(edges, latents)
    truth = PBSCMSimulator(graph).true_graph()
    est = LCPBSCM().fit_oracle(ClosedFormOracle(graph))
    np.testing.assert_array_equal(est.latent_pairs_, truth == 2)
    np.testing.assert_array_equal(est.adjacency_, (truth > 0) | (truth.T > 0))


def test_oracle_derivatives_are_exact_and_checked() -> None:
    g = nx.DiGraph()
    g.add_node("X", mu=2.0)
    g.add_node("Y", mu=1.0)
    g.add_edge("X", "Y", alpha=0.5)
    oracle = ClosedFormOracle(g)
    # log G = 2 (z_x (0.5 + 0.5 z_y) - 1) + (z_y - 1): d_x d_y = 1, d_y d_y = 0, d_x at z_y = 0 is 1
    assert oracle.derivative([], [0, 1]) == pytest.approx(1.0)
    assert oracle.derivative([], [1, 1]) == 0.0
    assert oracle.derivative([1], [0]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="zeroed"):
        oracle.derivative([0], [0])
    with pytest.raises(ValueError, match="variables"):
        oracle.derivative([], [5])
    with pytest.raises(TypeError, match="graph"):
        ClosedFormOracle("X->Y")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="oracle"):
        LCPBSCM().fit_oracle(g)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="oracle"):
        LCPBSCM().fit_oracle(oracle)
