"""Numerical kernels and layers (attention variants, soft ranking, optimal transport).

Triton kernels live beside a pure-torch reference; never imports lightning."""

from __future__ import annotations

__all__: list[str] = []
