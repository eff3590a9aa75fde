"""Self-play LightningModules (Seen-Detector novelty reward, see ``docs/novelty-selfplay.md``)."""

from __future__ import annotations

from lightning_icml26.modules.novelty.llm import LMQuestioner, LMSolver, minilm_embedder, smollm2_selfplay_module
from lightning_icml26.modules.novelty.protocols import SelfPlayQuestioner, SelfPlaySolver
from lightning_icml26.modules.novelty.selfplay import SelfPlayModule, group_advantages
from lightning_icml26.modules.novelty.toy import toy_selfplay_module

__all__ = [
    "group_advantages",
    "LMQuestioner",
    "LMSolver",
    "minilm_embedder",
    "SelfPlayModule",
    "SelfPlayQuestioner",
    "SelfPlaySolver",
    "smollm2_selfplay_module",
    "toy_selfplay_module",
]
