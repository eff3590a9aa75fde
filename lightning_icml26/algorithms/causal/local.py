"""Local PGF statistics: derivatives of the empirical ``log G`` with standard errors, and 3-variable patterns.

The derivative of ``log G`` along a multiset of variables is a factorial cumulant when ``z = 1``; with
``z_k`` near zero on a set ``S`` it behaves like the factorial cumulant given ``X_S = 0``. For a PB-SCM
``log G`` is a polynomial with non-negative coefficients, so every such derivative is ``>= 0`` and is
positive exactly when some monomial dominates the multi-index: :func:`log_cumulant` is tested one-sided.

:func:`triple_patterns` enumerates every 3-variable pattern (each adjacent pair ``->``, ``<-`` or a latent
``<->``) and the dominance signature of its monomial support (sympy expansion); patterns with the same
signature cannot be told apart by these tests and form one equivalence class.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from functools import lru_cache

import networkx as nx
import numpy as np
import torch

from lightning_icml26.algorithms.causal.pgf import _log_weights, monomial_support

__all__ = ["PAIR_TYPES", "TEST_EXPONENTS", "TriplePattern", "log_cumulant", "set_partitions", "triple_patterns"]

PAIR_TYPES = ("none", "->", "<-", "<->")
"""Pair types of a local pattern, read for the pair ``(a, b)`` with ``a < b`` in the triple."""

TEST_EXPONENTS: tuple[tuple[int, int, int], ...] = (
    (1, 1, 0), (1, 0, 1), (0, 1, 1), (1, 1, 1),
    (2, 1, 1), (1, 2, 1), (1, 1, 2),
)  # fmt: skip
"""Multi-indices whose dominance (some monomial of ``log G`` >= it) the local test decides.

