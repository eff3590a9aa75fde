"""The unified graph schema: networkx graphs to and from ``[Graph Schema]`` + ``[Graph Facts]`` text.

Every graph becomes one text block: an optional task tag line (``[graph_search:cycle]``), a schema block
that names the graph kind, the slot order of its facts and every node, and a facts block with one
``(subject, relation, object)`` triple per edge::

    [graph_search:connectivity]
    [Graph Schema]
    kind: undirected
    edge format: (node, -, node)
    nodes: 0; 1; 2
    [Graph Facts]
    (0, -, 1)
    (1, -, 2)

A node renders as its id, followed by ``: "label"`` when it carries a ``label`` attribute (a JSON string),
``:Element`` for a molecule's atom or ``:Applicant`` / ``:Job`` for the two sides of a matching graph.
The kinds and the networkx attributes they read:

============  ===========  ==============================  =========================================
kind          graph class  relation slot                   attributes
============  ===========  ==============================  =========================================
undirected    ``Graph``    ``-``                           node ``label`` (optional)
weighted      ``Graph``    ``weight: w``                   edge ``weight`` (a finite number)
flow          ``DiGraph``  ``capacity: c``                 edge ``capacity`` (a finite number >= 0)
matching      ``Graph``    ``-``                           node ``bipartite`` (0 = Applicant, 1 = Job)
molecule      ``Graph``    bond (single, double, ...)      node ``element``, edge ``bond``
scene         ``DiGraph``  predicate                       node ``label``, edge ``predicate``
event         ``DiGraph``  relation (BEFORE, CAUSE, ...)   node ``label``, edge ``relation``
============  ===========  ==============================  =========================================

Node ids are non-negative ints or identifiers that start with a letter (``E1``); graphs with other
names (networkx's real graphs) go through :func:`relabel_to_integers` first, which keeps the names as
labels.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import networkx as nx

__all__ = ["GRAPH_KINDS", "GraphSchemaSerializer", "ParsedGraph", "parse_graph_schema", "relabel_to_integers"]

GRAPH_KINDS: dict[str, tuple[bool, str]] = {
    "undirected": (False, "(node, -, node)"),
    "weighted": (False, "(node, weight: w, node)"),
    "flow": (True, "(node, capacity: c, node)"),
    "matching": (False, "(ID:Applicant, -, ID:Job)"),
    "molecule": (False, "(atom:Element, bond, atom:Element)"),
    "scene": (True, "(subject, predicate, object)"),
    "event": (True, "(event, RELATION, event)"),
}
"""Each kind's directedness and the schema's ``edge format`` line."""

_EDGE_ATTR = {"weighted": "weight", "flow": "capacity", "molecule": "bond", "scene": "predicate", "event": "relation"}
_SIDES = ("Applicant", "Job")
_ID = r"(?:[0-9]+|[A-Za-z][A-Za-z0-9_]*)"
_LABEL = r'"(?P<{p}label>(?:[^"\\]|\\.)*)"'
_NODE = rf"(?P<{{p}}node>(?P<{{p}}id>{_ID})(?:(?:: {_LABEL})|(?::(?P<{{p}}tag>[A-Za-z][A-Za-z0-9]*)))?)"
_NODE_RE = re.compile(_NODE.format(p=""))
_FACT_RE = re.compile(r"^\(" + _NODE.format(p="u") + r", (?P<rel>[^,()\n\"]+), " + _NODE.format(p="v") + r"\)$")
_REL_RE = re.compile(r"^[^,()\n\"\s](?:[^,()\n\"]*[^,()\n\"\s])?$")
_TAG_RE = re.compile(r"^\[(?P<tag>[A-Za-z0-9_]+:[A-Za-z0-9_]+)\]$")


@dataclass(frozen=True)
class ParsedGraph:
    """What :func:`parse_graph_schema` reads back: the graph, its kind and the task tag (or ``None``)."""

    graph: nx.Graph
    kind: str
    task: str | None


def _check_kind(kind: str) -> str:
    if kind not in GRAPH_KINDS:
        raise ValueError(f"kind={kind!r} has no serialiser; the graph kinds are {sorted(GRAPH_KINDS)}")
    return kind


def _check_id(node: Any) -> str:
    if isinstance(node, bool) or not isinstance(node, int | str):
        raise TypeError(f"node ids must be ints or strings, got {node!r}; use relabel_to_integers(graph) first")
    text = str(node)
    digits_string = isinstance(node, str) and text.isdigit()
    if (isinstance(node, int) and node < 0) or not re.fullmatch(_ID, text) or digits_string:
        raise ValueError(
            f"node id {node!r} is not a non-negative int or an identifier starting with a letter; "
            "use relabel_to_integers(graph) first"
        )
    return text


def _number(value: Any, name: str, nonnegative: bool) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"edge attribute {name!r} must be a finite number, got {value!r}")
    if nonnegative and value < 0:
        raise ValueError(f"edge attribute {name!r} must be >= 0, got {value!r}")
    return repr(value)


def _parse_number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)


def relabel_to_integers(graph: nx.Graph) -> nx.Graph:
    """Renumber the nodes ``0..n-1`` (ints first, then by name); an old name that differs becomes the ``label``.

    Args:
        graph: any networkx graph.

    Returns:
        A copy with integer ids; ``label`` holds ``str(old name)`` unless the node already had a label or its
        name is its new id.

    Example:
        >>> g = relabel_to_integers(nx.Graph([("Evelyn", "E1")]))
        >>> sorted(g.nodes(data="label"))
        [(0, 'E1'), (1, 'Evelyn')]
    """
    order = sorted(graph.nodes, key=lambda n: (0, n, "") if isinstance(n, int) else (1, 0, str(n)))
    mapping = {node: i for i, node in enumerate(order)}
    out = nx.relabel_nodes(graph, mapping, copy=True)
    for node, i in mapping.items():
        if str(node) != str(i):  # a name equal to the new id adds nothing
            out.nodes[i].setdefault("label", str(node))
    return out


class GraphSchemaSerializer:
    """Serialise one kind of networkx graph to the unified ``[Graph Schema]`` + ``[Graph Facts]`` text.

    Args:
        kind: one of :data:`GRAPH_KINDS` (``undirected``, ``weighted``, ``flow``, ``matching``,
            ``molecule``, ``scene``, ``event``).

    Raises:
        ValueError: for a kind without a serialiser.

    Example:
        >>> g = nx.DiGraph()
        >>> g.add_node(0, label="man"); g.add_node(1, label="horse")
        >>> g.add_edge(0, 1, predicate="riding")
        >>> text = GraphSchemaSerializer("scene").serialize(g, task="scene_graph:graph_search")
        >>> print(text)
        [scene_graph:graph_search]
        [Graph Schema]
        kind: scene
        edge format: (subject, predicate, object)
        nodes: 0: "man"; 1: "horse"
        [Graph Facts]
        (0: "man", riding, 1: "horse")
        >>> parsed = parse_graph_schema(text)
        >>> parsed.kind, parsed.task, list(parsed.graph.edges(data="predicate"))
        ('scene', 'scene_graph:graph_search', [(0, 1, 'riding')])
    """

    def __init__(self, kind: str) -> None:
        self.kind = _check_kind(kind)
        self.directed, self.edge_format = GRAPH_KINDS[kind]

    def check_graph(self, graph: nx.Graph) -> None:
        """Raise ``TypeError`` unless ``graph`` is the networkx class this kind serialises."""
        expected = nx.DiGraph if self.directed else nx.Graph
        if type(graph) is not expected and not (isinstance(graph, expected) and not graph.is_multigraph()):
            raise TypeError(f"kind={self.kind!r} serialises a networkx {expected.__name__}, got {type(graph).__name__}")
        if graph.is_directed() != self.directed:
            raise TypeError(f"kind={self.kind!r} needs directed={self.directed}, got a {type(graph).__name__}")

    def render_node(self, graph: nx.Graph, node: Any) -> str:
        """The node as written in the schema: ``id``, ``id: "label"``, ``id:Element`` or ``id:Applicant``."""
        text = _check_id(node)
        data = graph.nodes[node]
        if self.kind == "molecule":
            element = data.get("element")
            if not isinstance(element, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", element):
                raise ValueError(f"molecule node {node!r} needs an 'element' such as 'C', got {element!r}")
            return f"{text}:{element}"
        if self.kind == "matching":
            side = data.get("bipartite")
            if side not in (0, 1):
                raise ValueError(f"matching node {node!r} needs 'bipartite' 0 or 1, got {side!r}")
            return f"{text}:{_SIDES[side]}"
        label = data.get("label")
        if label is None:
            return text
        if not isinstance(label, str):
            raise TypeError(f"node {node!r} has a non-string label {label!r}")
        return f"{text}: {json.dumps(label)}"

    def relation(self, graph: nx.Graph, u: Any, v: Any) -> str:
        """The relation slot of edge ``(u, v)``."""
        data = graph.edges[u, v]
        if self.kind in ("undirected", "matching"):
            return "-"
        attr = _EDGE_ATTR[self.kind]
        value = data.get(attr)
        if self.kind in ("weighted", "flow"):
            return f"{attr}: {_number(value, attr, nonnegative=self.kind == 'flow')}"
        if not isinstance(value, str) or not _REL_RE.match(value) or value == "-":
            raise ValueError(
                f"edge ({u!r}, {v!r}) needs a {attr!r} without commas, brackets, quotes or outer spaces, got {value!r}"
            )
        return value

    def fact(self, graph: nx.Graph, u: Any, v: Any) -> str:
        """One fact line ``(u, relation, v)``."""
        return f"({self.render_node(graph, u)}, {self.relation(graph, u, v)}, {self.render_node(graph, v)})"

    def facts(self, graph: nx.Graph) -> list[str]:
        """Every edge as a fact line, in the graph's edge order."""
        self.check_graph(graph)
        return [self.fact(graph, u, v) for u, v in graph.edges]

    def serialize(self, graph: nx.Graph, task: str | None = None) -> str:
        """The full text: optional ``[task]`` line, schema block (kind, edge format, nodes) and facts block.

        Args:
            graph: a networkx graph of this serialiser's kind.
            task: a tag ``domain:task`` (letters, digits, ``_``), e.g. ``graph_search:cycle``.

        Raises:
            TypeError: for a graph of the wrong class or node ids that are not ints or strings.
            ValueError: for a malformed task tag, node id or edge attribute.
        """
        self.check_graph(graph)
        lines = []
        if task is not None:
            if not isinstance(task, str) or not _TAG_RE.match(f"[{task}]"):
                raise ValueError(f"task must look like 'domain:task' (letters, digits, _), got {task!r}")
            lines.append(f"[{task}]")
        nodes = "; ".join(self.render_node(graph, n) for n in graph.nodes)
        lines += ["[Graph Schema]", f"kind: {self.kind}", f"edge format: {self.edge_format}", f"nodes: {nodes}"]
        lines.append("[Graph Facts]")
        lines += self.facts(graph)
        return "\n".join(lines)


