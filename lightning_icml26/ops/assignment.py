"""ITC's assignment step: proposals, the copy-or-generate cost matrix and its one-to-one assignment.

Per imagined frame with ``L`` cell tokens (Kim et al., ICML 2026; docs/itc.md):

1. **Proposals.** Gumbel-max sample ``y_j`` of the logits at every next-frame position ``j``; ``p_j`` is
   the softmax of the Gumbel-perturbed logits (as the official code does; ``perturbed_probs=False`` uses
   the plain softmax).
2. **Cost matrix** ``(2L, 2L)``: rows are the current tokens ``i`` then ``L`` generators ``g``; columns are
   the next positions ``j`` then ``L`` trash slots::

       C[i, j] = alpha * d_ij - p_j[c_i] - trash_cost      (copy; forbidden when d_ij > distance_cutoff)
       C[i, t] = 0                                          (current token disappears)
       C[g, j] = -p_j[y_j] if g == j else forbidden         (generate the sampled token)
       C[g, t] = 0

   with ``d_ij`` the squared grid distance (set to 0 for ``d_ij <= 1.1`` with ``zero_neighbor_distance``).
3. **Assignment.** Sinkhorn (the project's log-domain one, or POT) then greedy one-to-one rounding over the
   position columns (trash columns dropped), or an exact Hungarian assignment (scipy).
4. **Decode.** ``next_j = c_src(j)`` when ``j`` is assigned a current token, copying is allowed at ``j``
   and the episode is not done; otherwise ``next_j = y_j``.

Step 4 and the decoder that runs all four steps are in :mod:`lightning_icml26.ops.itc_decoder`. Forbidden pairs
cost ``+inf`` (zero mass) instead of the official code's finite 100, so rounding can never pick them; the greedy
rounding ranks pairs by the log of the plan (identical order to the plan, robust to underflow).
"""

from __future__ import annotations

import torch
from scipy.optimize import linear_sum_assignment

from lightning_icml26._optional import require
from lightning_icml26.ops.sinkhorn import greedy_round, sinkhorn_log

__all__ = [
    "build_itc_cost",
    "gumbel_noise",
    "grid_coordinates",
    "SOLVERS",
    "solve_assignment",
]

SOLVERS = ("sinkhorn", "pot", "hungarian")
_NEIGHBOR_DISTANCE = 1.1  # squared distances at or below it are "same cell or direct neighbour"


def grid_coordinates(height: int, width: int, device: torch.device | None = None) -> torch.Tensor:
    """``(height * width, 2)`` float (row, column) coordinates of the cells of a grid, row-major.

    Example:
        >>> grid_coordinates(2, 2).tolist()
        [[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]
    """
    rows, cols = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    return torch.stack([rows.reshape(-1), cols.reshape(-1)], dim=1).to(device=device, dtype=torch.float32)


def gumbel_noise(shape: torch.Size | tuple[int, ...], generator: torch.Generator | None = None) -> torch.Tensor:
    """Standard Gumbel noise ``-log(-log U)`` of the given shape (float32, CPU generator allowed).

    Example:
        >>> gumbel_noise((2, 3), torch.Generator().manual_seed(0)).shape
        torch.Size([2, 3])
    """
    uniform = torch.rand(shape, generator=generator).clamp_(1e-10, 1.0 - 1e-7)
    return -torch.log(-torch.log(uniform))


def build_itc_cost(
    probs: torch.Tensor,
    prev_tokens: torch.Tensor,
    sampled: torch.Tensor,
    coords: torch.Tensor,
    *,
    alpha: float,
    trash_cost: float,
    distance_cutoff: float,
    zero_neighbor_distance: bool = False,
) -> torch.Tensor:
    """The ``(B, 2L, 2L)`` copy-or-generate cost matrix of ITC (see the module docstring).

    Args:
        probs: ``(B, L, V)`` next-frame token probabilities ``p_j``.
        prev_tokens: ``(B, L)`` current-frame tokens ``c_i``.
        sampled: ``(B, L)`` sampled next-frame tokens ``y_j``.
        coords: ``(L, 2)`` cell coordinates.
        alpha: move-cost coefficient (per squared cell distance), non-negative.
        trash_cost: copy bonus ``tau`` subtracted from every copy cost.
        distance_cutoff: copies with squared distance above it are forbidden (``+inf``).
        zero_neighbor_distance: the official ``use_zero_neighbor_distance`` option: a copy to the same cell or
            to one of its four direct neighbours (squared distance <= 1.1) pays no move cost; allowed longer
            moves keep ``alpha * d_ij``. Default off.

    Returns:
        ``(B, 2L, 2L)`` float cost; rows current tokens then generators, columns positions then trash.

    Example:
        >>> probs = torch.eye(3).unsqueeze(0)  # position j predicts token j with certainty
        >>> cost = build_itc_cost(probs, torch.tensor([[0, 1, 2]]), torch.tensor([[0, 1, 2]]),
        ...                       grid_coordinates(1, 3), alpha=0.6, trash_cost=0.3, distance_cutoff=4.1)
        >>> cost.shape, round(cost[0, 0, 0].item(), 4), cost[0, 3, 0].item(), cost[0, 3, 1].item()
        (torch.Size([1, 6, 6]), -1.3, -1.0, inf)
    """
    batch, length, _ = probs.shape
    dist = torch.cdist(coords.to(probs.dtype), coords.to(probs.dtype)).pow(2)  # (L_i, L_j)
    # p_j[c_i]: probs (B, L_j, V) -> (B, V, L_j), gather token c_i along V for every row i
    copy_prob = probs.transpose(1, 2).gather(1, prev_tokens.unsqueeze(-1).expand(batch, length, length))
    moved = dist.masked_fill(dist <= _NEIGHBOR_DISTANCE, 0.0) if zero_neighbor_distance else dist
    copy = alpha * moved.unsqueeze(0) - copy_prob - trash_cost
    copy = copy.masked_fill((dist > distance_cutoff).unsqueeze(0), float("inf"))
    gen_prob = probs.gather(-1, sampled.unsqueeze(-1)).squeeze(-1)  # (B, L_j)
    generate = torch.full((batch, length, length), float("inf"), dtype=probs.dtype, device=probs.device)
    generate.diagonal(dim1=1, dim2=2).copy_(-gen_prob)
    zeros = torch.zeros(batch, length, length, dtype=probs.dtype, device=probs.device)
    top = torch.cat([copy, zeros], dim=2)
    bottom = torch.cat([generate, zeros], dim=2)
    return torch.cat([top, bottom], dim=1)


