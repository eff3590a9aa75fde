"""Framework-free distributed building blocks: process groups, differentiable collectives, sequence sharding.

Imports torch only (never lightning)."""

from __future__ import annotations

__all__: list[str] = []