def _node_id(text: str) -> int | str:
    return int(text) if text.isdigit() else text


def _parse_nodes(text: str, kind: str) -> dict[int | str, tuple[str, dict[str, Any]]]:
    nodes: dict[int | str, tuple[str, dict[str, Any]]] = {}
    pos = 0
    while pos < len(text):
        match = _NODE_RE.match(text, pos)
        if match is None:
            raise ValueError(f"cannot read a node at position {pos} of the nodes line {text!r}")
        node = _node_id(match["id"])
        nodes[node] = (match.group(0), _node_attrs(match["label"], match["tag"], kind, match.group(0)))
        pos = match.end()
        if pos < len(text):
            if not text.startswith("; ", pos):
                raise ValueError(f"nodes must be separated by '; ', got {text[pos : pos + 10]!r} in {text!r}")
            pos += 2
    return nodes


def _node_attrs(label: str | None, tag: str | None, kind: str, rendered: str) -> dict[str, Any]:
    if kind == "molecule":
        if tag is None:
            raise ValueError(f"molecule node {rendered!r} must be written id:Element")
        return {"element": tag}
    if kind == "matching":
        if tag not in _SIDES:
            raise ValueError(f"matching node {rendered!r} must be written id:Applicant or id:Job")
        return {"bipartite": _SIDES.index(tag)}
    if tag is not None:
        raise ValueError(f'{kind} node {rendered!r} must be written id or id: "label"')
    return {} if label is None else {"label": json.loads(f'"{label}"')}


