"""LightningDataModules and loaders for the data the recipes use (generated or shipped in packages)."""

from __future__ import annotations

from lightning_icml26.data.spirals import SpiralsDataModule, make_spirals

__all__ = ["SpiralsDataModule", "make_spirals"]

from lightning_icml26.data.cifar10 import CIFAR10DataModule, load_cifar10
from lightning_icml26.data.fashion_mnist import FashionMNISTDataModule, load_fashion_mnist, read_idx
from lightning_icml26.data.sparse_regression import SparseRegressionDataModule, make_sparse_regression

__all__ += [
    "CIFAR10DataModule",
    "FashionMNISTDataModule",
    "SparseRegressionDataModule",
    "load_cifar10",
    "load_fashion_mnist",
    "make_sparse_regression",
    "read_idx",
]

from lightning_icml26.data.tabular import (
    FairTabularData,
    FairTabularDataModule,
    load_adult,
    load_compas,
    load_fair_dataset,
    make_fair_gaussian,
    split_indices,
)

__all__ += [
    "FairTabularData",
    "FairTabularDataModule",
    "load_adult",
    "load_compas",
    "load_fair_dataset",
    "make_fair_gaussian",
    "split_indices",
]

from lightning_icml26.data.text import ByteChunkDataset, StdlibTextDataModule, load_stdlib_bytes

__all__ += ["ByteChunkDataset", "StdlibTextDataModule", "load_stdlib_bytes"]

from lightning_icml26.data.fashion_transfer import FashionTransferFeatures  # noqa: E402
from lightning_icml26.data.layer_features import LayerFeatureDataModule  # noqa: E402
from lightning_icml26.data.movie_genres import MovieGenreFeatures  # noqa: E402

__all__ += ["FashionTransferFeatures", "LayerFeatureDataModule", "MovieGenreFeatures"]

from lightning_icml26.data.boltzmann import BoltzmannDataModule  # noqa: E402

__all__ += ["BoltzmannDataModule"]

from lightning_icml26.data.gridworld import GridWorldDataModule, make_gridworld_rollouts  # noqa: E402
from lightning_icml26.data.minigrid import MiniGridDataModule, make_minigrid_rollouts  # noqa: E402

__all__ += ["GridWorldDataModule", "MiniGridDataModule", "make_gridworld_rollouts", "make_minigrid_rollouts"]

from lightning_icml26.data.forecasts import (  # noqa: E402
    ForecastDataModule,
    ForecastTable,
    load_forecast_source,
    load_forecasts,
    load_poll_forecasts,
    load_rain_forecasts,
    make_forecasting_task,
)

__all__ += [
    "ForecastDataModule",
    "ForecastTable",
    "load_forecast_source",
    "load_forecasts",
    "load_poll_forecasts",
    "load_rain_forecasts",
    "make_forecasting_task",
]
