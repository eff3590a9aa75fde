"""Decentralised matching bandits in markets with arrivals and departures (inspired by Way-SE).

A simulator (:class:`MatchingMarketEnv`), deferred acceptance and stability checks, the Way-SE-inspired
policies and the baselines they are compared with, and :func:`run_market` to run one against the other.
"""

from __future__ import annotations

from lightning_icml26.algorithms.matching.baselines import CAUCB, ETGS, CentralizedETCGS, CentralizedUCBGS
from lightning_icml26.algorithms.matching.market import ARRIVAL_PATTERNS, MatchingMarketEnv, market_schedule
from lightning_icml26.algorithms.matching.policy import (
    MatchingPolicy,
    best_unblocked,
    confidence_radius,
    ranking_resolved,
)
from lightning_icml26.algorithms.matching.simulate import MarketRun, log_checkpoints, run_market
from lightning_icml26.algorithms.matching.stable import blocking_pairs, deferred_acceptance, stable_matching
from lightning_icml26.algorithms.matching.wayse import WaySE, WaySE2S

#: Policies by the names recipes and benchmarks use.
POLICIES: dict[str, type[MatchingPolicy]] = {
    "wayse": WaySE,
    "wayse2s": WaySE2S,
    "etc_gs": CentralizedETCGS,
    "ucb_gs": CentralizedUCBGS,
    "ca_ucb": CAUCB,
    "etgs": ETGS,
}

__all__ = [
    "ARRIVAL_PATTERNS",
    "POLICIES",
    "best_unblocked",
    "blocking_pairs",
    "CAUCB",
    "CentralizedETCGS",
    "CentralizedUCBGS",
    "confidence_radius",
    "deferred_acceptance",
    "ETGS",
    "log_checkpoints",
    "market_schedule",
    "MarketRun",
    "MatchingMarketEnv",
    "MatchingPolicy",
    "ranking_resolved",
    "run_market",
    "stable_matching",
    "WaySE",
    "WaySE2S",
]
