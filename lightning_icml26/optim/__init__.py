"""torch.optim.Optimizer subclasses."""

from __future__ import annotations

__all__: list[str] = []
