"""Experiment runners that the recipes call: they sit above every library layer and below the CLI.

Each runner takes one settings object, a frozen dataclass derived from :class:`TaskConfig` whose ``run()``
runs it; a recipe's ``task`` node builds that object.

* :func:`complementarity_grid_task` (``benchmarks/complementarity.py``): robust human-AI pooling over a grid.
* :func:`arm_kv_budget_task` (``arm_kv_budget``): one attention kind of the ARM comparison, trained, then decoded
  at a KV budget.
* :func:`fair_frontier_task` (``fair_compas``): fairness frontiers on a tabular data set.
* :func:`run_online` (``r4_pendulum``, ``r4_halfcheetah``): R4's online policy learning with a learned reward,
  with :func:`reward_function` and :func:`fit_reward_model`. They live in :mod:`lightning_icml26.tasks.r4_online`,
  which imports ``gymnasium`` (the optional ``rl`` extra), so they are loaded on first access.
* :func:`r4_alignment_task` (``benchmarks/r4_reward.py``): R4 against its baselines, offline reward alignment
  (lazy like ``run_online``), with :func:`summarise_alignment`, :func:`random_policy_returns`, :func:`summarise_policy`.
* :func:`g_substrate_task` (``benchmarks/g_substrate.py``): G-Substrate's three SFT regimes for one seed.
* :func:`irt_judge_task` (``irt_judge``): IRT-GRM reliability diagnostics of a simulated or SmolLM2 judge.
* :func:`irt_regime_task`, :func:`irt_nuts_task`, :func:`irt_docstring_judge_task` (``benchmarks/irt_judge.py``):
  the paper's regimes with EM beside girth and NUTS, and SmolLM2 judging degraded docstrings.
* :func:`matching_market_task` (``wayse_market``): Way-SE-inspired matching bandits against baselines.
* :func:`asr_icl_task` (``asr_icl_compas``): label-only recourse for ICL classifiers, ASR-ICL against baselines.
* :func:`isa_edit_task` (``isa_edit_toy``): a toy in-context video editor, dense then ISA fine-tuning.
* :func:`itc_minatar_task` with :class:`ItcMinatarConfig` (``itc_minatar``): ITC on MinAtar, world model to an
  agent trained in imagination.
* :func:`loes_probe_task` with :class:`LoesProbeConfig` (``benchmarks/loes_probe.py``): LOES layer probing
  against the usual heads, and GeoReg fine-tuning.
* :func:`lcpbscm_task` (``lcpbscm_synthetic``, ``lcpbscm_rwm1984``): causal discovery on count data.
* :func:`lcpbscm_local_task`, :func:`lcpbscm_graphs_task` (``benchmarks/lc_pb_scm.py``): 3-variable patterns and
  random graphs, LCPBSCM against PGFSkeleton and PC with a G-test (:func:`pc_gsq`).
* :func:`pgs_mutants_task` (``pgs_mutants``): PGS or a debugging baseline repairing the mutant suite.
* :func:`pgs_detection_task`, :func:`pgs_comparison_task` (``benchmarks/pgs.py``): bugs caught by PGS's checks
  and their counterexamples; PGS, Self-Debug and direct generation with one language model.
* :func:`valueflow_intensity_task` with :class:`ValueflowIntensityConfig` (``valueflow_intensity``): VALUEFLOW's
  anchor-based intensity evaluator.
"""

from __future__ import annotations

import importlib
from typing import Any

