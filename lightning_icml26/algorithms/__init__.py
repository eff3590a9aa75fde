"""Estimators that are not trained networks (post-processing, layer selection, ...), sklearn-style."""

from __future__ import annotations

__all__: list[str] = []
