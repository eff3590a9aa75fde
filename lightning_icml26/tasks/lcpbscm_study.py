"""LCPBSCM against the PGFSkeleton precursor and PC with a G-test on PB-SCM count data: two experiments.

* :func:`lcpbscm_local_task` (:class:`LcpbscmLocalConfig`): every 3-variable pattern (triangles and unshielded
  triples; each adjacent pair ``->``, ``<-`` or a latent ``<->``) with parameters alpha ~ U(0.2, 1), mu ~ U(1, 3);
  a fit is right when LCPBSCM's class for the triple equals the pattern's class of monomial equivalence.
* :func:`lcpbscm_graphs_task` (:class:`LcpbscmGraphsConfig`): random PB-SCMs with latent confounders (latent columns
  dropped); skeleton F1, orientation accuracy, SHD, latent-pair F1 and time per method of
  :data:`LCPBSCM_METHODS`, pooled over seeds with the package's torchmetrics.

``LCPBSCM-exact`` answers every PGF test exactly from the planted graph (``LCPBSCM.fit_oracle``): the ceiling of
the estimator's logic, a diagnostic rather than a competitor. ``PC-G`` is :func:`pc_gsq`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from lightning_icml26.algorithms.causal import LCPBSCM, ClosedFormOracle, PGFSkeleton, triple_patterns
from lightning_icml26.data import PBSCMSimulator, random_pbscm_graph
from lightning_icml26.metrics import LatentPairF1, OrientationAccuracy, SkeletonF1, StructuralHammingDistance
from lightning_icml26.metrics.functional import structural_hamming_distance
from lightning_icml26.optional import require
from lightning_icml26.tasks._config import TaskConfig

__all__ = [
    "LCPBSCM_METHODS",
    "LcpbscmGraphsConfig",
    "LcpbscmLocalConfig",
    "lcpbscm_graphs_task",
    "lcpbscm_local_task",
    "pc_gsq",
]

LCPBSCM_METHODS = ("LCPBSCM", "PGFSkeleton", "PC-G", "LCPBSCM-exact")
"""The methods of :func:`lcpbscm_graphs_task`, in table order."""


def _pc_codes(graph: np.ndarray) -> np.ndarray:
    p = graph.shape[0]
    code = np.zeros((p, p), dtype=np.int64)
    for i in range(p):
        for j in range(i + 1, p):
            a, b = graph[i, j], graph[j, i]  # causal-learn: a = -1, b = 1 means i -> j
            if a == -1 and b == 1:
                code[i, j] = 1
            elif a == 1 and b == -1:
                code[j, i] = 1
            elif a == 1 and b == 1:
                code[i, j] = code[j, i] = 2
            elif a != 0 or b != 0:
                code[i, j] = code[j, i] = 1
    return code


def pc_gsq(X: np.ndarray, alpha: float = 0.05, clip: int = 4) -> np.ndarray:
    """causal-learn's PC with the G-test on counts clipped at ``clip``, as an edge-code matrix.

    Codes: ``code[i, j] = 1`` for ``i -> j``, ``1`` both ways for an undirected edge, ``2`` both ways for ``<->``.
    The G-test needs a few categories; more levels leave its tables empty. Needs the ``causal`` extra.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> a = rng.poisson(2.0, 2000)
        >>> X = np.stack([a, a + rng.poisson(1.0, 2000), rng.poisson(2.0, 2000)], axis=1)
        >>> code = pc_gsq(X)
        >>> bool(code[0, 1] or code[1, 0]), int(code[0, 2] + code[2, 0])
        (True, 0)
    """
    pc = require("causallearn.search.ConstraintBased.PC", extra="causal", purpose="the PC baseline").pc
    gsq = require("causallearn.utils.cit", extra="causal", purpose="the PC baseline").gsq
    return _pc_codes(pc(np.minimum(X, clip).astype(float), alpha, gsq, show_progress=False).G.graph)


def _draw_pattern(pattern: Any, rng: np.random.Generator) -> Any:
    graph = pattern.graph()
    for node in graph:
        graph.nodes[node]["mu"] = float(rng.uniform(1, 3))
    for edge in graph.edges:
        graph.edges[edge]["alpha"] = float(rng.uniform(0.2, 1.0))
    return graph


@dataclass(frozen=True)
class LcpbscmLocalConfig(TaskConfig):
    """Settings of :func:`lcpbscm_local_task`: samples per fit, parameter draws per pattern, base seed.

    Example:
        >>> LcpbscmLocalConfig(n=0)
        Traceback (most recent call last):
        ...
        ValueError: LcpbscmLocalConfig.n must be >= 1, got 0
    """

    n: int = 100_000
    seeds: int = 3
    base_seed: int = 0

    def __post_init__(self) -> None:
        for name in ("n", "seeds"):
            if getattr(self, name) < 1:
                raise ValueError(f"LcpbscmLocalConfig.{name} must be >= 1, got {getattr(self, name)}")

    def run(self) -> dict[str, Any]:
        """Run :func:`lcpbscm_local_task` with these settings."""
        return lcpbscm_local_task(self)


def _local_fit(graph: Any, n: int, seed: int, truth: list[Any]) -> tuple[bool, bool, bool]:
    """(class right from data, class right exactly, skeleton right) for one drawn pattern."""
    sim = PBSCMSimulator(graph)
    est = LCPBSCM().fit(sim.sample(n, seed=seed))
    found = est.equivalence_classes_.get((0, 1, 2), [])
    exact = LCPBSCM().fit_oracle(ClosedFormOracle(graph)).equivalence_classes_.get((0, 1, 2), [])
    code = sim.true_graph()
    return (
        sorted(sorted(edges) for edges in found) == truth,
        sorted(sorted(edges) for edges in exact) == truth,
        bool(np.array_equal(est.adjacency_, (code > 0) | (code.T > 0))),
    )


def lcpbscm_local_task(config: LcpbscmLocalConfig) -> dict[str, Any]:
    """Fraction of 3-variable patterns whose equivalence class LCPBSCM returns (from data and exactly).

    Also the fraction of fits with the triple's skeleton right and the class accuracy among those, to tell
    skeleton (conditioning) errors from pattern-test errors.

    Args:
        config: the settings (:class:`LcpbscmLocalConfig`).

    Returns:
        ``n``, ``accuracy``, ``fits``, ``triangle accuracy``, ``unshielded accuracy``, ``skeleton right``,
        ``accuracy given skeleton``, ``exact-test accuracy``.

    Example:
        >>> out = LcpbscmLocalConfig(n=2_000, seeds=1).run()
        >>> out["fits"], out["exact-test accuracy"]
        (34, 1.0)
    """
    counts = {"right": 0, "exact": 0, "skeleton": 0, "right_skeleton": 0, "total": 0}
    by_kind = {"triangle": [0, 0], "unshielded": [0, 0]}
    for adjacency, kind in (((True, True, True), "triangle"), ((True, False, True), "unshielded")):
        patterns = triple_patterns(adjacency)
        for index, (pattern, signature) in enumerate(patterns):
            truth = sorted(sorted(p.edges(["X0", "X1", "X2"])) for p, s in patterns if s == signature)
            for seed in range(config.seeds):
                rng = np.random.default_rng([config.base_seed, index, seed, len(adjacency)])
                graph = _draw_pattern(pattern, rng)
                ok, exact, skeleton = _local_fit(graph, config.n, int(rng.integers(1 << 31)), truth)
                counts["right"] += ok
                counts["exact"] += exact
                counts["skeleton"] += skeleton
                counts["right_skeleton"] += ok and skeleton
                counts["total"] += 1
                by_kind[kind][0] += ok
                by_kind[kind][1] += 1
    total = counts["total"]
    return {
        "n": config.n, "accuracy": counts["right"] / total, "fits": total,
        **{f"{k} accuracy": v[0] / v[1] for k, v in by_kind.items()},
        "skeleton right": counts["skeleton"] / total,
        "accuracy given skeleton": counts["right_skeleton"] / max(counts["skeleton"], 1),
        "exact-test accuracy": counts["exact"] / total,
    }  # fmt: skip


@dataclass(frozen=True)
class LcpbscmGraphsConfig(TaskConfig):
    """Settings of :func:`lcpbscm_graphs_task`: observed nodes, latent confounders, samples, seeds, base seed.

    Example:
        >>> LcpbscmGraphsConfig(p=2)
        Traceback (most recent call last):
        ...
        ValueError: LcpbscmGraphsConfig.p must be >= 3, got 2
    """

    p: int = 6
    n_latent: int = 0
    n: int = 10_000
    seeds: int = 20
    base_seed: int = 0

    def __post_init__(self) -> None:
        if self.p < 3:
            raise ValueError(f"LcpbscmGraphsConfig.p must be >= 3, got {self.p}")
        if self.n < 1 or self.seeds < 1 or self.n_latent < 0:
            raise ValueError(f"LcpbscmGraphsConfig: n, seeds >= 1 and n_latent >= 0, got {self}")

    def run(self) -> dict[str, Any]:
        """Run :func:`lcpbscm_graphs_task` with these settings."""
        return lcpbscm_graphs_task(self)


# LCPBSCM-exact needs no data: one fit per planted graph, whatever n, reused with its own fit time.
_EXACT: dict[tuple[int, int, int], tuple[np.ndarray, float]] = {}


def _graph_fit(method: str, graph: Any, X: np.ndarray, key: tuple[int, int, int]) -> tuple[np.ndarray, float]:
    start = time.perf_counter()
    if method == "LCPBSCM-exact":
        if key not in _EXACT:
            _EXACT[key] = (LCPBSCM().fit_oracle(ClosedFormOracle(graph)).graph_, time.perf_counter() - start)
        return _EXACT[key]
    if method == "LCPBSCM":
        code = LCPBSCM().fit(X).graph_
    elif method == "PGFSkeleton":
        code = PGFSkeleton().fit(X).graph_
    else:
        code = pc_gsq(X)
    return code, time.perf_counter() - start


def lcpbscm_graphs_task(config: LcpbscmGraphsConfig) -> dict[str, Any]:
    """One row per method of :data:`LCPBSCM_METHODS`: metrics pooled over ``seeds`` random graphs, SHD spread.

    Args:
        config: the settings (:class:`LcpbscmGraphsConfig`).

    Returns:
        ``{"rows": [...]}``, each with ``p``, ``latents``, ``n``, ``method``, ``skeleton F1``, ``orientation acc``,
        ``SHD`` and ``SHD sd`` (over seeds), ``latent-pair F1`` and ``s/fit``.

    Example:
        >>> rows = LcpbscmGraphsConfig(p=4, n_latent=0, n=1_000, seeds=1).run()["rows"]
        >>> [r["method"] for r in rows], rows[-1]["skeleton F1"]
        (['LCPBSCM', 'PGFSkeleton', 'PC-G', 'LCPBSCM-exact'], 1.0)
    """
    c = config
    metrics = (SkeletonF1, OrientationAccuracy, StructuralHammingDistance, LatentPairF1)
    pooled = {m: [metric() for metric in metrics] for m in LCPBSCM_METHODS}
    shd: dict[str, list[float]] = {m: [] for m in LCPBSCM_METHODS}
    seconds: dict[str, list[float]] = {m: [] for m in LCPBSCM_METHODS}
    for seed in range(c.seeds):
        graph = random_pbscm_graph(c.p, c.n_latent, seed=c.base_seed * 1000 + seed)
        sim = PBSCMSimulator(graph)
        X = sim.sample(c.n, seed=c.base_seed * 1000 + seed)
        truth = torch.from_numpy(sim.true_graph())
        for method in LCPBSCM_METHODS:
            found, spent = _graph_fit(method, graph, X, (c.p, c.n_latent, c.base_seed * 1000 + seed))
            code = torch.from_numpy(found)
            seconds[method].append(spent)
            for metric in pooled[method]:
                metric.update(code, truth)
            shd[method].append(float(structural_hamming_distance(code, truth)))
    rows = []
    for method in LCPBSCM_METHODS:
        sk, ori, _, lat = (float(m.compute()) for m in pooled[method])
        rows.append({
            "p": c.p, "latents": c.n_latent, "n": c.n, "method": method, "skeleton F1": sk, "orientation acc": ori,
            "SHD": float(np.mean(shd[method])), "SHD sd": float(np.std(shd[method])), "latent-pair F1": lat,
            "s/fit": float(np.mean(seconds[method])),
        })  # fmt: skip
    return {"rows": rows}
