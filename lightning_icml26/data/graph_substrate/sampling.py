"""Seeded random graphs of every schema kind, and networkx's real graphs held out for evaluation."""

from __future__ import annotations

import random

import networkx as nx

from lightning_icml26.data.graph_substrate.schema import GRAPH_KINDS, relabel_to_integers

__all__ = ["OBJECTS", "PREDICATES", "real_graphs", "sample_graph"]

OBJECTS = ("man", "woman", "horse", "dog", "table", "cup", "tree", "car", "hat", "shirt", "road", "window")
"""Object labels of the synthetic scene-like graphs."""
PREDICATES = ("on", "near", "holding", "riding", "wearing", "behind", "under", "has")
"""Predicates of the synthetic scene-like graphs."""
_TRIGGERS = ("attack", "fled", "arrest", "storm", "flood", "vote", "protest", "meeting", "fire", "rescue")
_RELATIONS = ("BEFORE", "CAUSE", "SUBEVENT")
_ELEMENTS = ("C", "C", "C", "N", "O", "S")
_BONDS = ("single", "single", "double", "aromatic")


def _check(kind: str, num_nodes: int, edge_prob: float) -> None:
    if kind not in GRAPH_KINDS:
        raise ValueError(f"kind={kind!r} has no serialiser; the graph kinds are {sorted(GRAPH_KINDS)}")
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, int) or num_nodes < 2:
        raise ValueError(f"num_nodes must be an int >= 2, got {num_nodes!r}")
    if not 0.0 <= edge_prob <= 1.0:
        raise ValueError(f"edge_prob must lie in [0, 1], got {edge_prob!r}")


def sample_graph(kind: str, num_nodes: int, edge_prob: float, rng: random.Random) -> nx.Graph:
    """A random graph of ``kind`` with ``num_nodes`` nodes (Erdős–Rényi edges with ``edge_prob``).

    Weighted graphs get integer weights 1..9; flow graphs are DAGs from node 0 to node ``n-1`` with
    capacities 1..9; matching graphs split the nodes into applicants (even count first) and jobs;
    molecules are random trees of atoms with a few ring-closing bonds; scene and event graphs are labelled
    digraphs over small vocabularies.

    Args:
        kind: a schema kind (see :data:`~lightning_icml26.data.graph_substrate.GRAPH_KINDS`).
        num_nodes: number of nodes (>= 2).
        edge_prob: probability of each candidate edge.
        rng: the random source (the graph depends on it only).

    Returns:
        The graph, with the attributes :class:`GraphSchemaSerializer` reads.

    Example:
        >>> g = sample_graph("weighted", 5, 0.5, random.Random(0))
        >>> g.number_of_nodes(), all(1 <= w <= 9 for _, _, w in g.edges(data="weight"))
        (5, True)
    """
    _check(kind, num_nodes, edge_prob)
    n = num_nodes
    seed = rng.randrange(2**31)
    if kind in ("undirected", "weighted"):
        graph = nx.gnp_random_graph(n, edge_prob, seed=seed)
        if kind == "weighted":
            for u, v in graph.edges:
                graph.edges[u, v]["weight"] = rng.randint(1, 9)
        return graph
    if kind == "flow":
        flow = nx.DiGraph()
        flow.add_nodes_from(range(n))
        for u in range(n):
            for v in range(u + 1, n):
                if rng.random() < edge_prob:
                    flow.add_edge(u, v, capacity=rng.randint(1, 9))
        return flow
    if kind == "matching":
        left = (n + 1) // 2
        match = nx.bipartite.random_graph(left, n - left, edge_prob, seed=seed)
        return nx.Graph(match)
    if kind == "molecule":
        return _molecule(n, edge_prob, rng)
    return _labelled(kind, n, edge_prob, rng)


def _molecule(n: int, edge_prob: float, rng: random.Random) -> nx.Graph:
    mol = nx.Graph()
    for i in range(n):
        mol.add_node(i, element=rng.choice(_ELEMENTS))
        if i:
            mol.add_edge(rng.randrange(i), i, bond=rng.choice(_BONDS))
    for _ in range(int(edge_prob * n / 2)):
        u, v = rng.sample(range(n), 2)
        if not mol.has_edge(u, v):
            mol.add_edge(u, v, bond="single")
    return mol


def _labelled(kind: str, n: int, edge_prob: float, rng: random.Random) -> nx.DiGraph:
    labelled = nx.DiGraph()
    scene = kind == "scene"
    for i in range(n):
        name = i if scene else f"E{i + 1}"
        labelled.add_node(name, label=rng.choice(OBJECTS if scene else _TRIGGERS))
    names = list(labelled.nodes)
    for u in names:
        for v in names:
            if u != v and not labelled.has_edge(v, u) and rng.random() < edge_prob:
                attr = {"predicate": rng.choice(PREDICATES)} if scene else {"relation": rng.choice(_RELATIONS)}
                labelled.add_edge(u, v, **attr)
    return labelled


def real_graphs() -> dict[str, tuple[str, nx.Graph]]:
    """The real graphs bundled with networkx real graphs in schema form: ``{name: (kind, graph)}``.

    Karate club and Florentine families as undirected graphs, Les Misérables as a weighted graph
    (co-appearance counts), Davis's southern women as a matching graph (women are applicants, events jobs).
    Names become ``label`` attributes of integer nodes.

    Example:
        >>> {name: (kind, g.number_of_nodes()) for name, (kind, g) in real_graphs().items()}["karate"]
        ('undirected', 34)
    """
    karate = relabel_to_integers(nx.Graph(nx.karate_club_graph().edges))
    florentine = relabel_to_integers(nx.Graph(nx.florentine_families_graph().edges))
    les = nx.les_miserables_graph()
    weighted = relabel_to_integers(nx.Graph((u, v, {"weight": int(w)}) for u, v, w in les.edges(data="weight")))
    davis = nx.davis_southern_women_graph()
    matching = nx.Graph()
    for node, side in sorted(davis.nodes(data="bipartite"), key=lambda item: (item[1], str(item[0]))):
        matching.add_node(node, bipartite=side)
    matching.add_edges_from(davis.edges)
    matching = nx.convert_node_labels_to_integers(matching, ordering="default")
    return {
        "karate": ("undirected", karate),
        "florentine": ("undirected", florentine),
        "les_miserables": ("weighted", weighted),
        "davis": ("matching", matching),
    }
