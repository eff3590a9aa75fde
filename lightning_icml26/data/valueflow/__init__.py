"""VALUEFLOW data: four value hierarchies, a seeded value-text generator, the hierarchical batch sampler."""

from __future__ import annotations

from lightning_icml26.data.valueflow.datamodule import ValueTextDataModule, ValueTextDataset, collate_value_texts
from lightning_icml26.data.valueflow.hierarchies import (
    CROSS_THEORY_CONCEPTS,
    DIRECTIONS,
    THEORIES,
    check_label,
    label_paths,
)
from lightning_icml26.data.valueflow.sampler import HierarchicalBatchSampler
from lightning_icml26.data.valueflow.texts import ADVERBS, ValueTextCorpus, make_value_texts, node_ids

__all__ = [
    "ADVERBS",
    "CROSS_THEORY_CONCEPTS",
    "DIRECTIONS",
    "HierarchicalBatchSampler",
    "THEORIES",
    "ValueTextCorpus",
    "ValueTextDataModule",
    "ValueTextDataset",
    "check_label",
    "collate_value_texts",
    "label_paths",
    "make_value_texts",
    "node_ids",
]
