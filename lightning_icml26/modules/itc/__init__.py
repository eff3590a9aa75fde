"""ITC: identifiable token correspondence decoding for token-based world models (Kim et al., ICML 2026).

``TokenWorldModel`` (a block-causal transformer world model over frames of cell tokens), ``ITCDecoder``
(the copy-or-generate assignment decoder), ``rollout`` (imagined rollouts of any token world model with
``decoder="itc" | "sample" | "argmax"``) and an optional ``VQTokenizer`` for image observations.
"""

from __future__ import annotations

from lightning_icml26.modules.itc.decoder import (
    DECODERS,
    ITCDecoder,
    build_itc_cost,
    decode_next_frame,
    grid_coordinates,
    gumbel_noise,
    solve_assignment,
)
from lightning_icml26.modules.itc.rollout import NextFrameModel, rollout
from lightning_icml26.modules.itc.vq import VQTokenizer
from lightning_icml26.modules.itc.world_model import TokenWorldModel

__all__ = [
    "DECODERS",
    "ITCDecoder",
    "NextFrameModel",
    "TokenWorldModel",
    "VQTokenizer",
    "build_itc_cost",
    "decode_next_frame",
    "grid_coordinates",
    "gumbel_noise",
    "rollout",
    "solve_assignment",
]