from lightning_icml26._optional import require
from lightning_icml26.tasks._config import TaskConfig
from lightning_icml26.tasks.arm_kv_budget import ARMKVBudgetConfig, arm_kv_budget_task
from lightning_icml26.tasks.asr_icl import AsrIclConfig, asr_icl_task
from lightning_icml26.tasks.complementarity_grid import ComplementarityGridConfig, complementarity_grid_task
from lightning_icml26.tasks.fair_frontier import (
    FairClassifierSettings,
    FairFrontierConfig,
    fair_frontier_task,
    fair_splits,
    fit_fair_classifier,
)
from lightning_icml26.tasks.g_substrate import (
    G_SUBSTRATE_QA_TASKS,
    G_SUBSTRATE_RATIOS,
    G_SUBSTRATE_TASKS,
    GSubstrateConfig,
    g_substrate_held_out,
    g_substrate_task,
    isolated_steps,
)
from lightning_icml26.tasks.irt_judge import IrtJudgeConfig, irt_judge_task
from lightning_icml26.tasks.irt_study import (
    IRT_REGIMES,
    IrtDocstringJudgeConfig,
    IrtNutsConfig,
    IrtRegimeConfig,
    irt_docstring_judge_task,
    irt_nuts_task,
    irt_regime_task,
    summarise_irt_regimes,
)
from lightning_icml26.tasks.isa_edit import IsaEditConfig, isa_edit_task
from lightning_icml26.tasks.itc_minatar import ItcMinatarConfig, itc_minatar_task
from lightning_icml26.tasks.lcpbscm import LcpbscmConfig, lcpbscm_task
from lightning_icml26.tasks.lcpbscm_study import (
    LCPBSCM_METHODS,
    LcpbscmGraphsConfig,
    LcpbscmLocalConfig,
    lcpbscm_graphs_task,
    lcpbscm_local_task,
    pc_gsq,
)
from lightning_icml26.tasks.loes_probe import LoesProbeConfig, loes_probe_task
from lightning_icml26.tasks.matching_market import MatchingMarketConfig, matching_market_task
from lightning_icml26.tasks.pgs_mutants import PgsMutantsConfig, pgs_mutants_task
from lightning_icml26.tasks.pgs_study import (
    COUNTEREXAMPLE_CHOICES,
    PgsComparisonConfig,
    PgsDetectionConfig,
    pgs_comparison_task,
    pgs_detection_task,
    summarise_detection,
)
from lightning_icml26.tasks.valueflow_intensity import ValueflowIntensityConfig, valueflow_intensity_task

# Names from the gymnasium-dependent module, resolved lazily by ``__getattr__`` (gymnasium is optional).
_LAZY = {
    "R4AlignmentConfig": "r4_alignment",
    "R4_ALIGNMENT_METHODS": "r4_alignment",
    "R4_CORE_METHODS": "r4_alignment",
    "R4_PAPER_BASELINES": "r4_alignment",
    "r4_alignment_task": "r4_alignment",
    "random_policy_returns": "r4_alignment",
    "summarise_alignment": "r4_alignment",
    "summarise_policy": "r4_alignment",
    "R4OnlineConfig": "r4_online",
    "fit_reward_model": "r4_online",
    "reward_function": "r4_online",
    "run_online": "r4_online",
}

__all__ = [
    "ARMKVBudgetConfig",
    "AsrIclConfig",
    "COUNTEREXAMPLE_CHOICES",
    "ComplementarityGridConfig",
    "FairClassifierSettings",
    "FairFrontierConfig",
    "GSubstrateConfig",
    "G_SUBSTRATE_QA_TASKS",
    "G_SUBSTRATE_RATIOS",
    "G_SUBSTRATE_TASKS",
    "IRT_REGIMES",
    "IrtDocstringJudgeConfig",
    "IrtJudgeConfig",
    "IrtNutsConfig",
    "IrtRegimeConfig",
    "IsaEditConfig",
    "ItcMinatarConfig",
    "LCPBSCM_METHODS",
    "LcpbscmConfig",
    "LcpbscmGraphsConfig",
    "LcpbscmLocalConfig",
    "LoesProbeConfig",
    "MatchingMarketConfig",
    "PgsComparisonConfig",
    "PgsDetectionConfig",
    "PgsMutantsConfig",
    "TaskConfig",
    "ValueflowIntensityConfig",
    "arm_kv_budget_task",
    "asr_icl_task",
    "complementarity_grid_task",
    "fair_frontier_task",
    "fair_splits",
    "fit_fair_classifier",
    "g_substrate_held_out",
    "g_substrate_task",
    "irt_docstring_judge_task",
    "irt_judge_task",
    "irt_nuts_task",
    "irt_regime_task",
    "isa_edit_task",
    "isolated_steps",
    "itc_minatar_task",
    "lcpbscm_graphs_task",
    "lcpbscm_local_task",
    "lcpbscm_task",
    "loes_probe_task",
    "matching_market_task",
    "pc_gsq",
    "pgs_comparison_task",
    "pgs_detection_task",
    "pgs_mutants_task",
    "summarise_detection",
    "summarise_irt_regimes",
    "valueflow_intensity_task",
    *(name for name in _LAZY if not name.isupper()),  # the lazy constants are importable, not API-listed
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        require("gymnasium", extra="rl", purpose=name)  # the install hint instead of a bare ModuleNotFoundError
        module = importlib.import_module(f"lightning_icml26.tasks.{_LAZY[name]}")
        return getattr(module, name)
    raise AttributeError(f"module 'lightning_icml26.tasks' has no attribute {name!r}")
