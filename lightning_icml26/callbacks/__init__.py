"""Lightning callbacks: stateful ones checkpoint their state and write files on rank zero only."""

from __future__ import annotations

from lightning_icml26.callbacks.metrics_plot import MetricsPlot, plot_history

__all__ = ["MetricsPlot", "plot_history"]
