"""PGS: property-based, minimal-counterexample feedback for refining LLM-written code."""

from __future__ import annotations

from lightning_icml26.algorithms.pgs.sandbox import OUTCOMES, CaseResult, RunResult, Sandbox

__all__ = ["CaseResult", "OUTCOMES", "RunResult", "Sandbox"]