def _relation_attrs(rel: str, kind: str, line: str) -> dict[str, Any]:
    if kind in ("undirected", "matching"):
        if rel != "-":
            raise ValueError(f"a {kind} fact has '-' as its relation, got {line!r}")
        return {}
    attr = _EDGE_ATTR[kind]
    if kind in ("weighted", "flow"):
        prefix = f"{attr}: "
        if not rel.startswith(prefix):
            raise ValueError(f"a {kind} fact's relation is '{prefix}<number>', got {line!r}")
        return {attr: _parse_number(rel[len(prefix) :])}
    return {attr: rel}


def parse_graph_schema(text: str) -> ParsedGraph:
    r"""Read a text written by :meth:`GraphSchemaSerializer.serialize` back into a networkx graph.

    Args:
        text: the serialised graph (a leading ``[domain:task]`` line is optional).

    Returns:
        The graph (nodes in declaration order, edges in fact order), its kind and its task tag.

    Raises:
        ValueError: for a missing block, an unknown kind, a malformed line, or a fact naming a node that the
            ``nodes:`` line does not declare (or declares written differently).

    Example:
        >>> g = parse_graph_schema("[Graph Schema]\nkind: weighted\nedge format: (node, weight: w, node)\n"
        ...                        "nodes: 0; 1\n[Graph Facts]\n(0, weight: 2.5, 1)").graph
        >>> list(g.edges(data="weight"))
        [(0, 1, 2.5)]
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    lines = text.strip("\n").split("\n")
    task = None
    if lines and (tag := _TAG_RE.match(lines[0])) is not None:
        task = tag["tag"]
        lines = lines[1:]
    if len(lines) < 5 or lines[0] != "[Graph Schema]" or lines[4] != "[Graph Facts]":
        raise ValueError(
            "text must hold '[Graph Schema]', 'kind: ...', 'edge format: ...', 'nodes: ...' and '[Graph Facts]' "
            f"lines in that order, got {lines[:5]!r}"
        )
    if not lines[1].startswith("kind: "):
        raise ValueError(f"the schema's second line must be 'kind: <kind>', got {lines[1]!r}")
    kind = _check_kind(lines[1][len("kind: ") :])
    if not lines[3].startswith("nodes:"):
        raise ValueError(f"the schema's fourth line must be 'nodes: ...', got {lines[3]!r}")
    nodes = _parse_nodes(lines[3][len("nodes:") :].lstrip(" "), kind)
    graph: nx.Graph = nx.DiGraph() if GRAPH_KINDS[kind][0] else nx.Graph()
    for node, (_, attrs) in nodes.items():
        graph.add_node(node, **attrs)
    for line in lines[5:]:
        match = _FACT_RE.match(line)
        if match is None:
            raise ValueError(f"a fact must read '(subject, relation, object)', got {line!r}")
        ends = []
        for p in ("u", "v"):
            node = _node_id(match[f"{p}id"])
            rendered = match[f"{p}node"]
            if node not in nodes:
                raise ValueError(f"fact {line!r} names node {node!r}, which the nodes line does not declare")
            if rendered != nodes[node][0]:
                raise ValueError(f"fact {line!r} writes node {node!r} as {rendered!r}, declared as {nodes[node][0]!r}")
            ends.append(node)
        graph.add_edge(ends[0], ends[1], **_relation_attrs(match["rel"], kind, line))
    return ParsedGraph(graph=graph, kind=kind, task=task)
