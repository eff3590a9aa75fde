"""``LCPBSCM``: causal discovery for branching count data with latent confounders (inspired by LC-PB-SCM).

Only the abstract of the LC-PB-SCM paper is public; this estimator is the project's reconstruction of the
idea it describes (closed-form PGF, monomial support, local 3-variable identifiability up to monomial
equivalence, a global assembly). Steps:

1. Skeleton. For a PB-SCM, setting ``z_k = 0`` removes every unit that passes through ``k``, and ``log G``
   is a sum over sources, so ``d_i d_j log G`` at ``z_S = 0`` vanishes exactly when no source reaches both
   ``i`` and ``j`` avoiding ``S`` (unlike d-separation, zeroing a collider creates no dependence). A PC-style
   search over ``S`` drawn from the neighbours of ``i`` and ``j`` (sizes ``0..max_cond``, ``z_S = 0``)
   removes a pair when the one-sided test of ``d_i d_j log G > 0`` (influence-function standard error) does
   not reject at level ``alpha``. Pairs with a shared latent parent stay adjacent, like direct edges.
2. Local 3-variable verdicts. Every connected triple is matched against all 3-variable patterns (each
   adjacent pair ``->``, ``<-`` or latent ``<->``) through the dominance signature of their monomial
   supports (:func:`triple_patterns`). Unshielded triples ``i - j - k`` test ``d_i d_k log G > 0`` with
   ``z = 0`` on the separating set of ``(i, k)`` minus ``j``; triangles test ``d_i d_j d_k log G`` and the three
   ``d_c^2 log G`` with ``z = 0`` on the triangle's other neighbours. Within the patterns a ``z_c^2`` monomial
   only appears as ``z_a z_b z_c^2`` (two directed paths into ``c``), so the second-order ``d_c^2 log G``
   decides the dominance of ``(1, 1, 2)`` with far more power than the fourth-order derivative. The patterns
   with the observed signature (the nearest ones when none matches) form the triple's equivalence class.
3. Assembly. Endpoint marks shared by every pattern of a class vote (arrowhead / tail); majority wins,
   ties stay unknown. An FCI-style rule then propagates: ``i *-> j - k`` with a non-collider at ``j`` and
   ``i, k`` non-adjacent gives ``j -> k``. Arrowheads at both ends mark a latent pair.

Deviations and limits: the precursor evaluates at ``z_S = 0.05``; here ``z_S = 0`` exactly by default (the
rows with ``X_S = 0``), since ``0.05`` lets paths through ``S`` leak into the statistic. Tests on fewer than
``min_eff`` (effective) rows are skipped: an edge is then kept, a triple gets no verdict. A pair with both a
direct edge and a shared latent is reported as the direct edge. An edge with an arrowhead at one end only stands for the
class ``{i -> j, i <-> j}`` and is reported as ``i -> j``.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from scipy.stats import norm

from lightning_icml26.algorithms.causal._base import CausalDiscoveryEstimator
from lightning_icml26.algorithms.causal.local import TEST_EXPONENTS, TriplePattern, log_cumulant, triple_patterns
from lightning_icml26.algorithms.causal.oracle import ClosedFormOracle

__all__ = ["LCPBSCM"]

_PAIRS = ((0, 1), (0, 2), (1, 2))


def _marks(pattern: TriplePattern, a: int, b: int) -> tuple[bool, bool]:
    """(arrowhead at b, tail at b) on the pair (a, b) of a pattern (positions 0..2)."""
    lo, hi = min(a, b), max(a, b)
    t = pattern.types[_PAIRS.index((lo, hi))]
    into_b = t == "<->" or (t == "->" and b == hi) or (t == "<-" and b == lo)
    return into_b, t != "none" and not into_b


class LCPBSCM(CausalDiscoveryEstimator):
    """Causal discovery on count data with latent confounders, returning equivalence classes where needed.

    Args:
        alpha: one-sided level of every PGF test.
        z0: PGF argument of the conditioning set, in ``[0, 1)``. ``0`` (default) is exact: the rows with
            ``X_S = 0`` are kept and the derivative is taken at ``z = 1`` on them. A positive value follows
            the precursor (``z_S = z0``) and lets paths through ``S`` leak with weight about ``z0``.
        max_cond: largest separating-set size in the skeleton search.
        min_eff: smallest effective sample size at which a test is run.
        drain_share: a non-empty conditioning set ``S`` separates a pair only when, besides the one-sided
            test not rejecting, the estimate of ``d_i d_j log G`` at ``z_S = 0`` is below ``drain_share`` times
            its unconditional estimate: zeroing ``S`` must remove most of the pair's dependence, not only make
            it insignificant. This guards against the conditioning drain (zeroing a strong child of the pair
            leaves a small but real dependence on few rows, which the test lacks power for). A pair whose
            ``X_i`` or ``X_j`` is constant on the rows with ``X_S = 0`` is never separated by ``S``. ``0`` turns
            the guard off. The value 0.1 was fixed before measuring; it was checked on 3-variable patterns
            with seeds apart from the benchmark's.

    Example:
        >>> import networkx as nx
        >>> from lightning_icml26.data import PBSCMSimulator
        >>> g = nx.DiGraph()
        >>> g.add_nodes_from(["A", "B", "C", "D"], mu=1.5)
        >>> g.add_node("L", latent=True, mu=2.0)
        >>> g.add_edges_from([("A", "B"), ("L", "B"), ("L", "C"), ("D", "C")], alpha=0.7)
        >>> X = PBSCMSimulator(g).sample(20000, seed=0)
        >>> est = LCPBSCM().fit(X)
        >>> est.graph_.tolist()  # A -> B <-> C <- D
        [[0, 1, 0, 0], [0, 0, 2, 0], [0, 2, 0, 0], [0, 0, 1, 0]]
    """

    def __init__(
        self,
        alpha: float = 0.01,
        z0: float = 0.0,
        max_cond: int = 2,
        min_eff: float = 300.0,
        drain_share: float = 0.1,
    ) -> None:
        self.alpha = self._check_level("alpha", alpha)
        if not (isinstance(z0, int | float) and 0.0 <= z0 < 1.0):
            raise ValueError(f"z0 must lie in [0, 1), got {z0!r}")
        self.z0 = float(z0)
        if not isinstance(max_cond, int) or max_cond < 0:
            raise ValueError(f"max_cond must be an integer >= 0, got {max_cond!r}")
        if not min_eff > 0:
            raise ValueError(f"min_eff must be > 0, got {min_eff!r}")
        if not (isinstance(drain_share, int | float) and 0.0 <= drain_share < 1.0):
            raise ValueError(f"drain_share must lie in [0, 1), got {drain_share!r}")
        self.max_cond = max_cond
        self.min_eff = float(min_eff)
        self.drain_share = float(drain_share)

    def _positive(self, counts: Any, zeroed: Any, variables: list[int]) -> bool | None:
        """One-sided test of ``d log G > 0`` along ``variables``; None when skipped.

        The derivative is taken at ``z0`` on ``zeroed`` and 1 elsewhere; an oracle answers exactly at ``z = 0``.
        """
        zeroed = sorted(zeroed)
        if isinstance(counts, ClosedFormOracle):
            return counts.positive(zeroed, variables)
        stat = self._statistic(counts, zeroed, variables)
        return None if stat is None else bool(stat[0] > norm.ppf(1 - self.alpha) * stat[1])

    def _statistic(self, counts: np.ndarray, zeroed: list[int], variables: list[int]) -> tuple[float, float] | None:
        """``(value, SE)`` of ``d log G`` along ``variables``, ``zeroed`` conditioned; None when skipped."""
        z = np.ones(counts.shape[1])
        if self.z0 == 0.0 and zeroed:  # exact: the PGF at z_S = 0 is P(X_S = 0) times the PGF given X_S = 0
            counts = counts[(counts[:, zeroed] == 0).all(axis=1)]
            if counts.shape[0] < self.min_eff:
                return None
        else:
            z[zeroed] = self.z0
        value, se, n_eff = log_cumulant(counts, z, variables)
        if n_eff < self.min_eff or not np.isfinite(se):
            return None
        return value, se

    def _separates(self, counts: Any, cond: tuple[int, ...], i: int, j: int, marginal: float | None) -> bool:
        """Whether zeroing ``cond`` removes the dependence of ``i`` and ``j`` (see ``drain_share``)."""
        if isinstance(counts, ClosedFormOracle):
            return not counts.positive(list(cond), [i, j])
        rows = counts[(counts[:, list(cond)] == 0).all(axis=1)] if cond and self.z0 == 0.0 else counts
        if rows.shape[0] == 0 or (rows[:, [i, j]].min(axis=0) == rows[:, [i, j]].max(axis=0)).any():
            return False  # a constant variable given X_S = 0: the test says nothing about the pair
        stat = self._statistic(counts, sorted(cond), [i, j])
        if stat is None:
            return False
        value, se = stat
        if value > norm.ppf(1 - self.alpha) * se:
            return False
        if not cond or marginal is None or self.drain_share <= 0:
            return True
        return value < self.drain_share * max(marginal, 0.0)

    def _skeleton(self, counts: Any, p: int) -> tuple[np.ndarray, dict[tuple[int, int], tuple[int, ...]]]:
        adjacency = ~np.eye(p, dtype=bool)
        sepsets: dict[tuple[int, int], tuple[int, ...]] = {}
        marginal: dict[tuple[int, int], float | None] = {}
        for size in range(self.max_cond + 1):
            snapshot = adjacency.copy()
            for i, j in itertools.combinations(range(p), 2):
                if not adjacency[i, j]:
                    continue
                if (i, j) not in marginal:
                    stat = None if isinstance(counts, ClosedFormOracle) else self._statistic(counts, [], [i, j])
                    marginal[(i, j)] = None if stat is None else stat[0]
                pool = sorted(set(np.flatnonzero(snapshot[i] | snapshot[j]).tolist()) - {i, j})
                for cond in itertools.combinations(pool, size):
                    if self._separates(counts, cond, i, j, marginal[(i, j)]):
                        adjacency[i, j] = adjacency[j, i] = False
                        sepsets[(i, j)] = sepsets[(j, i)] = cond
                        break
        return adjacency, sepsets

    def _signature(self, counts: Any, tri: tuple[int, ...], adj: tuple[bool, ...], zeroed: set[int]) -> Any:
        sig: list[bool] = []
        for e in TEST_EXPONENTS:
            pairs = [(a, b) for a, b in _PAIRS if e[a] and e[b] and sum(e) == 2 and e[3 - a - b] == 0]
            if pairs and adj[_PAIRS.index(pairs[0])]:
                sig.append(True)  # adjacency already established
                continue
            # within the patterns z_c^2 only appears in z_a z_b z_c^2: test d_c^2 log G (more power)
            variables = [tri[e.index(2)]] * 2 if max(e) > 1 else [tri[k] for k in range(3) if e[k]]
            verdict = self._positive(counts, zeroed, variables)
            if verdict is None:
                return None
            sig.append(verdict)
        return tuple(sig)

    def fit(self, X: Any) -> LCPBSCM:
        """Learn adjacencies, orientations, latent pairs and local equivalence classes of ``X``."""
        return self._fit(self._check_X(X))

    def fit_oracle(self, oracle: ClosedFormOracle) -> LCPBSCM:
        """Run the same algorithm with every test answered exactly by the closed-form ``log G``.

        This isolates the estimator's logic from finite-sample error: with exact answers every local
        verdict is the planted triple's class of monomial equivalence.

        Example:
            >>> import networkx as nx
            >>> g = nx.DiGraph([("A", "B"), ("L", "B"), ("L", "C"), ("D", "C")])
            >>> g.nodes["L"]["latent"] = True
            >>> LCPBSCM().fit_oracle(ClosedFormOracle(g)).graph_.tolist()
            [[0, 1, 0, 0], [0, 0, 2, 0], [0, 2, 0, 0], [0, 0, 1, 0]]
        """
        if not isinstance(oracle, ClosedFormOracle):
            raise TypeError(f"oracle must be a ClosedFormOracle, got {type(oracle).__name__}")
        if oracle.n_variables < 3:
            raise ValueError(f"oracle must stand for at least 3 observed variables, got {oracle.n_variables}")
        return self._fit(oracle)

    def _fit(self, counts: Any) -> LCPBSCM:
        p = counts.n_variables if isinstance(counts, ClosedFormOracle) else counts.shape[1]
        adjacency, sepsets = self._skeleton(counts, p)
        arrow_votes = np.zeros((p, p), dtype=np.int64)
        tail_votes = np.zeros((p, p), dtype=np.int64)
        self.equivalence_classes_ = {}
        non_colliders: list[tuple[int, int, int]] = []
        for tri in itertools.combinations(range(p), 3):
            self._local_verdict(counts, tri, adjacency, sepsets, arrow_votes, tail_votes, non_colliders)
        arrow = arrow_votes > tail_votes
        tail = tail_votes > arrow_votes
        changed = True
        while changed:  # FCI rule 1: i *-> j - k, non-collider at j, i and k non-adjacent: j -> k
            changed = False
            for i, j, k in non_colliders:
                for a, c in ((i, k), (k, i)):
                    if arrow[a, j] and not arrow[c, j] and not tail[c, j] and not arrow[j, c]:
                        arrow[j, c] = tail[c, j] = changed = True
        self._finish(adjacency, arrow, allow_latent=True)
        return self

    def _local_verdict(
        self,
        counts: Any,
        tri: tuple[int, ...],
        adjacency: np.ndarray,
        sepsets: dict[tuple[int, int], tuple[int, ...]],
        arrow_votes: np.ndarray,
        tail_votes: np.ndarray,
        non_colliders: list[tuple[int, int, int]],
    ) -> None:
        """Match one connected triple to its pattern class; add endpoint votes and non-collider records."""
        adj = tuple(bool(adjacency[tri[a], tri[b]]) for a, b in _PAIRS)
        if sum(adj) < 2:
            return
        if sum(adj) == 2:  # unshielded: the separating set of the non-adjacent pair, minus the triple
            k0, k1 = _PAIRS[adj.index(False)]
            zeroed = set(sepsets.get((tri[k0], tri[k1]), ())) - set(tri)
        else:  # triangle: every other neighbour of the triple
            zeroed = set(np.flatnonzero(adjacency[list(tri)].any(axis=0)).tolist()) - set(tri)
        observed = self._signature(counts, tri, adj, zeroed)
        if observed is None:
            return
        patterns = triple_patterns(adj)
        distance = [sum(a != b for a, b in zip(sig, observed, strict=True)) for _, sig in patterns]
        members = [pat for (pat, _), d in zip(patterns, distance, strict=True) if d == min(distance)]
        self.equivalence_classes_[tri] = [pat.edges([f"X{k}" for k in tri]) for pat in members]
        for a, b in itertools.permutations(range(3), 2):
            if not adj[_PAIRS.index((min(a, b), max(a, b)))]:
                continue
            marks = [_marks(pat, a, b) for pat in members]
            arrow_votes[tri[a], tri[b]] += all(m[0] for m in marks)
            tail_votes[tri[a], tri[b]] += all(m[1] for m in marks)
        if sum(adj) == 2:
            middle = next(k for k in range(3) if k not in _PAIRS[adj.index(False)])
            if all(not _marks(pat, (middle + 1) % 3, middle)[0] or not _marks(pat, (middle + 2) % 3, middle)[0]
                   for pat in members):  # fmt: skip
                ends = [tri[k] for k in range(3) if k != middle]
                non_colliders.append((ends[0], tri[middle], ends[1]))
