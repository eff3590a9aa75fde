"""A small language-model protocol (generate, log-probabilities, token counts) for the methods that call an LLM."""

from __future__ import annotations

__all__: list[str] = []
