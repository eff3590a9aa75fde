"""Lightning strategies, registered by name on import of :mod:`lightning_icml26`.

Registration is idempotent (see :func:`register_strategy`), so importing the package again, in a
spawned worker or under Hydra, never raises.
"""

from __future__ import annotations

from lightning_icml26.strategies._registration import register_strategy
from lightning_icml26.strategies.upipe import UPipeStrategy
from lightning_icml26.strategies.upipe_memory import (
    LayerShape,
    attention_throughput,
    build_memory_model,
    upipe_memory_figures,
)

__all__ = [
    "attention_throughput",
    "build_memory_model",
    "LayerShape",
    "register_strategy",
    "UPipeStrategy",
    "upipe_memory_figures",
]

UPipeStrategy.register_strategies()  # "upipe", "ulysses", "ring_attention" (idempotent)
