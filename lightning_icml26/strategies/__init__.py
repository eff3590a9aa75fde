"""Lightning strategies, registered by name on import of :mod:`lightning_icml26`.

Registration is idempotent (see :func:`register_strategy`), so importing the package again, in a
spawned worker or under Hydra, never raises.
"""

from __future__ import annotations

from lightning_icml26.strategies._registration import register_strategy
from lightning_icml26.strategies.hf_attention import register_hf_attention, route_hf_model
from lightning_icml26.strategies.upipe import UPipeStrategy, route_attention

__all__ = ["register_hf_attention", "register_strategy", "route_attention", "route_hf_model", "UPipeStrategy"]

UPipeStrategy.register_strategies()  # "upipe", "ulysses", "ring_attention" (idempotent)
