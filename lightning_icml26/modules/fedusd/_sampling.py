"""Re-export of :class:`~lightning_icml26.data._sampling.EpochSeededSampler` (moved to ``data`` to be shared)."""

from __future__ import annotations

from lightning_icml26.data._sampling import EpochSeededSampler

__all__ = ["EpochSeededSampler"]
