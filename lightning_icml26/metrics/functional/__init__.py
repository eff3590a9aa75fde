"""Functional twins of the metrics in :mod:`lightning_icml26.metrics`."""

from __future__ import annotations

__all__: list[str] = []
