"""Label-only algorithmic recourse for in-context-learning classifiers (inspired by ASR-ICL).

An :class:`ActionabilitySpec` says what a person can change; a :class:`LabelOracle` answers labels only and a
:class:`CountingOracle` enforces the query budget; :class:`ASRICL` and :class:`FullZO` search for the cheapest
actionable change that reaches a target class.
"""

from __future__ import annotations

from lightning_icml26.algorithms.recourse.asr_icl import (
    ASRICL,
    FullZO,
    StopSearch,
    refine_flip,
    subspace_racos,
    update_importance,
)
from lightning_icml26.algorithms.recourse.base import RecourseGenerator, RecourseResult, SearchState
from lightning_icml26.algorithms.recourse.baselines import (
    ActionableRecourse,
    DiceRandom,
    GrowingSpheres,
    Wachter,
    action_grid,
)
from lightning_icml26.algorithms.recourse.icl import (
    ContextLogisticICL,
    KernelICL,
    LanguageModelICL,
    LinearAttentionICL,
    linear_recourse,
)
from lightning_icml26.algorithms.recourse.oracle import BudgetExhausted, CountingOracle, LabelOracle
from lightning_icml26.algorithms.recourse.racos import RACOS, RacosResult
from lightning_icml26.algorithms.recourse.spec import ActionabilitySpec

__all__ = [
    "action_grid",
    "ActionabilitySpec",
    "ActionableRecourse",
    "ASRICL",
    "BudgetExhausted",
    "ContextLogisticICL",
    "CountingOracle",
    "DiceRandom",
    "FullZO",
    "GrowingSpheres",
    "KernelICL",
    "LabelOracle",
    "LanguageModelICL",
    "linear_recourse",
    "LinearAttentionICL",
    "RACOS",
    "RacosResult",
    "RecourseGenerator",
    "RecourseResult",
    "refine_flip",
    "SearchState",
    "StopSearch",
    "subspace_racos",
    "update_importance",
    "Wachter",
]
