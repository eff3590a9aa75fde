"""ArBG: autoregressive Boltzmann generators (Rehman et al., ICML 2026) and the normalising-flow baseline.

This package holds the LightningModules and the coordinate tokenizer. The other pieces live where their kind
lives: energies, physical systems, reference and token samplers and importance reweighting in
:mod:`lightning_icml26.data.boltzmann`, and the evaluation callback in :mod:`lightning_icml26.callbacks`.
``transformers`` (ArBG's network) and ``zuko`` (flow baseline) are optional and loaded when a model is built.
"""

from __future__ import annotations

from lightning_icml26.modules.arbg.flow import FlowBG
from lightning_icml26.modules.arbg.module import ArBG, augment, random_rotations
from lightning_icml26.modules.arbg.tokenizer import CoordinateTokenizer

__all__ = ["ArBG", "CoordinateTokenizer", "FlowBG", "augment", "random_rotations"]
