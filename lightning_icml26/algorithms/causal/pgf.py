"""Probability generating functions (PGFs) of count data: empirical, derivatives, closed form for a PB-SCM.

The empirical PGF ``G(z) = mean_n prod_i z_i^{x_ni}`` and its mixed derivatives
``d^o G(z) = mean_n prod_i (x_ni)_{o_i} z_i^{x_ni - o_i}`` (falling factorials ``(x)_k``) are evaluated in log
space with log-sum-exp averaging, so ``z = 0.05`` with counts in the hundreds does not underflow.

For a PB-SCM every unit born at a source ``s`` (Poisson noise of an observed node, or a latent source)
spreads as a branching process, so ``log G(z) = sum_s mu_s (T_s(z) - 1)`` with
``T_v(z) = z_v prod_{c in ch(v)} (1 - alpha_cv + alpha_cv T_c(z))`` for observed ``v`` and the same product
without ``z_v`` for a latent source. :func:`closed_form_log_pgf` evaluates it and :func:`log_pgf_polynomial`
expands it with sympy; the monomials of that polynomial are the "trie" of jointly reached node sets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import networkx as nx
import numpy as np
import sympy
import torch
from scipy.special import gammaln, logsumexp

__all__ = [
    "check_counts",
    "closed_form_log_pgf",
    "empirical_log_pgf",
    "empirical_log_pgf_torch",
    "log_falling_factorial",
    "log_pgf_derivative",
    "log_pgf_polynomial",
    "monomial_support",
]


def check_counts(X: Any, name: str = "X", min_variables: int = 1) -> np.ndarray:
    """Validate a ``(n_samples, n_variables)`` table of non-negative integer counts; return it as int64.

    Raises:
        ValueError: for a wrong shape, non-finite, negative or non-integer entries, or too few columns.

    Example:
        >>> check_counts([[1, 2], [0, 3]]).dtype
        dtype('int64')
        >>> check_counts([[1.5, 2]])
        Traceback (most recent call last):
        ...
        ValueError: X must hold integer counts; X[0, 0] = 1.5 is not an integer
    """
    array = np.asarray(X)
    if array.ndim != 2 or array.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array (n_samples, n_variables), got shape {array.shape}")
    if array.shape[1] < min_variables:
        raise ValueError(f"{name} must have at least {min_variables} variables (columns), got {array.shape[1]}")
    if array.dtype.kind not in "iuf b":
        raise ValueError(f"{name} must be numeric counts, got dtype {array.dtype}")
    values = array.astype(np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(f"{name} must be finite; {name}[{i}, {j}] = {values[i, j]}")
    if (values < 0).any():
        i, j = np.argwhere(values < 0)[0]
        raise ValueError(f"{name} must hold non-negative counts; {name}[{i}, {j}] = {values[i, j]:g}")
    frac = values != np.round(values)
    if frac.any():
        i, j = np.argwhere(frac)[0]
        raise ValueError(f"{name} must hold integer counts; {name}[{i}, {j}] = {values[i, j]:g} is not an integer")
    return values.astype(np.int64)


def _check_z(z: Any, p: int) -> np.ndarray:
    zz = np.asarray(z, dtype=np.float64)
    if zz.shape != (p,):
        raise ValueError(f"z must have shape ({p},), one value per variable, got {zz.shape}")
    if not (np.all(np.isfinite(zz)) and np.all(zz > 0) and np.all(zz <= 1)):
        raise ValueError(f"z must lie in (0, 1], got {zz.tolist()}")
    return zz


def log_falling_factorial(x: np.ndarray, k: int) -> np.ndarray:
    """``log((x)_k) = log(x (x-1) ... (x-k+1))``; ``-inf`` where ``x < k``.

    Example:
        >>> round(float(np.exp(log_falling_factorial(np.array([5]), 2))[0]), 9)
        20.0
    """
    xx = np.asarray(x, dtype=np.float64)
    out = np.full(xx.shape, -np.inf)
    ok = xx >= k
    out[ok] = gammaln(xx[ok] + 1) - gammaln(xx[ok] - k + 1)
    return out


def _log_weights(X: np.ndarray, log_z: np.ndarray, order: Sequence[int]) -> np.ndarray:
    """Per-sample ``log prod_i (x_i)_{o_i} z_i^{x_i - o_i}``."""
    out = np.zeros(X.shape[0])
    for i, o in enumerate(order):
        out = out + log_falling_factorial(X[:, i], int(o)) + (X[:, i] - o) * log_z[i] if o else out + X[:, i] * log_z[i]
    return out


def empirical_log_pgf(X: Any, z: Any) -> float:
    """``log G(z)`` of the empirical distribution of the rows of ``X`` (log-sum-exp averaging).

    Args:
        X: ``(n, p)`` non-negative integer counts.
        z: ``(p,)`` evaluation point in ``(0, 1]``.

    Example:
        >>> round(empirical_log_pgf([[0, 1], [2, 0]], [0.5, 0.5]), 6)  # log((0.5 + 0.25) / 2)
        -0.980829
    """
    counts = check_counts(X)
    log_z = np.log(_check_z(z, counts.shape[1]))
    return float(logsumexp(counts @ log_z) - np.log(counts.shape[0]))


def log_pgf_derivative(X: Any, z: Any, order: Sequence[int]) -> float:
    """``log`` of the mixed derivative ``d^order G(z)`` of the empirical PGF (falling factorials, log space).

    Args:
        X: ``(n, p)`` counts.
        z: ``(p,)`` point in ``(0, 1]``.
        order: ``(p,)`` non-negative derivative orders.

    Returns:
        The log derivative; ``-inf`` when no sample has ``x >= order``.

    Example:
        >>> float(np.exp(log_pgf_derivative([[2, 1], [3, 0]], [1.0, 1.0], [1, 0])))  # mean of x_0
        2.5
    """
    counts = check_counts(X)
    log_z = np.log(_check_z(z, counts.shape[1]))
    orders = np.asarray(order)
    if orders.shape != (counts.shape[1],) or (orders < 0).any() or orders.dtype.kind not in "iu":
        raise ValueError(f"order must be {counts.shape[1]} non-negative integers, got {order!r}")
    lw = _log_weights(counts, log_z, orders.tolist())
    if np.all(np.isneginf(lw)):
        return float("-inf")
    return float(logsumexp(lw) - np.log(counts.shape[0]))


def empirical_log_pgf_torch(X: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """Differentiable ``log G(z)`` of the rows of ``X`` (torch, log-sum-exp); autograd gives its derivatives.

    Args:
        X: ``(n, p)`` counts (any numeric dtype).
        z: ``(p,)`` point in ``(0, 1]``, possibly requiring grad.

    Example:
        >>> z = torch.tensor([0.5, 1.0], dtype=torch.float64, requires_grad=True)
        >>> g = empirical_log_pgf_torch(torch.tensor([[1, 0], [1, 2]]), z).exp()
        >>> g.backward(); float(z.grad[0])  # mean of x_0 z_0^(x_0 - 1)
        1.0
    """
    if X.ndim != 2 or z.shape != (X.shape[1],):
        raise ValueError(f"X must be (n, p) and z (p,), got {tuple(X.shape)} and {tuple(z.shape)}")
    if bool((z <= 0).any()) or bool((z > 1).any()):
        raise ValueError(f"z must lie in (0, 1], got {z.detach().tolist()}")
    log_terms = X.to(z.dtype) @ torch.log(z)
    return torch.logsumexp(log_terms, dim=0) - torch.log(torch.tensor(float(X.shape[0]), dtype=z.dtype))


def _pbscm_parts(graph: nx.DiGraph) -> tuple[list[Any], dict[Any, bool]]:
    if not isinstance(graph, nx.DiGraph):
        raise TypeError(f"graph must be a networkx.DiGraph, got {type(graph).__name__}")
    if not nx.is_directed_acyclic_graph(graph):
        raise ValueError(f"graph must be acyclic; it has the cycle {nx.find_cycle(graph)}")
    latent = {n: bool(graph.nodes[n].get("latent", False)) for n in graph}
    return list(reversed(list(nx.topological_sort(graph)))), latent


def _log_pgf_generic(graph: nx.DiGraph, zmap: dict[Any, Any], default_alpha: Any, default_mu: Any) -> Any:
    order, latent = _pbscm_parts(graph)
    trie: dict[Any, Any] = {}
    for node in order:  # children before parents
        term: Any = 1 if latent[node] else zmap[node]
        for child in graph.successors(node):
            a = graph.edges[node, child].get("alpha", default_alpha)
            term = term * (1 - a + a * trie[child])
        trie[node] = term
    return sum(graph.nodes[n].get("mu", default_mu) * (trie[n] - 1) for n in graph)


def closed_form_log_pgf(graph: nx.DiGraph, z: Any, default_alpha: float = 0.5, default_mu: float = 1.0) -> float:
    """Closed-form ``log G(z)`` of the observed counts of a PB-SCM (same attributes as the simulator).

    Args:
        graph: annotated DAG (``mu``, ``alpha``, ``latent``).
        z: point in ``(0, 1]`` for the observed nodes in insertion order.
        default_alpha: thinning of edges without ``alpha``.
        default_mu: Poisson mean of nodes without ``mu``.

    Example:
        >>> g = nx.DiGraph(); g.add_node("X", mu=2.0); g.add_node("Y", mu=1.0); g.add_edge("X", "Y", alpha=0.5)
        >>> round(closed_form_log_pgf(g, [0.5, 1.0]), 6)  # 2 (0.5 - 1) + 0
        -1.0
    """
    observed = [n for n in graph if not graph.nodes[n].get("latent", False)]
    zz = _check_z(z, len(observed))
    return float(_log_pgf_generic(graph, dict(zip(observed, zz.tolist(), strict=True)), default_alpha, default_mu))


def log_pgf_polynomial(graph: nx.DiGraph, symbolic: bool = True) -> tuple[sympy.Expr, list[sympy.Symbol]]:
    """Expanded polynomial ``log G`` of a PB-SCM in sympy, with one symbol ``z_<node>`` per observed node.

    Args:
        graph: the DAG; with ``symbolic=True`` every ``mu`` and ``alpha`` is a positive symbol (generic
            parameters), otherwise the numeric attributes are used.
        symbolic: use symbols for parameters.

    Returns:
        ``(expression, symbols)``.

    Example:
        >>> expr, zs = log_pgf_polynomial(nx.DiGraph([("X", "Y")]))
        >>> sorted(sympy.Poly(expr, *zs).monoms())
        [(0, 0), (0, 1), (1, 0), (1, 1)]
    """
    observed = [n for n in graph if not graph.nodes[n].get("latent", False)]
    zs = [sympy.Symbol(f"z_{n}") for n in observed]
    if symbolic:
        g = nx.DiGraph()
        g.add_nodes_from((n, {**d, "mu": sympy.Symbol(f"mu_{n}", positive=True)}) for n, d in graph.nodes(data=True))
        g.add_edges_from((u, v, {"alpha": sympy.Symbol(f"a_{u}_{v}", positive=True)}) for u, v in graph.edges)
        graph = g
    expr = _log_pgf_generic(graph, dict(zip(observed, zs, strict=True)), sympy.Rational(1, 2), 1)
    return sympy.expand(expr), zs


def monomial_support(graph: nx.DiGraph) -> frozenset[tuple[int, ...]]:
    """Exponent vectors of the non-constant monomials of ``log G`` at generic parameters (observed order).

    Example:
        >>> g = nx.DiGraph([("L", "X"), ("L", "Y")]); g.nodes["L"]["latent"] = True
        >>> sorted(monomial_support(g))
        [(0, 1), (1, 0), (1, 1)]
    """
    expr, zs = log_pgf_polynomial(graph)
    poly = sympy.Poly(expr, *zs)
    return frozenset(m for m, c in zip(poly.monoms(), poly.coeffs(), strict=True) if any(m) and c != 0)
