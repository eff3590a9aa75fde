"""Lightning callbacks: stateful ones checkpoint their state and write files on rank zero only."""

from __future__ import annotations

from lightning_icml26.callbacks.metrics_plot import MetricsPlot, plot_history

__all__ = ["MetricsPlot", "plot_history"]

from lightning_icml26.callbacks.sparsity import (
    MagnitudePrune,
    SparsityMonitor,
    classification_accuracy,
    global_magnitude_threshold,
    magnitude_masks,
    threshold_sweep,
)

__all__ += [
    "MagnitudePrune",
    "SparsityMonitor",
    "classification_accuracy",
    "global_magnitude_threshold",
    "magnitude_masks",
    "threshold_sweep",
]

from lightning_icml26.callbacks.georeg import GeoReg  # noqa: E402
from lightning_icml26.callbacks.loes import LOESLayerSelection  # noqa: E402

__all__ += ["GeoReg", "LOESLayerSelection"]

from lightning_icml26.callbacks.boltzmann import BoltzmannEvalCallback, plot_boltzmann  # noqa: E402

__all__ += ["BoltzmannEvalCallback", "plot_boltzmann"]

from lightning_icml26.callbacks.fair_reduction import FairReductionCallback  # noqa: E402

__all__ += ["FairReductionCallback"]
