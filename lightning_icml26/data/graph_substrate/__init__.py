"""G-Substrate data: the unified graph schema, role-based task generation and the SFT DataModule."""

from __future__ import annotations

from lightning_icml26.data.graph_substrate.datamodule import GraphSubstrateDataModule, encode_sample, pad_collate
from lightning_icml26.data.graph_substrate.mixtures import MIXTURES, TASK_ROLES, build_mixture, role_counts
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
    "MIXTURES",
    "TASK_ROLES",
    "GraphSubstrateDataModule",
    "build_mixture",
    "encode_sample",
    "pad_collate",
    "role_counts",
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
