"""Causal discovery for count data: PGF tools and estimators (inspired by LC-PB-SCM); the simulator is in ``data``."""

from __future__ import annotations

from typing import Any

from lightning_icml26._moved import moved_attribute
from lightning_icml26.algorithms.causal._base import CausalDiscoveryEstimator, edge_list
from lightning_icml26.algorithms.causal.lcpbscm import LCPBSCM
from lightning_icml26.algorithms.causal.local import TriplePattern, log_cumulant, triple_patterns
from lightning_icml26.algorithms.causal.oracle import ClosedFormOracle
from lightning_icml26.algorithms.causal.pgf import (
    check_counts,
    closed_form_log_pgf,
    empirical_log_pgf,
    empirical_log_pgf_torch,
    log_falling_factorial,
    log_pgf_derivative,
    log_pgf_polynomial,
    monomial_support,
)
from lightning_icml26.algorithms.causal.skeleton import PGFSkeleton

__all__ = [
    "CausalDiscoveryEstimator",
    "ClosedFormOracle",
    "LCPBSCM",
    "PGFSkeleton",
    "TriplePattern",
    "check_counts",
    "closed_form_log_pgf",
    "empirical_log_pgf",
    "edge_list",
    "empirical_log_pgf_torch",
    "log_cumulant",
    "log_falling_factorial",
    "log_pgf_derivative",
    "log_pgf_polynomial",
    "monomial_support",
    "triple_patterns",
]


def __getattr__(name: str) -> Any:
    return moved_attribute(__name__, name)  # names that moved out, kept for one release
