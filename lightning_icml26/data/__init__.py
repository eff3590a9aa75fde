"""LightningDataModules and loaders for the data the recipes use (generated or shipped in packages).

:class:`GraphSubstrateDataModule`, :class:`PBSCMDataModule`, :class:`PBSCMGraphs` and the PB-SCM simulator's names
(:class:`PBSCMSimulator`, :func:`graph_code`, :func:`random_pbscm_graph`) are loaded on first access: their modules
import networkx (and the PB-SCM tools sympy), which the callbacks and tasks that import this
package's other modules never use.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

from lightning_icml26.data.arm_recall import RECALL_TASKS, RecallDataModule, RecallDataset, make_recall_batch
from lightning_icml26.data.boltzmann import BoltzmannDataModule
from lightning_icml26.data.cifar10 import CIFAR10DataModule, load_cifar10
from lightning_icml26.data.count_tables import RWM1984_COUNTS, load_rwm1984
from lightning_icml26.data.fashion_mnist import FashionMNISTDataModule, load_fashion_mnist, read_idx
from lightning_icml26.data.fashion_residual import FashionResidualFeatures, ResidualMLP, pretrain_residual_mlp
from lightning_icml26.data.fashion_transfer import FashionTransferFeatures
from lightning_icml26.data.federated import DirichletPartitionDataModule, dirichlet_label_partition
from lightning_icml26.data.forecasts import (
    ForecastDataModule,
    ForecastTable,
    load_forecast_source,
    load_forecasts,
    load_poll_forecasts,
    load_rain_forecasts,
    make_forecasting_task,
)
from lightning_icml26.data.gridworld import GridWorldDataModule, make_gridworld_rollouts
from lightning_icml26.data.irt_judges import SimulatedJudge, degraded_docstrings, simulate_judge
from lightning_icml26.data.isa_moving_shapes import MovingShapesEditDataModule, make_edit_clips
from lightning_icml26.data.isa_video_qkv import video_qkv
from lightning_icml26.data.layer_features import LayerFeatureDataModule
from lightning_icml26.data.minigrid import MiniGridDataModule, make_minigrid_rollouts
from lightning_icml26.data.movie_genres import MovieGenreFeatures
from lightning_icml26.data.recourse_tables import RecourseTable, load_recourse_table, make_credit
from lightning_icml26.data.rl import RatingDataModule, Segments, quantile_bin_edges, simulate_ratings
from lightning_icml26.data.selfplay import (
    CategoricalQuestioner,
    ProblemBuffer,
    SelfPlayDataModule,
    ToySolver,
    ToyWorld,
)
from lightning_icml26.data.sparse_regression import SparseRegressionDataModule, make_sparse_regression
from lightning_icml26.data.spirals import SpiralsDataModule, make_spirals
from lightning_icml26.data.tabular import (
    FairTabularData,
    FairTabularDataModule,
    load_adult,
    load_compas,
    load_fair_dataset,
    make_fair_gaussian,
    split_indices,
)
from lightning_icml26.data.text import ByteChunkDataset, StdlibTextDataModule, load_stdlib_bytes
from lightning_icml26.data.valueflow import (
    HierarchicalBatchSampler,
    ValueTextCorpus,
    ValueTextDataModule,
    make_value_texts,
)

if TYPE_CHECKING:  # for type checkers; at run time ``__getattr__`` imports them on first access
    from lightning_icml26.data.graph_substrate import GraphSubstrateDataModule
    from lightning_icml26.data.pbscm import PBSCMDataModule, PBSCMGraphs
    from lightning_icml26.data.pbscm_simulator import PBSCMSimulator, graph_code, random_pbscm_graph

# Names resolved lazily by ``__getattr__`` (their modules import networkx).
_LAZY = {
    "GraphSubstrateDataModule": "lightning_icml26.data.graph_substrate",
    "PBSCMDataModule": "lightning_icml26.data.pbscm",
    "PBSCMGraphs": "lightning_icml26.data.pbscm",
    "PBSCMSimulator": "lightning_icml26.data.pbscm_simulator",
    "graph_code": "lightning_icml26.data.pbscm_simulator",
    "random_pbscm_graph": "lightning_icml26.data.pbscm_simulator",
}

__all__ = [
    "PBSCMSimulator",
    "graph_code",
    "random_pbscm_graph",
    "PBSCMDataModule",
    "PBSCMGraphs",
    "make_recall_batch",
    "RECALL_TASKS",
    "RecallDataModule",
    "RecallDataset",
    "RecourseTable",
    "SimulatedJudge",
    "degraded_docstrings",
    "simulate_judge",
    "load_recourse_table",
    "make_credit",
    "HierarchicalBatchSampler",
    "make_value_texts",
    "ValueTextCorpus",
    "ValueTextDataModule",
    "video_qkv",
    "make_edit_clips",
    "MovingShapesEditDataModule",
    "CategoricalQuestioner",
    "ProblemBuffer",
    "SelfPlayDataModule",
    "ToySolver",
    "ToyWorld",
    "RWM1984_COUNTS",
    "load_rwm1984",
    "BoltzmannDataModule",
    "ByteChunkDataset",
    "CIFAR10DataModule",
    "DirichletPartitionDataModule",
    "dirichlet_label_partition",
    "FairTabularData",
    "FairTabularDataModule",
    "FashionMNISTDataModule",
    "FashionResidualFeatures",
    "FashionTransferFeatures",
    "ForecastDataModule",
    "ForecastTable",
    "GraphSubstrateDataModule",
    "GridWorldDataModule",
    "LayerFeatureDataModule",
    "load_adult",
    "load_cifar10",
    "load_compas",
    "load_fair_dataset",
    "load_fashion_mnist",
    "load_forecast_source",
    "load_forecasts",
    "load_poll_forecasts",
    "load_rain_forecasts",
    "load_stdlib_bytes",
    "make_fair_gaussian",
    "make_forecasting_task",
    "make_gridworld_rollouts",
    "make_minigrid_rollouts",
    "make_sparse_regression",
    "make_spirals",
    "MiniGridDataModule",
    "MovieGenreFeatures",
    "quantile_bin_edges",
    "RatingDataModule",
    "read_idx",
    "pretrain_residual_mlp",
    "ResidualMLP",
    "Segments",
    "simulate_ratings",
    "SparseRegressionDataModule",
    "SpiralsDataModule",
    "split_indices",
    "StdlibTextDataModule",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'lightning_icml26.data' has no attribute {name!r}")


class _DataPackage(ModuleType):
    """This package's module type, which keeps the exported ``video_qkv`` function in place.

    The old path of the ``isa_video_qkv`` module (``video_qkv`` in this package, still importable for one
    release) must not replace the function when the import system binds the imported submodule to its parent.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "video_qkv" and isinstance(value, ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _DataPackage