Pair squares such as ``(2, 1, 0)`` are left out: no 3-variable pattern has a monomial dominating them.
"""

_PAIRS = ((0, 1), (0, 2), (1, 2))


def set_partitions(items: Sequence[int]) -> Iterator[list[list[int]]]:
    """All set partitions of the positions ``items`` (Bell-number many).

    Example:
        >>> sum(1 for _ in set_partitions([0, 1, 2]))
        5
    """
    if not items:
        yield []
        return
    first, rest = items[0], list(items[1:])
    for part in set_partitions(rest):
        for k in range(len(part)):
            yield [*part[:k], [first, *part[k]], *part[k + 1 :]]
        yield [[first], *part]


def log_cumulant(X: np.ndarray, z: np.ndarray, variables: Sequence[int]) -> tuple[float, float, float]:
    """Derivative of the empirical ``log G`` at ``z`` along ``variables`` (repeats allowed), its SE and n_eff.

    The derivative of ``log G`` along positions ``1..m`` is ``sum_pi (-1)^{|pi|-1} (|pi|-1)! prod_B
    G_B / G`` over set partitions ``pi``, ``G_B`` the falling-factorial derivative along block ``B``. The
    standard error is the influence-function (delta-method) one, the gradient taken by torch autograd.

    Args:
        X: ``(n, p)`` int64 counts (already validated).
        z: ``(p,)`` point in ``(0, 1]``.
        variables: column indices, e.g. ``[0, 2, 2]`` for ``d_0 d_2^2 log G``.

    Returns:
        ``(value, standard_error, effective_sample_size)`` where ``n_eff = (sum w)^2 / sum w^2`` for the
        sample weights ``w = prod z^x``.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> x = rng.poisson(2.0, size=(20000, 1))
        >>> v, se, _ = log_cumulant(x, np.ones(1), [0, 0])  # factorial cumulant of a Poisson: 0
        >>> bool(abs(v) < 4 * se)
        True
    """
    n, p = X.shape
    log_z = np.log(z)
    m = len(variables)
    masks = list(range(1 << m))
    orders: dict[tuple[int, ...], int] = {}
    mask_order: list[int] = []
    for mask in masks:
        o = [0] * p
        for pos in range(m):
            if mask >> pos & 1:
                o[variables[pos]] += 1
        mask_order.append(orders.setdefault(tuple(o), len(orders)))
    log_w = np.stack([_log_weights(X, log_z, list(o)) for o in orders])
    shift = np.max(log_w[np.isfinite(log_w)]) if np.isfinite(log_w).any() else 0.0
    w = np.exp(log_w - shift)  # (n_orders, n): a common scale cancels in every ratio G_B / G
    means = torch.tensor(w.mean(axis=1), dtype=torch.float64, requires_grad=True)
    base = means[mask_order[0]]
    value = torch.zeros((), dtype=torch.float64)
    for partition in set_partitions(list(range(m))):
        k = len(partition)
        term = torch.ones((), dtype=torch.float64) * ((-1.0) ** (k - 1) * float(np.prod(range(1, k))))
        for block in partition:
            term = term * means[mask_order[sum(1 << pos for pos in block)]] / base
        value = value + term
    value.backward()
    grad = means.grad.numpy()  # type: ignore[union-attr]
    influence = grad @ (w - w.mean(axis=1, keepdims=True))
    w0 = w[mask_order[0]]
    n_eff = float(w0.sum() ** 2 / max(float((w0**2).sum()), 1e-300))
    return float(value.detach()), float(influence.std() / np.sqrt(n)), n_eff


class TriplePattern:
    """A 3-variable pattern: one of :data:`PAIR_TYPES` per pair ``(0, 1), (0, 2), (1, 2)``.

    Example:
        >>> TriplePattern(("->", "none", "->")).edges()
        ['0->1', '1->2']
    """

    def __init__(self, types: tuple[str, str, str]) -> None:
        self.types = types

    def graph(self) -> nx.DiGraph:
        """The pattern as a PB-SCM graph (observed ``0, 1, 2``; one latent per ``<->`` pair)."""
        g = nx.DiGraph()
        g.add_nodes_from([0, 1, 2], latent=False)
        for (a, b), t in zip(_PAIRS, self.types, strict=True):
            if t == "->":
                g.add_edge(a, b)
            elif t == "<-":
                g.add_edge(b, a)
            elif t == "<->":
                g.add_node(f"L{a}{b}", latent=True)
                g.add_edge(f"L{a}{b}", a)
                g.add_edge(f"L{a}{b}", b)
        return g

    def edges(self, labels: Sequence[str] | None = None) -> list[str]:
        """Readable edges, e.g. ``['0->1', '0<->2']``, with optional labels for positions 0, 1, 2."""
        names = list(labels) if labels is not None else ["0", "1", "2"]
        out = []
        for (a, b), t in zip(_PAIRS, self.types, strict=True):
            if t == "->":
                out.append(f"{names[a]}->{names[b]}")
            elif t == "<-":
                out.append(f"{names[b]}->{names[a]}")
            elif t == "<->":
                out.append(f"{names[a]}<->{names[b]}")
        return out

    def __repr__(self) -> str:
        return "TriplePattern(" + ", ".join(self.edges()) + ")"


@lru_cache(maxsize=8)
def triple_patterns(adjacent: tuple[bool, bool, bool]) -> tuple[tuple[TriplePattern, tuple[bool, ...]], ...]:
    """Every acyclic pattern with the given adjacency of pairs ``(0,1), (0,2), (1,2)`` and its signature.

    The signature holds, for each of :data:`TEST_EXPONENTS`, whether some monomial of the pattern's ``log G``
    dominates it.

    Example:
        >>> pats = triple_patterns((True, False, True))
        >>> len(pats)
        9
        >>> [p.edges() for p, s in pats if not s[1]]  # no monomial with z_0 z_2: arrowheads at 1 on both sides
        [['0->1', '2->1'], ['0->1', '1<->2'], ['0<->1', '2->1'], ['0<->1', '1<->2']]
    """
    choices = [("->", "<-", "<->") if adj else ("none",) for adj in adjacent]
    out = []
    for types in itertools.product(*choices):
        pattern = TriplePattern(types)  # type: ignore[arg-type]
        graph = pattern.graph()
        if not nx.is_directed_acyclic_graph(graph):
            continue
        support = monomial_support(graph)
        signature = tuple(any(all(m[i] >= e[i] for i in range(3)) for m in support) for e in TEST_EXPONENTS)
        out.append((pattern, signature))
    return tuple(out)
