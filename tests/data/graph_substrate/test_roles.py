"""RoleTaskGenerator: answers agree with independent networkx calls; mutations change exactly one fact."""

from __future__ import annotations

import random

import networkx as nx
import pytest
from networkx.algorithms import bipartite
from networkx.algorithms.flow import edmonds_karp

from lightning_icml26.data.graph_substrate import (
    GraphSchemaSerializer,
    RoleTaskGenerator,
    final_answer,
    parse_graph_schema,
    real_graphs,
    sample_graph,
)


def _graphs(kind: str, count: int = 25, n: int = 7, p: float = 0.3) -> list[nx.Graph]:
    rng = random.Random(123)
    return [sample_graph(kind, n, p, rng) for _ in range(count)]


def _schema(task_prompt: str) -> nx.Graph:
    text = task_prompt.split("\nQ: ")[0].split("\nCandidate facts:")[0]
    return parse_graph_schema(text).graph


@pytest.mark.parametrize("style", ["simple", "reasoning"])
def test_nlgraph_answers_agree_with_networkx(style: str) -> None:
    gen = RoleTaskGenerator(seed=1, style=style)
    for g in _graphs("undirected"):
        task = gen.nlgraph(g, "undirected", "connectivity")
        u, v = task.meta["pair"]
        assert final_answer(task.answer) == task.target == ("Yes" if nx.has_path(g, u, v) else "No")
        cyc = gen.nlgraph(g, "undirected", "cycle")
        try:
            nx.find_cycle(g)
            has_cycle = True
        except nx.NetworkXNoCycle:
            has_cycle = False
        assert cyc.target == ("Yes" if has_cycle else "No")
        assert nx.utils.graphs_equal(_schema(cyc.prompt), g)  # the prompt carries the very graph
    for g in _graphs("weighted", p=0.5):
        task = gen.nlgraph(g, "weighted", "shortest_path")
        u, v = task.meta["pair"]
        assert int(final_answer(task.answer)) == nx.shortest_path_length(g, u, v, weight="weight")
    for g in _graphs("matching", p=0.4):
        task = gen.nlgraph(g, "matching", "matching")
        left = {n for n, side in g.nodes(data="bipartite") if side == 0}
        assert int(task.target) == len(bipartite.hopcroft_karp_matching(g, top_nodes=left)) // 2
    for g in _graphs("flow", p=0.5):
        task = gen.nlgraph(g, "flow", "flow")
        s, t = task.meta["pair"]
        assert int(task.target) == nx.maximum_flow_value(g, s, t, flow_func=edmonds_karp)


def test_real_graphs_hold_their_answers() -> None:
    gen = RoleTaskGenerator(seed=2)
    graphs = real_graphs()
    kind, davis = graphs["davis"]
    women = {n for n, side in davis.nodes(data="bipartite") if side == 0}
    assert len(women) == 18
    assert int(gen.nlgraph(davis, kind, "matching").target) == len(bipartite.hopcroft_karp_matching(davis, women)) // 2
    kind, les = graphs["les_miserables"]
    task = gen.nlgraph(les, kind, "shortest_path")
    assert int(task.target) == nx.shortest_path_length(les, *task.meta["pair"], weight="weight")
    assert gen.nlgraph(graphs["karate"][1], "undirected", "cycle").target == "Yes"


def test_traversal_answers_agree_with_networkx() -> None:
    gen = RoleTaskGenerator(seed=3, style="reasoning")
    for g in _graphs("scene", p=0.25) + _graphs("event", p=0.25):
        kind = "scene" if isinstance(next(iter(g.nodes)), int) else "event"
        for name in ("neighbors", "relation", "path", "two_hop", "weak_connectivity", "cycle"):
            task = gen.traversal(g, kind, name)
            assert final_answer(task.answer) == task.target
            if name == "neighbors":
                expected = sorted(map(str, g.successors(task.meta["node"])))
                assert task.target == (", ".join(expected) or "none")
            elif name == "relation":
                u, v = task.meta["pair"]
                assert g.has_edge(u, v) == task.meta["positive"] == (task.target == "Yes")
                assert u != v
            elif name == "path":
                assert task.target == ("Yes" if nx.has_path(g, *task.meta["pair"]) else "No")
            elif name == "two_hop":
                a, c = task.meta["pair"]
                mids = [b for b in g if b not in (a, c) and g.has_edge(a, b) and g.has_edge(b, c)]
                assert task.target == (", ".join(sorted(map(str, mids))) or "none")
            elif name == "weak_connectivity":
                assert task.target == ("Yes" if nx.is_weakly_connected(g) else "No")
            else:
                try:
                    nx.find_cycle(g, orientation="original")
                    has_cycle = True
                except nx.NetworkXNoCycle:
                    has_cycle = False
                assert task.target == ("Yes" if has_cycle else "No")


