"""ITC: identifiable token correspondence decoding for token-based world models (Kim et al., ICML 2026).

``TokenWorldModel`` (a block-causal transformer world model over frames of cell tokens), ``rollout`` (imagined
rollouts of any token world model with ``decoder="itc" | "sample" | "argmax"``) and an optional
``VQTokenizer`` for image observations. The copy-or-generate assignment decoder itself is an optimal-transport
algorithm and lives in :mod:`lightning_icml26.ops` (:class:`~lightning_icml26.ops.ITCDecoder`).
"""

from __future__ import annotations

from lightning_icml26.modules.itc.rollout import NextFrameModel, rollout
from lightning_icml26.modules.itc.vq import VQTokenizer
from lightning_icml26.modules.itc.world_model import TokenWorldModel

__all__ = ["NextFrameModel", "TokenWorldModel", "VQTokenizer", "rollout"]
