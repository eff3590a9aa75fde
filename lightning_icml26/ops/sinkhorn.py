"""Batched log-domain Sinkhorn and greedy one-to-one rounding of a transport plan (pure torch).

Used by the ITC decoder (:mod:`lightning_icml26.modules.itc`) but general: any ``(..., n, m)`` cost
matrix with optional ``+inf`` entries (forbidden pairs, whose mass is exactly zero).
"""

from __future__ import annotations

import torch

__all__ = ["greedy_round", "sinkhorn_log"]


def _check_marginal(name: str, value: torch.Tensor | None, shape: torch.Size, cost: torch.Tensor) -> torch.Tensor:
    if value is None:
        return torch.full(shape, 1.0 / shape[-1], dtype=cost.dtype, device=cost.device)
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or None, got {type(value).__name__}")
    if value.shape != shape and value.shape != shape[-1:]:
        raise ValueError(f"{name} must have shape {tuple(shape)} or {tuple(shape[-1:])}, got {tuple(value.shape)}")
    if not bool(torch.all(value > 0)):
        raise ValueError(f"{name} must be strictly positive")
    return value.to(cost.dtype).expand(shape)


def sinkhorn_log(
    cost: torch.Tensor,
    a: torch.Tensor | None = None,
    b: torch.Tensor | None = None,
    *,
    reg: float = 0.05,
    num_iters: int = 100,
    tol: float | None = None,
    log: bool = False,
) -> torch.Tensor:
    """Entropic optimal transport by Sinkhorn iterations in the log domain.

    Solves ``min_P <P, C> - reg * H(P)`` subject to ``P 1 = a`` and ``P^T 1 = b`` with the stabilised
    updates ``f = log a - LSE_j(-C/reg + g)``, ``g = log b - LSE_i(-C/reg + f)`` (the same fixed point as
    POT's ``ot.sinkhorn(..., method="sinkhorn_log")``). ``+inf`` costs mark forbidden pairs.

    Args:
        cost: ``(..., n, m)`` float cost matrices; ``+inf`` allowed, ``nan`` and ``-inf`` are not.
        a: source marginal ``(..., n)`` or ``(n,)``, positive; uniform ``1/n`` when ``None``.
        b: target marginal ``(..., m)`` or ``(m,)``, positive; uniform ``1/m`` when ``None``.
        reg: entropic regularisation, positive.
        num_iters: maximum number of (row, column) update pairs, at least 1.
        tol: stop early when the row-marginal error (L1, max over the batch) falls below ``tol``.
        log: return the log of the plan (exactly ``-inf`` on forbidden pairs) instead of the plan.

    Returns:
        The plan (or its log), same shape as ``cost``.

    Raises:
        ValueError: bad ``reg``/``num_iters``, a ``nan``/``-inf`` cost, or a row or column whose costs are
            all ``+inf`` (the transport problem is then infeasible).

    Example:
        >>> cost = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
        >>> plan = sinkhorn_log(cost, reg=0.01)
        >>> plan.round(decimals=3)
        tensor([[0.5000, 0.0000],
                [0.0000, 0.5000]])
    """
    if not isinstance(cost, torch.Tensor):
        raise TypeError(f"cost must be a torch.Tensor, got {type(cost).__name__}")
    if cost.dim() < 2:
        raise ValueError(f"cost must have at least 2 dimensions (..., n, m), got shape {tuple(cost.shape)}")
    if not cost.is_floating_point():
        raise TypeError(f"cost must be a floating-point tensor, got dtype {cost.dtype}")
    if not reg > 0:
        raise ValueError(f"reg must be positive, got {reg}")
    if not isinstance(num_iters, int) or num_iters < 1:
        raise ValueError(f"num_iters must be a positive integer, got {num_iters!r}")
    if bool(torch.isnan(cost).any()) or bool((cost == float("-inf")).any()):
        raise ValueError("cost contains nan or -inf entries; only finite values and +inf (forbidden) are allowed")
    finite = torch.isfinite(cost)
    if not bool(finite.any(dim=-1).all()) or not bool(finite.any(dim=-2).all()):
        raise ValueError("cost is infeasible: some row or column has only +inf (forbidden) entries")
    *batch, n, m = cost.shape
    log_a = _check_marginal("a", a, torch.Size([*batch, n]), cost).log()
    log_b = _check_marginal("b", b, torch.Size([*batch, m]), cost).log()
    log_kernel = -cost / reg
    f = torch.zeros_like(log_a)
    g = torch.zeros_like(log_b)
    for _ in range(num_iters):
        f = log_a - torch.logsumexp(log_kernel + g.unsqueeze(-2), dim=-1)
        g = log_b - torch.logsumexp(log_kernel + f.unsqueeze(-1), dim=-2)
        if tol is not None:
            with torch.no_grad():  # the stopping test is not part of the differentiated computation
                rows = torch.logsumexp(log_kernel + f.unsqueeze(-1) + g.unsqueeze(-2), dim=-1).exp()
                error = float((rows - log_a.exp()).abs().sum(-1).max())
            if error < tol:
                break
    log_plan = log_kernel + f.unsqueeze(-1) + g.unsqueeze(-2)
    return log_plan if log else log_plan.exp()


