"""Poisson branching structural causal model (PB-SCM) simulator with optional latent Poisson sources.

Every node ``v`` of a DAG receives independent Poisson noise ``eps_v ~ Poisson(mu_v)`` and, from each parent
``u``, a binomial thinning ``alpha_vu o X_u ~ Binomial(X_u, alpha_vu)`` (one independent draw per edge).
Latent nodes are Poisson sources without parents; their columns are dropped from the returned samples.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np

__all__ = ["PBSCMSimulator", "graph_code", "random_pbscm_graph"]

_ALPHA = "alpha"
_MU = "mu"
_LATENT = "latent"


def _check_range(name: str, value: tuple[float, float], low: float, high: float) -> tuple[float, float]:
    if len(value) != 2 or not (low <= value[0] <= value[1] <= high):
        raise ValueError(f"{name} must be a pair (a, b) with {low} <= a <= b <= {high}, got {value!r}")
    return float(value[0]), float(value[1])


def random_pbscm_graph(
    n_observed: int,
    n_latent: int = 0,
    edges_per_node: float = 1.5,
    alpha_range: tuple[float, float] = (0.2, 1.0),
    mu_range: tuple[float, float] = (1.0, 3.0),
    seed: int | None = None,
) -> nx.DiGraph:
    """A random PB-SCM: upper-triangular DAG on ``X0..X{p-1}`` plus latent sources with two observed children.

    About ``edges_per_node * n_observed`` edges are drawn uniformly among the ordered pairs ``i < j`` (capped
    at the number of pairs). Each latent ``L{k}`` gets two distinct observed children. Edge attribute
    ``alpha`` is drawn from ``alpha_range`` and node attribute ``mu`` from ``mu_range``; latent nodes carry
    ``latent=True``.

    Args:
        n_observed: number of observed variables (>= 1).
        n_latent: number of latent confounders (>= 0; needs ``n_observed >= 2`` when positive).
        edges_per_node: expected edges per observed node.
        alpha_range: range of thinning probabilities.
        mu_range: range of Poisson means.
        seed: seed of the generator.

    Returns:
        The annotated ``networkx.DiGraph``.

    Example:
        >>> g = random_pbscm_graph(5, n_latent=1, seed=0)
        >>> sorted(n for n in g if g.nodes[n]["latent"])
        ['L0']
        >>> nx.is_directed_acyclic_graph(g)
        True
    """
    if not isinstance(n_observed, int) or n_observed < 1:
        raise ValueError(f"n_observed must be an integer >= 1, got {n_observed!r}")
    if not isinstance(n_latent, int) or n_latent < 0 or (n_latent > 0 and n_observed < 2):
        raise ValueError(f"n_latent must be an integer >= 0 (and n_observed >= 2 when > 0), got {n_latent!r}")
    if edges_per_node < 0:
        raise ValueError(f"edges_per_node must be >= 0, got {edges_per_node!r}")
    a_low, a_high = _check_range("alpha_range", alpha_range, 0.0, 1.0)
    m_low, m_high = _check_range("mu_range", mu_range, 0.0, float("inf"))
    rng = np.random.default_rng(seed)
    graph = nx.DiGraph()
    names = [f"X{i}" for i in range(n_observed)]
    for name in names:
        graph.add_node(name, mu=float(rng.uniform(m_low, m_high)), latent=False)
    pairs = [(i, j) for i in range(n_observed) for j in range(i + 1, n_observed)]
    n_edges = min(len(pairs), int(round(edges_per_node * n_observed)))
    for index in rng.choice(len(pairs), size=n_edges, replace=False) if n_edges else []:
        i, j = pairs[int(index)]
        graph.add_edge(names[i], names[j], alpha=float(rng.uniform(a_low, a_high)))
    for k in range(n_latent):
        latent = f"L{k}"
        graph.add_node(latent, mu=float(rng.uniform(m_low, m_high)), latent=True)
        for child in rng.choice(n_observed, size=2, replace=False):
            graph.add_edge(latent, names[int(child)], alpha=float(rng.uniform(a_low, a_high)))
    return graph


def graph_code(graph: nx.DiGraph, observed: list[Any] | None = None) -> np.ndarray:
    """The observed-level mixed graph of a PB-SCM as an edge-code matrix (the metrics' encoding).

    ``code[i, j] = 1, code[j, i] = 0``: directed edge ``i -> j``; ``code[i, j] = code[j, i] = 2``: the pair
    shares a latent parent and has no direct edge (a latent pair); ``0`` both ways: not adjacent.

    Args:
        graph: an annotated PB-SCM (latent nodes carry ``latent=True``).
        observed: observed node order (default: the non-latent nodes in insertion order).

    Returns:
        An ``(p, p)`` int64 matrix.

    Example:
        >>> g = nx.DiGraph([("L", "A"), ("L", "B"), ("A", "C")])
        >>> g.nodes["L"]["latent"] = True
        >>> graph_code(g).tolist()
        [[0, 2, 1], [2, 0, 0], [0, 0, 0]]
    """
    nodes = observed if observed is not None else [n for n in graph if not graph.nodes[n].get(_LATENT, False)]
    index = {n: i for i, n in enumerate(nodes)}
    code = np.zeros((len(nodes), len(nodes)), dtype=np.int64)
    for node in graph:
        if graph.nodes[node].get(_LATENT, False):
            children = [index[c] for c in graph.successors(node) if c in index]
            for a in children:
                for b in children:
                    if a != b:
                        code[a, b] = 2
    for u, v in graph.edges:
        if u in index and v in index:
            code[index[u], index[v]] = 1
            code[index[v], index[u]] = 0
    return code


class PBSCMSimulator:
    """Samples count data from a PB-SCM given as an annotated ``networkx.DiGraph``.

    Node attributes: ``mu`` (Poisson noise mean, default ``default_mu``), ``latent`` (bool, default False).
    Edge attribute: ``alpha`` (thinning probability in [0, 1], default ``default_alpha``). Latent nodes must
    have no parents. Columns of :meth:`sample` follow :attr:`observed` (the non-latent nodes in insertion
    order).

    Args:
        graph: the causal DAG.
        default_alpha: thinning probability of edges without ``alpha``.
        default_mu: Poisson mean of nodes without ``mu``.

    Raises:
        TypeError: if ``graph`` is not a ``networkx.DiGraph``.
        ValueError: for a cyclic graph, a latent node with parents, or parameters out of range.

    Example:
        >>> g = nx.DiGraph()
        >>> g.add_edge("X", "Y", alpha=0.5)
        >>> sim = PBSCMSimulator(g, default_mu=2.0)
        >>> x = sim.sample(20000, seed=0)
        >>> x.shape, sim.observed
        ((20000, 2), ['X', 'Y'])
        >>> bool(abs(x[:, 1].mean() - 3.0) < 0.1)  # 2 + 0.5 * 2
        True
    """

    def __init__(self, graph: nx.DiGraph, default_alpha: float = 0.5, default_mu: float = 1.0) -> None:
        if not isinstance(graph, nx.DiGraph):
            raise TypeError(f"graph must be a networkx.DiGraph, got {type(graph).__name__}")
        if not nx.is_directed_acyclic_graph(graph):
            cycle = nx.find_cycle(graph)
            raise ValueError(f"graph must be acyclic; it has the cycle {cycle}")
        if graph.number_of_nodes() == 0:
            raise ValueError("graph must have at least one node, got an empty graph")
        self.graph = graph
        self.order = list(nx.topological_sort(graph))
        self.mu = {n: float(graph.nodes[n].get(_MU, default_mu)) for n in graph}
        self.latent = {n: bool(graph.nodes[n].get(_LATENT, False)) for n in graph}
        self.alpha = {(u, v): float(d.get(_ALPHA, default_alpha)) for u, v, d in graph.edges(data=True)}
        for node, mu in self.mu.items():
            if not np.isfinite(mu) or mu < 0:
                raise ValueError(f"node {node!r} has mu={mu!r}; Poisson means must be finite and >= 0")
            if self.latent[node] and graph.in_degree(node) > 0:
                raise ValueError(
                    f"latent node {node!r} has parents {list(graph.predecessors(node))}; latents are sources"
                )
        for edge, alpha in self.alpha.items():
            if not 0.0 <= alpha <= 1.0:
                raise ValueError(f"edge {edge!r} has alpha={alpha!r}; thinning probabilities must lie in [0, 1]")
        self.observed = [n for n in graph if not self.latent[n]]

    def sample(self, n_samples: int, seed: int | None = None, return_latent: bool = False) -> np.ndarray:
        """Draw ``n_samples`` rows of observed counts (int64, columns in :attr:`observed` order).

        Args:
            n_samples: number of rows (>= 1).
            seed: seed of ``numpy.random.default_rng``.
            return_latent: also return the columns of every node, in ``graph`` node order.

        Returns:
            ``(n_samples, len(observed))`` counts, or every node's counts when ``return_latent``.
        """
        if not isinstance(n_samples, int | np.integer) or n_samples < 1:
            raise ValueError(f"n_samples must be an integer >= 1, got {n_samples!r}")
        rng = np.random.default_rng(seed)
        values: dict[Any, np.ndarray] = {}
        for node in self.order:
            total = rng.poisson(self.mu[node], size=int(n_samples))
            for parent in self.graph.predecessors(node):
                total = total + rng.binomial(values[parent], self.alpha[(parent, node)])
            values[node] = total.astype(np.int64)
        nodes = list(self.graph) if return_latent else self.observed
        return np.stack([values[n] for n in nodes], axis=1)

    def true_graph(self) -> np.ndarray:
        """The observed-level edge-code matrix (see :func:`graph_code`)."""
        return graph_code(self.graph, self.observed)
