"""PGS: property-based, minimal-counterexample feedback for refining LLM-written code."""

from __future__ import annotations

from lightning_icml26.algorithms.pgs.baselines import DirectGeneration, ReflexionRefiner, SelfDebug, SelfEditRefiner
from lightning_icml26.algorithms.pgs.minimise import draw_inputs, hypothesis_failure, min_token_failure, random_failure
from lightning_icml26.algorithms.pgs.problem import CodeProblem, call_text
from lightning_icml26.algorithms.pgs.properties import extract_properties, parse_property, sound_properties
from lightning_icml26.algorithms.pgs.refiner import (
    MINIMISERS,
    PGSRefiner,
    RefinementResult,
    RefinementStep,
    describe_failure,
    sandbox_for,
)
from lightning_icml26.algorithms.pgs.roles import (
    GeneratorRole,
    LLMGenerator,
    LLMTester,
    PromptTemplates,
    ReferenceTester,
    TesterRole,
    extract_code,
)
from lightning_icml26.algorithms.pgs.sandbox import (
    ISOLATIONS,
    OUTCOMES,
    CaseResult,
    RunResult,
    Sandbox,
    SandboxUnavailableError,
    ShrinkIncompleteError,
)

__all__ = [
    "call_text",
    "CaseResult",
    "CodeProblem",
    "describe_failure",
    "DirectGeneration",
    "draw_inputs",
    "extract_code",
    "extract_properties",
    "GeneratorRole",
    "hypothesis_failure",
    "ISOLATIONS",
    "LLMGenerator",
    "LLMTester",
    "min_token_failure",
    "MINIMISERS",
    "OUTCOMES",
    "parse_property",
    "PGSRefiner",
    "PromptTemplates",
    "random_failure",
    "ReferenceTester",
    "RefinementResult",
    "RefinementStep",
    "ReflexionRefiner",
    "RunResult",
    "Sandbox",
    "sandbox_for",
    "SandboxUnavailableError",
    "ShrinkIncompleteError",
    "SelfDebug",
    "SelfEditRefiner",
    "sound_properties",
    "TesterRole",
]
