"""PB-SCM simulator and PGF tools against closed forms, autograd and simulation."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
import torch

from lightning_icml26.algorithms.causal import (
    closed_form_log_pgf,
    empirical_log_pgf,
    empirical_log_pgf_torch,
    log_cumulant,
    log_pgf_derivative,
    monomial_support,
    triple_patterns,
)
from lightning_icml26.data import PBSCMSimulator, graph_code, random_pbscm_graph

ALL_PATTERNS = [p for adj in [(True, True, True), (True, False, True)] for p, _ in triple_patterns(adj)]
Z_GRID = [np.array(z) for z in [(0.3, 0.6, 0.9), (0.9, 0.2, 0.5), (0.5, 0.5, 0.5), (1.0, 0.1, 0.7)]]


def _annotate(graph: nx.DiGraph, seed: int) -> nx.DiGraph:
    rng = np.random.default_rng(seed)
    for node in graph:
        graph.nodes[node]["mu"] = float(rng.uniform(0.5, 1.5))
    for edge in graph.edges:
        graph.edges[edge]["alpha"] = float(rng.uniform(0.2, 0.9))
    return graph


@pytest.mark.parametrize("index", range(len(ALL_PATTERNS)), ids=[repr(p) for p in ALL_PATTERNS])
def test_closed_form_log_pgf_matches_simulation(index: int) -> None:
    graph = _annotate(ALL_PATTERNS[index].graph(), index)
    x = PBSCMSimulator(graph).sample(20000, seed=index)
    for z in Z_GRID:
        terms = np.prod(z ** x.astype(float), axis=1)
        se = terms.std() / np.sqrt(len(terms)) / terms.mean()  # delta method for log of the mean
        assert abs(empirical_log_pgf(x, z) - closed_form_log_pgf(graph, z)) < 3 * se


def test_log_space_has_no_underflow() -> None:
    x = np.array([[400, 3], [500, 0]])
    value = empirical_log_pgf(x, [0.05, 1.0])
    assert np.isfinite(value)
    assert value == pytest.approx(np.logaddexp(400 * np.log(0.05), 500 * np.log(0.05)) - np.log(2))
    assert np.isfinite(log_pgf_derivative(x, [0.05, 0.05], [2, 1]))


@pytest.mark.parametrize("order", [(1, 0, 0), (1, 1, 0), (2, 1, 0), (1, 1, 2), (0, 3, 0)])
def test_falling_factorial_derivatives_match_autograd(order: tuple[int, int, int]) -> None:
    x = np.random.default_rng(0).poisson([1.0, 2.0, 0.7], size=(300, 3))
    z0 = torch.tensor([0.4, 0.7, 0.9], dtype=torch.float64, requires_grad=True)
    value = empirical_log_pgf_torch(torch.from_numpy(x), z0).exp()
    for var, k in enumerate(order):
        for _ in range(k):
            (grad,) = torch.autograd.grad(value, z0, create_graph=True)
            value = grad[var]
    reference = float(value.detach())
    assert np.exp(log_pgf_derivative(x, z0.detach().numpy(), list(order))) == pytest.approx(reference, rel=1e-9)


def test_poisson_and_thinning_pgf_identities() -> None:
    mu, alpha = 2.5, 0.4
    graph = nx.DiGraph()
    graph.add_node("X", mu=mu)
    graph.add_node("Y", mu=0.0)
    graph.add_edge("X", "Y", alpha=alpha)
    for zx, zy in [(0.2, 0.9), (0.7, 0.3), (1.0, 0.5)]:
        # G_X(z) = exp(mu (z - 1)); Y = alpha o X, so G_{X,Y}(zx, zy) = G_X(zx (1 - alpha + alpha zy))
        assert closed_form_log_pgf(graph, [zx, zy]) == pytest.approx(mu * (zx * (1 - alpha + alpha * zy) - 1))
    x = PBSCMSimulator(graph).sample(40000, seed=3)
    for zy in (0.1, 0.5, 0.8):
        terms = zy ** x[:, 1].astype(float)
        se = terms.std() / np.sqrt(len(terms)) / terms.mean()
        thinned = mu * ((1 - alpha + alpha * zy) - 1)  # G_{alpha o X}(z) = G_X(1 - alpha + alpha z)
        assert abs(empirical_log_pgf(x[:, 1:], [zy]) - thinned) < 3 * se


def _path_weight(graph: nx.DiGraph, path: list[str]) -> float:
    return float(np.prod([graph.edges[u, v]["alpha"] for u, v in itertools.pairwise(path)]))


def _paths(graph: nx.DiGraph, s: str, t: str) -> list[list[str]]:
    return [[s]] if s == t else [list(p) for p in nx.all_simple_paths(graph, s, t)]


def _pair_weight(graph: nx.DiGraph, p1: list[str], p2: list[str]) -> float:
    shared = 0
    while shared < min(len(p1), len(p2)) and p1[shared] == p2[shared]:
        shared += 1
    return (
        _path_weight(graph, p1[:shared]) * _path_weight(graph, p1[shared - 1 :]) * _path_weight(graph, p2[shared - 1 :])
    )


def test_simulated_moments_match_path_sums() -> None:
    graph = random_pbscm_graph(5, n_latent=2, seed=4)
    sim = PBSCMSimulator(graph)
    x = sim.sample(200000, seed=5).astype(float)
    nodes = list(graph)
    for a, target in enumerate(sim.observed):
        mean = sum(graph.nodes[s]["mu"] * sum(_path_weight(graph, p) for p in _paths(graph, s, target)) for s in nodes)
        assert x[:, a].mean() == pytest.approx(mean, abs=4 * x[:, a].std() / np.sqrt(len(x)))
    cov = np.cov(x.T)
    for a, b in itertools.combinations(range(len(sim.observed)), 2):
        i, j = sim.observed[a], sim.observed[b]
        expected = sum(
            graph.nodes[s]["mu"] * _pair_weight(graph, p1, p2)
            for s in nodes
            for p1 in _paths(graph, s, i)
            for p2 in _paths(graph, s, j)
        )
        assert cov[a, b] == pytest.approx(expected, abs=0.03 + 0.02 * abs(expected))


def test_monomial_equivalence_of_edge_and_latent_confounding() -> None:
    edge = nx.DiGraph([("X", "Y")])
    latent = nx.DiGraph()
    latent.add_nodes_from(["X", "Y"])
    latent.add_node("L", latent=True)
    latent.add_edges_from([("L", "X"), ("L", "Y")])
    assert monomial_support(edge) == monomial_support(latent) == {(1, 0), (0, 1), (1, 1)}
    chain = nx.DiGraph([("A", "B"), ("B", "C")])
    collider = nx.DiGraph()
    collider.add_nodes_from("ABC")
    collider.add_edges_from([("A", "B"), ("C", "B")])
    assert (1, 1, 1) in monomial_support(chain)
    assert (1, 1, 1) not in monomial_support(collider)
    triangle = nx.DiGraph([("A", "B"), ("B", "C"), ("A", "C")])
    assert (1, 1, 2) in monomial_support(triangle)  # two directed paths A -> C: z_C squared


def test_local_statistic_near_zero_for_independent_pair() -> None:
    x = np.random.default_rng(1).poisson([2.0, 3.0, 1.0], size=(20000, 3))
    for z in (np.ones(3), np.array([1.0, 1.0, 0.05])):
        value, se, n_eff = log_cumulant(x, z, [0, 1])
        assert abs(value) < 3 * se
        assert n_eff > 100


def test_simulator_errors_and_graph_code() -> None:
    with pytest.raises(ValueError, match="acyclic"):
        PBSCMSimulator(nx.DiGraph([("A", "B"), ("B", "A")]))
    with pytest.raises(TypeError, match="networkx.DiGraph"):
        PBSCMSimulator([("A", "B")])  # type: ignore[arg-type]
    bad = nx.DiGraph([("A", "L")])
    bad.nodes["L"]["latent"] = True
    with pytest.raises(ValueError, match="latent node 'L' has parents"):
        PBSCMSimulator(bad)
    with pytest.raises(ValueError, match="alpha=1.5"):
        PBSCMSimulator(nx.DiGraph([("A", "B", {"alpha": 1.5})]))
    with pytest.raises(ValueError, match="z must lie in"):
        empirical_log_pgf([[1, 2]], [0.0, 0.5])
    with pytest.raises(ValueError, match="z must lie in"):
        empirical_log_pgf([[1, 2]], [1.2, 0.5])
    graph = random_pbscm_graph(6, n_latent=2, seed=0)
    code = graph_code(graph)
    assert code.shape == (6, 6)
    assert set(np.unique(code)) <= {0, 1, 2}
    assert int((code == 1).sum()) == sum(1 for u, v in graph.edges if not u.startswith("L"))
    assert nx.is_directed_acyclic_graph(graph)
    x = PBSCMSimulator(graph).sample(10, seed=1, return_latent=True)
    assert x.shape == (10, 8)
    assert x.dtype == np.int64
