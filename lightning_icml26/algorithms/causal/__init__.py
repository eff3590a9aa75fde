"""Causal discovery for count data: PB-SCM simulator, PGF tools and estimators (inspired by LC-PB-SCM)."""

from __future__ import annotations

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
from lightning_icml26.data.pbscm_simulator import PBSCMSimulator, graph_code, random_pbscm_graph
from lightning_icml26.algorithms.causal.skeleton import PGFSkeleton

__all__ = [
    "CausalDiscoveryEstimator",
    "ClosedFormOracle",
    "LCPBSCM",
    "PBSCMSimulator",
    "PGFSkeleton",
    "TriplePattern",
    "check_counts",
    "closed_form_log_pgf",
    "empirical_log_pgf",
    "edge_list",
    "empirical_log_pgf_torch",
    "graph_code",
    "log_cumulant",
    "log_falling_factorial",
    "log_pgf_derivative",
    "log_pgf_polynomial",
    "monomial_support",
    "random_pbscm_graph",
    "triple_patterns",
]
