"""Exact PGF tests from the closed-form ``log G`` of a known PB-SCM: the population answer of every local test.

:class:`ClosedFormOracle` answers the question each :class:`LCPBSCM` test asks of data (is the derivative of
``log G`` along some variables, at ``z = 0`` on a set ``S`` and ``1`` elsewhere, positive?) from the planted
graph instead: the closed-form ``log G`` is built in torch and differentiated by autograd. Because ``log G``
is a polynomial with non-negative coefficients, the exact derivative is either exactly zero or positive, so
a fit that uses the oracle isolates the estimator's logic from finite-sample error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import networkx as nx
import torch

from lightning_icml26.algorithms.causal.pgf import _log_pgf_generic

__all__ = ["ClosedFormOracle"]


class ClosedFormOracle:
    """Exact derivatives of the closed-form ``log G`` of a PB-SCM, in the form the local tests use.

    Args:
        graph: annotated PB-SCM (``mu``, ``alpha``, ``latent`` as for the simulator).
        tol: a derivative above ``tol`` counts as positive (the exact zeros are exactly ``0.0``).
        default_alpha: thinning of edges without ``alpha``.
        default_mu: Poisson mean of nodes without ``mu``.

    Example:
        >>> g = nx.DiGraph([("A", "B"), ("B", "C")])
        >>> oracle = ClosedFormOracle(g)
        >>> oracle.positive([], [0, 2]), oracle.positive([1], [0, 2])  # A, C dependent; not given B = 0
        (True, False)
    """

    def __init__(self, graph: nx.DiGraph, tol: float = 1e-12, default_alpha: float = 0.5, default_mu: float = 1.0):
        if not isinstance(graph, nx.DiGraph):
            raise TypeError(f"graph must be a networkx.DiGraph, got {type(graph).__name__}")
        if not nx.is_directed_acyclic_graph(graph):
            raise ValueError(f"graph must be acyclic; it has the cycle {nx.find_cycle(graph)}")
        if not tol >= 0:
            raise ValueError(f"tol must be >= 0, got {tol!r}")
        self.graph = graph
        self.observed = [n for n in graph if not graph.nodes[n].get("latent", False)]
        self.tol = float(tol)
        self.default_alpha = default_alpha
        self.default_mu = default_mu

    @property
    def n_variables(self) -> int:
        """Number of observed variables (the columns the oracle stands for)."""
        return len(self.observed)

    def derivative(self, zeroed: Sequence[int], variables: Sequence[int]) -> float:
        """``d log G`` along ``variables`` (repeats allowed) at ``z = 0`` on ``zeroed`` and ``1`` elsewhere.

        Args:
            zeroed: observed positions set to ``z = 0``.
            variables: observed positions to differentiate along, e.g. ``[2, 2]``.

        Returns:
            The exact derivative (float64).
        """
        p = self.n_variables
        for name, values in (("zeroed", zeroed), ("variables", variables)):
            if any(not 0 <= int(v) < p for v in values):
                raise ValueError(f"{name} must hold positions in [0, {p}), got {list(values)!r}")
        if set(zeroed) & set(variables):
            raise ValueError(f"variables {list(variables)!r} must not overlap zeroed {list(zeroed)!r}")
        z = torch.ones(p, dtype=torch.float64)
        z[list(zeroed)] = 0.0
        z.requires_grad_(True)
        zmap: dict[Any, Any] = {node: z[k] for k, node in enumerate(self.observed)}
        value = _log_pgf_generic(self.graph, zmap, self.default_alpha, self.default_mu)
        for k, v in enumerate(variables):
            (grad,) = torch.autograd.grad(value, z, create_graph=k + 1 < len(variables), allow_unused=True)
            if grad is None:
                return 0.0
            value = grad[int(v)]
            if not value.requires_grad:
                return float(value) if k + 1 == len(variables) else 0.0
        return float(value)

    def positive(self, zeroed: Sequence[int], variables: Sequence[int]) -> bool:
        """Whether the exact derivative (see :meth:`derivative`) is positive."""
        return self.derivative(zeroed, variables) > self.tol