def test_relation_negatives_are_true_non_edges() -> None:
    gen = RoleTaskGenerator(seed=4)
    seen = {True: 0, False: 0}
    for g in _graphs("scene", count=40, p=0.3):
        task = gen.traversal(g, "scene", "relation")
        u, v = task.meta["pair"]
        seen[task.meta["positive"]] += 1
        if not task.meta["positive"]:
            assert not g.has_edge(u, v)
            assert u != v
    assert seen[True] > 5
    assert seen[False] > 5


@pytest.mark.parametrize("mutation", ["drop", "reverse", "relabel"])
def test_each_mutation_changes_exactly_one_fact(mutation: str) -> None:
    gen = RoleTaskGenerator(seed=5)
    ser = GraphSchemaSerializer("scene")
    for g in _graphs("scene", count=20, p=0.35):
        if g.number_of_edges() == 0:
            continue
        task = gen.consistency(g, "scene", mutation=mutation)
        facts, cand, i = task.meta["facts"], task.meta["candidate"], task.meta["index"]
        assert task.target == "No"
        assert facts == ser.facts(g)
        u, v = list(g.edges)[i]
        if mutation == "drop":
            assert cand == facts[:i] + facts[i + 1 :]
        else:
            assert len(cand) == len(facts)
            assert [k for k in range(len(facts)) if cand[k] != facts[k]] == [i]
            if mutation == "reverse":
                assert not g.has_edge(v, u)
                assert parse_graph_schema(
                    ser.serialize(g).split("[Graph Facts]")[0] + "[Graph Facts]\n" + cand[i]
                ).graph.has_edge(v, u)
            else:
                assert "UNRELATED_TO" in cand[i]
        assert set(cand) != set(facts)
    same = gen.consistency(g, "scene", mutation="none")
    assert same.target == "Yes"
    assert same.meta["candidate"] == same.meta["facts"]


@pytest.mark.parametrize("kind", ["undirected", "weighted", "flow", "matching", "molecule", "scene", "event"])
def test_consistency_tag_names_the_graph_kind(kind: str) -> None:
    # The task tag of a consistency prompt names the domain of the graph it shows, as the traversal prompts do
    # (the official generator writes `[scene_graph:consistency]` because it only verifies scene graphs).
    gen = RoleTaskGenerator(seed=9)
    graph = next(g for g in _graphs(kind, count=10, p=0.5) if g.number_of_edges() > 0)
    domain = "scene_graph" if kind == "scene" else f"{kind}_graph"
    consistency_tag = parse_graph_schema(gen.consistency(graph, kind).prompt.split("\nCandidate facts:")[0]).task
    traversal_tag = parse_graph_schema(gen.traversal(graph, kind, "cycle").prompt.split("\nQ: ")[0]).task
    assert consistency_tag == f"{domain}:consistency"
    assert traversal_tag == f"{domain}:graph_search"


def test_extraction_answer_is_the_fact_list() -> None:
    g = _graphs("scene", count=1)[0]
    task = RoleTaskGenerator(seed=6).extraction(g, "scene")
    assert task.target.splitlines() == GraphSchemaSerializer("scene").facts(g)
    assert "[Graph Facts]" not in task.prompt


def test_generator_is_deterministic_under_a_seed() -> None:
    def run(seed: int) -> list:
        gen = RoleTaskGenerator(seed=seed, style="reasoning")
        out = []
        for g in _graphs("scene", count=8):
            out += [gen.traversal(g, "scene"), gen.consistency(g, "scene")]
        return out

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_errors() -> None:
    gen = RoleTaskGenerator()
    g = nx.Graph([(0, 1)])
    with pytest.raises(ValueError, match="style must be one of"):
        RoleTaskGenerator(style="verbose")
    with pytest.raises(ValueError, match="task='flow' needs a 'flow' graph"):
        gen.nlgraph(g, "undirected", "flow")
    with pytest.raises(ValueError, match="task must be one of"):
        gen.traversal(g, "undirected", "diameter")
    with pytest.raises(ValueError, match="mutation='reverse' is not possible"):
        gen.consistency(g, "undirected", mutation="reverse")
