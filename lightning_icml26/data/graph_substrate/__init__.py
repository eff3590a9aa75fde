"""G-Substrate data: the unified graph schema, role-based task generation and the SFT DataModule."""

from __future__ import annotations

from lightning_icml26.data.graph_substrate.schema import (
    GRAPH_KINDS,
    GraphSchemaSerializer,
    ParsedGraph,
    parse_graph_schema,
    relabel_to_integers,
)

__all__ = [
    "GRAPH_KINDS",
    "GraphSchemaSerializer",
    "ParsedGraph",
    "parse_graph_schema",
    "relabel_to_integers",
]