def greedy_round(scores: torch.Tensor, allowed: torch.Tensor | None = None) -> torch.Tensor:
    """Greedy one-to-one rounding: give every column the row with the highest remaining score.

    Repeats ``m`` times: over rows and columns still free, take the allowed pair with the largest score
    (ties broken by the lowest flat index) and mark its row and column used. Every column gets a distinct
    row, so the result is an injective map columns -> rows (``n >= m`` is required).

    Args:
        scores: ``(..., n, m)`` scores, e.g. a transport plan or its log; ``-inf`` scores stay selectable
            when ``allowed`` says so (they rank below every finite score).
        allowed: ``(..., n, m)`` bool mask of selectable pairs (broadcastable); all pairs when ``None``.

    Returns:
        ``(..., m)`` int64 row index assigned to each column, all distinct within a problem.

    Raises:
        ValueError: if ``n < m`` or if the greedy pass reaches a column with no allowed free row.

    Example:
        >>> greedy_round(torch.tensor([[0.9, 0.8], [0.7, 0.1]])).tolist()
        [0, 1]
    """
    if not isinstance(scores, torch.Tensor) or scores.dim() < 2:
        raise ValueError("scores must be a tensor of shape (..., n, m)")
    *batch, n, m = scores.shape
    if n < m:
        raise ValueError(f"greedy_round needs at least as many rows as columns, got n={n} rows and m={m} columns")
    flat = scores.reshape(-1, n, m).to(torch.float64)
    size = flat.shape[0]
    if allowed is None:
        mask = torch.ones(size, n, m, dtype=torch.bool, device=scores.device)
    else:
        mask = torch.broadcast_to(allowed.to(torch.bool), scores.shape).reshape(size, n, m).clone()
    # allowed pairs rank by score (-inf clamped to the lowest finite value), forbidden ones never win
    lowest = torch.finfo(torch.float64).min
    value = flat.nan_to_num(nan=lowest, neginf=lowest, posinf=torch.finfo(torch.float64).max)
    value = torch.where(mask, value, torch.tensor(float("-inf"), dtype=torch.float64, device=scores.device))
    rows_of = torch.empty(size, m, dtype=torch.long, device=scores.device)
    index = torch.arange(size, device=scores.device)
    for _ in range(m):
        best, flat_index = value.reshape(size, -1).max(dim=-1)
        if bool(torch.isinf(best).any()):
            raise ValueError(
                "greedy rounding is stuck: a column has no allowed free row left (the allowed pairs admit no "
                "one-to-one assignment that the greedy order can find); use an exact solver such as 'hungarian'"
            )
        row, col = flat_index // m, flat_index % m
        rows_of[index, col] = row
        value[index, row, :] = float("-inf")
        value[index, :, col] = float("-inf")
    return rows_of.reshape(*batch, m)
