"""Role-based tasks over one graph: traversal QA, consistency verification, extraction and NLGraph tasks.

Every answer is computed with networkx. Each task has a simple answer (the short target) and a
step-by-step answer (a few reasoning lines ending in ``Answer: <target>``); :func:`final_answer` reads the
target back from either.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from lightning_icml26.data.graph_substrate.schema import GraphSchemaSerializer

__all__ = ["MUTATIONS", "NLGRAPH_TASKS", "ROLES", "TRAVERSAL_TASKS", "GraphTask", "RoleTaskGenerator", "final_answer"]

TRAVERSAL_TASKS = ("neighbors", "relation", "path", "two_hop", "weak_connectivity", "cycle")
"""Traversal QA tasks (any graph kind)."""
NLGRAPH_TASKS = {"connectivity": "undirected", "cycle": "undirected", "shortest_path": "weighted"}
NLGRAPH_TASKS |= {"matching": "matching", "flow": "flow"}
"""NLGraph-style tasks and the graph kind each needs."""
MUTATIONS = ("none", "drop", "reverse", "relabel")
"""Consistency candidates: the original facts, or one edge dropped, reversed or relabelled ``UNRELATED_TO``."""
ROLES = ("algorithm", "consistency", "extraction")
"""The three roles a graph can play."""
_STYLES = ("simple", "reasoning")


@dataclass(frozen=True)
class GraphTask:
    """One supervised sample.

    Attributes:
        role: ``algorithm``, ``consistency`` or ``extraction``.
        task: the task name (``connectivity``, ``neighbors``, ``consistency``, ``extraction``, ...).
        prompt: the model's input (tag, schema or description, question), ending with ``"A: "``.
        answer: what the model is trained to write (simple or step-by-step).
        target: the short final answer that exact match compares.
        meta: what the answer was computed from (query nodes, mutation, candidate facts, ...).
    """

    role: str
    task: str
    prompt: str
    answer: str
    target: str
    meta: dict[str, Any] = field(default_factory=dict)


def final_answer(text: str) -> str:
    r"""The target inside a generated answer: the text after the last ``Answer:`` if any, else all of it.

    Example:
        >>> final_answer("0 -> 2 -> 3\nAnswer: Yes"), final_answer("No")
        ('Yes', 'No')
    """
    marker = text.rfind("Answer:")
    return (text[marker + len("Answer:") :] if marker >= 0 else text).strip()


def _yes(flag: bool) -> str:
    return "Yes" if flag else "No"


def _domain(kind: str) -> str:
    """The tag domain of a graph kind: ``scene_graph`` for scene graphs, ``<kind>_graph`` otherwise."""
    return "scene_graph" if kind == "scene" else f"{kind}_graph"


def _path_text(path: list[Any]) -> str:
    return " -> ".join(str(n) for n in path)


class RoleTaskGenerator:
    """Seeded generator of role-based tasks over networkx graphs in the unified schema.

    Args:
        seed: seed of the generator's own ``random.Random`` (calls draw from it in order, so the same seed
            and the same calls give the same tasks).
        style: ``"simple"`` (answer = target) or ``"reasoning"`` (steps, then ``Answer: <target>``).

    Example:
        >>> g = nx.Graph([(0, 1), (1, 2), (3, 4)])
        >>> task = RoleTaskGenerator(seed=0).nlgraph(g, "undirected", "cycle")
        >>> print(task.prompt.splitlines()[0], "|", task.target)
        [graph_search:cycle] | No
    """

    def __init__(self, seed: int = 0, style: str = "simple") -> None:
        if style not in _STYLES:
            raise ValueError(f"style must be one of {_STYLES}, got {style!r}")
        self.rng = random.Random(seed)
        self.style = style

    def _make(self, role: str, task: str, prompt: str, steps: list[str], target: str, **meta: Any) -> GraphTask:
        answer = target if self.style == "simple" else "\n".join([*steps, f"Answer: {target}"])
        return GraphTask(role, task, prompt + "\nA: ", answer, target, meta)

    @staticmethod
    def _prompt(graph: nx.Graph, kind: str, tag: str, question: str) -> str:
        return GraphSchemaSerializer(kind).serialize(graph, task=tag) + f"\nQ: {question}"

    # ------------------------------------------------------------------------------------- traversal
    def traversal(self, graph: nx.Graph, kind: str, task: str | None = None) -> GraphTask:
        """A traversal question (drawn from :data:`TRAVERSAL_TASKS` when ``task`` is None).

        Raises:
            ValueError: for an unknown task or a graph with fewer than two nodes.
        """
        if task is None:
            task = self.rng.choice(TRAVERSAL_TASKS)
        if task not in TRAVERSAL_TASKS:
            raise ValueError(f"task must be one of {TRAVERSAL_TASKS}, got {task!r}")
        if graph.number_of_nodes() < 2:
            raise ValueError(f"graph must have at least 2 nodes, got {graph.number_of_nodes()}")
        nodes = list(graph.nodes)
        tag = f"{_domain(kind)}:graph_search"
        ser = GraphSchemaSerializer(kind)
        if task == "neighbors":
            u = self.rng.choice(nodes)
            out = sorted(graph.successors(u) if graph.is_directed() else graph.neighbors(u), key=str)
            verb = "points to" if graph.is_directed() else "is linked to"
            steps = [ser.fact(graph, u, v) for v in out] or [f"No fact starts at {u}."]
            target = ", ".join(str(v) for v in out) or "none"
            return self._make(
                "algorithm",
                task,
                self._prompt(graph, kind, tag, f"Which nodes does {u} {verb}?"),
                steps,
                target,
                node=u,
            )
        if task == "relation":
            edges = list(graph.edges)
            non_edges = [(u, v) for u in nodes for v in nodes if u != v and not graph.has_edge(u, v)]
            positive = bool(edges) and (not non_edges or self.rng.random() < 0.5)
            u, v = self.rng.choice(edges if positive else non_edges)
            steps = [f"The facts hold {ser.fact(graph, u, v)}."] if positive else [f"No fact links {u} to {v}."]
            question = f"Is there a direct relation from {u} to {v}?"
            return self._make(
                "algorithm",
                task,
                self._prompt(graph, kind, tag, question),
                steps,
                _yes(positive),
                pair=(u, v),
                positive=positive,
            )
        if task == "path":
            u, v = self.rng.sample(nodes, 2)
            return self._reach(graph, kind, tag, "algorithm", task, u, v)
        if task == "two_hop":
            triples = [(a, b, c) for a, b in graph.edges for c in self._out(graph, b) if c not in (a, b)]
            if not triples:
                a, c = self.rng.sample(nodes, 2)
            else:
                a, _, c = self.rng.choice(triples)
            mids = sorted(
                {b for b in self._out(graph, a) if c in set(self._out(graph, b)) and b not in (a, c)}, key=str
            )
            steps = [f"{a} -> {b} -> {c}" for b in mids] or [f"No node sits between {a} and {c}."]
            question = f"Which nodes B give a two-step path {a} -> B -> {c}?"
            target = ", ".join(str(b) for b in mids) or "none"
            return self._make("algorithm", task, self._prompt(graph, kind, tag, question), steps, target, pair=(a, c))
        if task == "weak_connectivity":
            view = graph.to_undirected(as_view=True)
            parts = nx.number_connected_components(view)
            steps = [f"Ignoring directions, the graph has {parts} connected component(s)."]
            question = "Ignoring directions, is the graph connected?"
            return self._make("algorithm", task, self._prompt(graph, kind, tag, question), steps, _yes(parts == 1))
        return self._cycle(graph, kind, tag, "algorithm", task)

    @staticmethod
    def _out(graph: nx.Graph, node: Any) -> list[Any]:
        return list(graph.successors(node) if graph.is_directed() else graph.neighbors(node))

    def _reach(self, graph: nx.Graph, kind: str, tag: str, role: str, task: str, u: Any, v: Any) -> GraphTask:
        reachable = nx.has_path(graph, u, v)
        steps = (
            [f"Breadth-first search finds {_path_text(nx.shortest_path(graph, u, v))}."]
            if reachable
            else [f"Breadth-first search from {u} never reaches {v}."]
        )
        question = f"Is there a path from {u} to {v}?"
        return self._make(role, task, self._prompt(graph, kind, tag, question), steps, _yes(reachable), pair=(u, v))

    def _cycle(self, graph: nx.Graph, kind: str, tag: str, role: str, task: str) -> GraphTask:
        acyclic = nx.is_directed_acyclic_graph(graph) if graph.is_directed() else nx.is_forest(graph)
        if acyclic:
            steps = ["Every search ends without returning to a visited node."]
        else:
            cycle = [u for u, _ in nx.find_cycle(graph)]
            steps = [f"{_path_text([*cycle, cycle[0]])} closes a cycle."]
        question = "Does the graph contain a cycle?"
        return self._make(role, task, self._prompt(graph, kind, tag, question), steps, _yes(not acyclic))

    # ---------------------------------------------------------------------------------- consistency
    def consistency(self, graph: nx.Graph, kind: str, mutation: str | None = None) -> GraphTask:
        """Are candidate facts exactly the graph's facts? The candidate is the original or one mutation of it.

        Args:
            graph: the reference graph.
            kind: its schema kind.
            mutation: one of :data:`MUTATIONS`; drawn when ``None`` (the original half of the time, else a
                mutation this graph allows: ``reverse`` needs a directed edge whose reverse is absent).

        Raises:
            ValueError: for an unknown mutation or one the graph does not allow (no edge to mutate).
        """
        ser = GraphSchemaSerializer(kind)
        edges = list(graph.edges)
        reversible = [i for i, (u, v) in enumerate(edges) if graph.is_directed() and not graph.has_edge(v, u)]
        allowed = ["drop", "relabel"] if edges else []
        allowed += ["reverse"] if reversible else []
        if mutation is None:
            mutation = "none" if not allowed or self.rng.random() < 0.5 else self.rng.choice(allowed)
        if mutation not in MUTATIONS:
            raise ValueError(f"mutation must be one of {MUTATIONS}, got {mutation!r}")
        if mutation != "none" and mutation not in allowed:
            raise ValueError(f"mutation={mutation!r} is not possible on this graph; allowed: {allowed or ['none']}")
        facts = ser.facts(graph)
        candidate = list(facts)
        steps = ["Every candidate fact is in the graph and none is missing."]
        index = None
        if mutation != "none":
            index = self.rng.choice(reversible if mutation == "reverse" else range(len(edges)))
            u, v = edges[index]
            if mutation == "drop":
                del candidate[index]
                steps = [f"The graph's fact {facts[index]} is missing."]
            elif mutation == "reverse":
                candidate[index] = (
                    f"({ser.render_node(graph, v)}, {ser.relation(graph, u, v)}, {ser.render_node(graph, u)})"
                )
                steps = [f"{candidate[index]} reverses the graph's fact {facts[index]}."]
            else:
                candidate[index] = f"({ser.render_node(graph, u)}, UNRELATED_TO, {ser.render_node(graph, v)})"
                steps = [f"{candidate[index]} relabels the graph's fact {facts[index]}."]
        tag = f"{_domain(kind)}:consistency"
        prompt = ser.serialize(graph, task=tag) + "\nCandidate facts:\n" + "\n".join(candidate)
        prompt += "\nQ: Are the candidate facts exactly the graph's facts?"
        return self._make(
            "consistency",
            "consistency",
            prompt,
            steps,
            _yes(mutation == "none"),
            mutation=mutation,
            index=index,
            facts=facts,
            candidate=candidate,
        )

    # ----------------------------------------------------------------------------------- extraction
    def extraction(self, graph: nx.Graph, kind: str) -> GraphTask:
        """A plain-English description of the graph; the answer is its ``[Graph Facts]`` lines."""
        ser = GraphSchemaSerializer(kind)
        names = ", ".join(ser.render_node(graph, n) for n in graph.nodes)
        sentences = [f"The {kind} graph has the nodes {names}."]
        for u, v in graph.edges:
            rel = ser.relation(graph, u, v)
            link = "is linked to" if rel == "-" else f"has {rel} to" if ":" in rel else f"-- {rel} -->"
            sentences.append(f"{u} {link} {v}.")
        facts = ser.facts(graph)
        prompt = f"[graph_search:extraction]\nDescription: {' '.join(sentences)}\nQ: Write the graph's facts."
        steps = [f"{len(facts)} relation(s) are described."]
        return self._make("extraction", "extraction", prompt, steps, "\n".join(facts) or "none", facts=facts)

    # -------------------------------------------------------------------------------------- NLGraph
    def nlgraph(self, graph: nx.Graph, kind: str, task: str) -> GraphTask:
        """An NLGraph-style task: ``connectivity``, ``cycle``, ``shortest_path``, ``matching`` or ``flow``.

        Raises:
            ValueError: for an unknown task or a graph of another kind than the task needs.
        """
        if task not in NLGRAPH_TASKS:
            raise ValueError(f"task must be one of {sorted(NLGRAPH_TASKS)}, got {task!r}")
        if kind != NLGRAPH_TASKS[task]:
            raise ValueError(f"task={task!r} needs a {NLGRAPH_TASKS[task]!r} graph, got kind={kind!r}")
        tag = f"graph_search:{task}"
        nodes = list(graph.nodes)
        if task == "connectivity":
            u, v = self.rng.sample(nodes, 2)
            return self._reach(graph, kind, tag, "algorithm", task, u, v)
        if task == "cycle":
            return self._cycle(graph, kind, tag, "algorithm", task)
        if task == "shortest_path":
            pairs = [(u, v) for u in nodes for v in nodes if u != v and nx.has_path(graph, u, v)]
            if not pairs:
                raise ValueError("shortest_path needs a graph with at least one connected pair of nodes")
            u, v = self.rng.choice(pairs)
            path = nx.dijkstra_path(graph, u, v, weight="weight")
            weights = [graph.edges[a, b]["weight"] for a, b in zip(path, path[1:], strict=False)]
            total = sum(weights)
            steps = [f"{_path_text(path)} with weights {' + '.join(map(str, weights))} = {total}."]
            question = f"What is the total weight of the shortest path from {u} to {v}?"
            return self._make(
                "algorithm", task, self._prompt(graph, kind, tag, question), steps, str(total), pair=(u, v), path=path
            )
        if task == "matching":
            pairs = sorted(
                tuple(sorted(e, key=lambda n: graph.nodes[n]["bipartite"]))
                for e in nx.max_weight_matching(graph, maxcardinality=True)
            )
            steps = [f"Match {a} with {b}." for a, b in pairs] or ["No applicant can be matched."]
            question = "How many applicants can get a job at most, one job each?"
            return self._make(
                "algorithm", task, self._prompt(graph, kind, tag, question), steps, str(len(pairs)), pairs=pairs
            )
        source, sink = min(nodes), max(nodes)
        value, flows = nx.maximum_flow(graph, source, sink)
        steps = [f"Send {f} along {a} -> {b}." for a in sorted(flows) for b, f in sorted(flows[a].items()) if f > 0]
        question = f"What is the maximum flow from {source} to {sink}?"
        return self._make(
            "algorithm",
            task,
            self._prompt(graph, kind, tag, question),
            steps or ["Nothing flows."],
            str(value),
            pair=(source, sink),
        )
