"""LightningModules, one sub-package per method that trains a model, plus shared building blocks."""

from __future__ import annotations

from lightning_icml26.modules.classifier import ClassifierModule
from lightning_icml26.modules.nets import MLP

__all__ = ["MLP", "ClassifierModule"]
