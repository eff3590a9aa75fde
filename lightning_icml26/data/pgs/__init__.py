"""PGS data: the seeded mutant suite of classic functions and a loader for HumanEval-format JSONL files."""

from __future__ import annotations

from lightning_icml26.data.pgs.humaneval import load_humaneval_jsonl
from lightning_icml26.data.pgs.suite import MUTATION_OPERATORS, Mutant, classic_problems, mutant_suite, mutants_of

__all__ = ["classic_problems", "load_humaneval_jsonl", "Mutant", "mutant_suite", "mutants_of", "MUTATION_OPERATORS"]
