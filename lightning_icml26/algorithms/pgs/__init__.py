"""PGS: property-based, minimal-counterexample feedback for refining LLM-written code."""

from __future__ import annotations

from lightning_icml26.algorithms.pgs.minimise import draw_inputs, hypothesis_failure, min_token_failure, random_failure
from lightning_icml26.algorithms.pgs.problem import CodeProblem, call_text
from lightning_icml26.algorithms.pgs.properties import extract_properties, parse_property, sound_properties
from lightning_icml26.algorithms.pgs.sandbox import OUTCOMES, CaseResult, RunResult, Sandbox

__all__ = [
    "call_text",
    "CaseResult",
    "CodeProblem",
    "draw_inputs",
    "extract_properties",
    "hypothesis_failure",
    "min_token_failure",
    "OUTCOMES",
    "parse_property",
    "random_failure",
    "RunResult",
    "Sandbox",
    "sound_properties",
]
