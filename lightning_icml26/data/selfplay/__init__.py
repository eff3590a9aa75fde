"""Self-play data: the toy world, its practising and forgetting solver, a questioner policy, the buffer."""

from __future__ import annotations

from lightning_icml26.data.selfplay.buffer import ProblemBuffer
from lightning_icml26.data.selfplay.datamodule import SelfPlayDataModule
from lightning_icml26.data.selfplay.policy import CategoricalQuestioner
from lightning_icml26.data.selfplay.world import TEMPLATES, ToySolver, ToyWorld

__all__ = ["CategoricalQuestioner", "ProblemBuffer", "SelfPlayDataModule", "TEMPLATES", "ToySolver", "ToyWorld"]
