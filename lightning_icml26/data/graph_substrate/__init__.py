"""G-Substrate data: the unified graph schema, role-based task generation and the SFT DataModule."""

from __future__ import annotations

from lightning_icml26.data.graph_substrate.roles import (
    MUTATIONS,
    NLGRAPH_TASKS,
    ROLES,
    TRAVERSAL_TASKS,
    GraphTask,
    RoleTaskGenerator,
    final_answer,
)
from lightning_icml26.data.graph_substrate.sampling import OBJECTS, PREDICATES, real_graphs, sample_graph
from lightning_icml26.data.graph_substrate.schema import (
    GRAPH_KINDS,
    GraphSchemaSerializer,
    ParsedGraph,
    parse_graph_schema,
    relabel_to_integers,
)

__all__ = [
    "GRAPH_KINDS",
    "MUTATIONS",
    "NLGRAPH_TASKS",
    "OBJECTS",
    "PREDICATES",
    "ROLES",
    "TRAVERSAL_TASKS",
    "GraphTask",
    "RoleTaskGenerator",
    "final_answer",
    "real_graphs",
    "sample_graph",
    "GraphSchemaSerializer",
    "ParsedGraph",
    "parse_graph_schema",
    "relabel_to_integers",
]