def _check_feasible(cost: torch.Tensor) -> None:
    """Raise ``ValueError`` unless every problem admits a one-to-one assignment of finite cost."""
    if bool(torch.isnan(cost).any()) or bool((cost == float("-inf")).any()):
        raise ValueError("cost contains nan or -inf entries; only finite values and +inf (forbidden) are allowed")
    finite = torch.isfinite(cost)
    if bool(finite.all()):
        return
    for index, mask in enumerate(finite.reshape(-1, *cost.shape[-2:]).cpu()):
        forbidden = (~mask).double()
        rows, cols = linear_sum_assignment(forbidden.numpy())  # minimum number of forbidden pairs used
        if float(forbidden[torch.as_tensor(rows), torch.as_tensor(cols)].sum()) > 0:
            raise ValueError(
                f"cost of problem {index} is infeasible: no one-to-one assignment avoids the forbidden (+inf) pairs"
            )


def solve_assignment(
    cost: torch.Tensor,
    *,
    num_columns: int | None = None,
    solver: str = "sinkhorn",
    reg: float = 0.05,
    num_iters: int = 100,
    check_feasible: bool = True,
) -> torch.Tensor:
    """One-to-one assignment of rows to the first ``num_columns`` columns of square cost matrices.

    ``"sinkhorn"`` (the project's :func:`~lightning_icml26.ops.sinkhorn.sinkhorn_log`) and ``"pot"``
    (``ot.sinkhorn`` in the log domain, per problem) solve entropic OT with uniform marginals over all
    columns, then :func:`~lightning_icml26.ops.sinkhorn.greedy_round` the first ``num_columns`` columns;
    ``"hungarian"`` is scipy's exact ``linear_sum_assignment``.

    Args:
        cost: ``(B, N, N)`` cost matrices; ``+inf`` marks forbidden pairs.
        num_columns: the columns that need a row (the rest are slack/trash); all when ``None``.
        solver: one of ``"sinkhorn"``, ``"pot"``, ``"hungarian"``.
        reg: entropic regularisation of the Sinkhorn solvers.
        num_iters: Sinkhorn iterations.
        check_feasible: verify first (exactly, with scipy) that a one-to-one assignment of finite cost exists.

    Returns:
        ``(B, num_columns)`` int64 row assigned to each column (distinct rows within a problem).

    Raises:
        ValueError: unknown solver, bad shapes, or an infeasible cost.

    Example:
        >>> cost = torch.tensor([[[0.0, 1.0], [1.0, 0.0]]])
        >>> solve_assignment(cost, solver="hungarian").tolist(), solve_assignment(cost).tolist()
        ([[0, 1]], [[0, 1]])
    """
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
    if not isinstance(cost, torch.Tensor) or cost.dim() != 3 or cost.shape[1] != cost.shape[2]:
        shape = tuple(cost.shape) if isinstance(cost, torch.Tensor) else type(cost).__name__
        raise ValueError(f"cost must be a (B, N, N) tensor, got {shape}")
    size = cost.shape[-1]
    columns = size if num_columns is None else num_columns
    if not 1 <= columns <= size:
        raise ValueError(f"num_columns must be in [1, {size}], got {num_columns}")
    if check_feasible:
        _check_feasible(cost)
    allowed = torch.isfinite(cost)
    if solver == "hungarian":
        out = torch.empty(cost.shape[0], columns, dtype=torch.long)
        big = float(cost[allowed].abs().max()) * size + 1.0 if bool(allowed.any()) else 1.0
        for index, matrix in enumerate(cost.detach().double().cpu()):
            rows, cols = linear_sum_assignment(torch.where(torch.isfinite(matrix), matrix, big * 10).numpy())
            row_of = torch.empty(size, dtype=torch.long)
            row_of[torch.as_tensor(cols)] = torch.as_tensor(rows)
            out[index] = row_of[:columns]
        return out.to(cost.device)
    if solver == "sinkhorn":
        log_plan = sinkhorn_log(cost.double(), reg=reg, num_iters=num_iters, log=True)
    else:
        ot = require("ot", extra="ot", purpose="the POT Sinkhorn solver of ITC")
        finite_max = float(cost[allowed].abs().max()) if bool(allowed.any()) else 1.0
        plans = []
        for matrix in cost.detach().double().cpu():
            dense = torch.where(torch.isfinite(matrix), matrix, finite_max + 1e3).numpy()
            uniform = torch.full((size,), 1.0 / size, dtype=torch.float64).numpy()
            plan = ot.sinkhorn(uniform, uniform, dense, reg, method="sinkhorn_log", numItermax=num_iters)
            plans.append(torch.as_tensor(plan))
        log_plan = torch.stack(plans).log().to(cost.device)
    return greedy_round(log_plan[..., :columns], allowed[..., :columns])
