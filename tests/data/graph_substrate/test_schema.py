"""Round trip of the unified graph schema on random graphs of every kind, and its errors."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightning_icml26.data.graph_substrate import (
    GRAPH_KINDS,
    GraphSchemaSerializer,
    parse_graph_schema,
    relabel_to_integers,
)

_WORD = st.from_regex(r"[a-z][a-z ]{0,8}[a-z]", fullmatch=True)
_REL = st.from_regex(r"[A-Za-z][A-Za-z_ ]{0,6}[A-Za-z]", fullmatch=True)


@st.composite
def graphs(draw: st.DrawFn, kind: str) -> nx.Graph:
    directed = GRAPH_KINDS[kind][0]
    n = draw(st.integers(0, 8))
    graph: nx.Graph = nx.DiGraph() if directed else nx.Graph()
    string_ids = kind == "event" and draw(st.booleans())
    ids = [f"E{i}" if string_ids else i for i in draw(st.permutations(range(n)))]
    for i, node in enumerate(ids):
        attrs: dict = {}
        if kind == "molecule":
            attrs["element"] = draw(st.sampled_from(["C", "O", "N", "Cl", "H"]))
        elif kind == "matching":
            attrs["bipartite"] = i % 2
        elif kind in ("scene", "event") or draw(st.booleans()):
            attrs["label"] = draw(st.text(max_size=6))  # any text: quotes, commas, newlines, non-ASCII
        graph.add_node(node, **attrs)
    pairs = [(u, v) for u in ids for v in ids if u != v]
    if kind == "matching":
        pairs = [(u, v) for u, v in pairs if graph.nodes[u]["bipartite"] == 0 and graph.nodes[v]["bipartite"] == 1]
    chosen = draw(st.lists(st.sampled_from(pairs), max_size=12)) if pairs else []
    for u, v in chosen:
        if kind == "weighted":
            graph.add_edge(u, v, weight=draw(st.one_of(st.integers(-50, 50), st.floats(-1e6, 1e6))))
        elif kind == "flow":
            graph.add_edge(u, v, capacity=draw(st.one_of(st.integers(0, 50), st.floats(0, 1e6))))
        elif kind == "molecule":
            graph.add_edge(u, v, bond=draw(st.sampled_from(["single", "double", "triple", "aromatic"])))
        elif kind == "scene":
            graph.add_edge(u, v, predicate=draw(_REL))
        elif kind == "event":
            graph.add_edge(u, v, relation=draw(st.sampled_from(["BEFORE", "AFTER", "CAUSE", "SUBEVENT"])))
        else:
            graph.add_edge(u, v)
    return graph


def _same(a: nx.Graph, b: nx.Graph) -> bool:
    return (
        type(a) is type(b)
        and dict(a.nodes(data=True)) == dict(b.nodes(data=True))
        and {frozenset((u, v)) if not a.is_directed() else (u, v): d for u, v, d in a.edges(data=True)}
        == {frozenset((u, v)) if not b.is_directed() else (u, v): d for u, v, d in b.edges(data=True)}
    )


@pytest.mark.parametrize("kind", sorted(GRAPH_KINDS))
def test_round_trip_on_random_graphs(kind: str) -> None:
    serializer = GraphSchemaSerializer(kind)

    @settings(max_examples=40, deadline=None, database=None)
    @given(graph=graphs(kind), task=st.one_of(st.none(), st.sampled_from(["graph_search:cycle", "scene_graph:qa"])))
    def check(graph: nx.Graph, task: str | None) -> None:
        text = serializer.serialize(graph, task=task)
        parsed = parse_graph_schema(text)
        assert parsed.kind == kind
        assert parsed.task == task
        assert _same(parsed.graph, graph)
        assert len(text.split("[Graph Facts]\n")[-1].splitlines()) == graph.number_of_edges() or (
            graph.number_of_edges() == 0
        )

    check()


def test_rendering_of_each_kind() -> None:
    mol = nx.Graph()
    mol.add_node(1, element="C")
    mol.add_node(2, element="O")
    mol.add_edge(1, 2, bond="double")
    assert GraphSchemaSerializer("molecule").facts(mol) == ["(1:C, double, 2:O)"]
    match = nx.Graph()
    match.add_node(0, bipartite=0)
    match.add_node(3, bipartite=1)
    match.add_edge(0, 3)
    assert GraphSchemaSerializer("matching").facts(match) == ["(0:Applicant, -, 3:Job)"]
    flow = nx.DiGraph()
    flow.add_edge(0, 1, capacity=4)
    assert GraphSchemaSerializer("flow").facts(flow) == ["(0, capacity: 4, 1)"]
    event = nx.DiGraph()
    event.add_node("E1", label="attack")
    event.add_node("E2", label="fled")
    event.add_edge("E1", "E2", relation="CAUSE")
    assert GraphSchemaSerializer("event").facts(event) == ['(E1: "attack", CAUSE, E2: "fled")']


def test_real_graphs_relabel_and_round_trip() -> None:
    for graph in (nx.karate_club_graph(), nx.florentine_families_graph(), nx.les_miserables_graph()):
        plain = relabel_to_integers(nx.Graph(graph.edges))
        parsed = parse_graph_schema(GraphSchemaSerializer("undirected").serialize(plain)).graph
        assert _same(parsed, plain)
        names = {plain.nodes[n].get("label", str(n)) for n in plain}
        assert names == {str(n) for n in graph}


def test_errors() -> None:
    with pytest.raises(ValueError, match="kind='hypergraph' has no serialiser"):
        GraphSchemaSerializer("hypergraph")
    with pytest.raises(TypeError, match="MultiGraph"):
        GraphSchemaSerializer("undirected").serialize(nx.MultiGraph([(0, 1)]))
    with pytest.raises(TypeError, match="DiGraph"):
        GraphSchemaSerializer("scene").serialize(nx.Graph([(0, 1)]))
    with pytest.raises(ValueError, match="node id 'Evelyn Jefferson'"):
        GraphSchemaSerializer("undirected").serialize(nx.Graph([("Evelyn Jefferson", "E1")]))
    with pytest.raises(ValueError, match="'predicate'"):
        GraphSchemaSerializer("scene").serialize(nx.DiGraph([(0, 1, {"predicate": "a, b"})]))
    with pytest.raises(ValueError, match="'capacity' must be >= 0"):
        GraphSchemaSerializer("flow").serialize(nx.DiGraph([(0, 1, {"capacity": -1})]))
    with pytest.raises(ValueError, match="task must look like"):
        GraphSchemaSerializer("undirected").serialize(nx.Graph([(0, 1)]), task="cycle")
    text = "[Graph Schema]\nkind: undirected\nedge format: (node, -, node)\nnodes: 0; 1\n[Graph Facts]\n(0, -, 7)"
    with pytest.raises(ValueError, match="names node 7, which the nodes line does not declare"):
        parse_graph_schema(text)
    with pytest.raises(ValueError, match="has no serialiser"):
        parse_graph_schema(text.replace("kind: undirected", "kind: tree"))
    with pytest.raises(ValueError, match="a fact must read"):
        parse_graph_schema(text.replace("(0, -, 7)", "0 - 1"))
    with pytest.raises(ValueError, match="declared as"):
        parse_graph_schema(text.replace("(0, -, 7)", '(0: "x", -, 1)'))
