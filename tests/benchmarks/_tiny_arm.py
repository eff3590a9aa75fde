"""A seeded one-layer ARM decoder small enough for the ARM benchmark and diagnosis tests."""

from __future__ import annotations

import torch

from lightning_icml26.modules import ARMDecoder


def tiny_arm_decoder(budget: int = 16, num_clusters: int = 4, **attention_kwargs: object) -> ARMDecoder:
    """A one-layer ARM decoder (d_model 16, two heads, window 4), seeded so two calls give the same weights.

    Example:
        >>> len(tiny_arm_decoder(num_clusters=2).arm_layers())
        1
    """
    torch.manual_seed(0)
    return ARMDecoder(
        d_model=16,
        num_layers=1,
        num_heads=2,
        attention="arm",
        budget=budget,
        attention_kwargs={"window": 4, "num_clusters": num_clusters, **attention_kwargs},
    )
