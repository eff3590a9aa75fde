"""ITC: identifiable token correspondence decoding (copy-or-generate assignment) for token world models.

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

   with ``d_ij`` the squared grid distance.
3. **Assignment.** Sinkhorn (the project's log-domain one, or POT) then greedy one-to-one rounding over the
   position columns (trash columns dropped), or an exact Hungarian assignment (scipy).
4. **Decode.** ``next_j = c_src(j)`` when ``j`` is assigned a current token, copying is allowed at ``j``
   and the episode is not done; otherwise ``next_j = y_j``.

Deviations from the official code (documented, deliberate): forbidden pairs cost ``+inf`` (zero mass)
instead of the finite 100, so rounding can never pick them; the greedy rounding ranks pairs by the log of
the plan (identical order to the plan, robust to underflow).

Two readings of ``p_j``: the default ``perturbed_probs=True`` follows the official code (softmax of the
Gumbel-perturbed logits); ``perturbed_probs=False`` follows the paper text (softmax of the logits). They behave
very differently on stochastic objects. With perturbed probabilities, a copy overrides the sample at ``j`` only
when the copied token's perturbed probability plus ``trash_cost`` beats the sampled token's, that is only on
close calls. With plain probabilities, ITC copies wherever the model thinks a token probably stays, so it acts
like argmax and tends to freeze random-walking objects in place. ``benchmarks/itc_rollouts.py`` measures both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from lightning_icml26.ops.sinkhorn import greedy_round, sinkhorn_log

__all__ = [
    "DECODERS",
    "ITCDecoder",
    "build_itc_cost",
    "decode_next_frame",
    "gumbel_noise",
    "grid_coordinates",
    "solve_assignment",
]

DECODERS = ("itc", "sample", "argmax")
_SOLVERS = ("sinkhorn", "pot", "hungarian")


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
    copy = alpha * dist.unsqueeze(0) - copy_prob - trash_cost
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
    from scipy.optimize import linear_sum_assignment

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
    if solver not in _SOLVERS:
        raise ValueError(f"solver must be one of {_SOLVERS}, got {solver!r}")
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
        from scipy.optimize import linear_sum_assignment

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
        from lightning_icml26._optional import require

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


@dataclass
class ITCDecoder:
    """Copy-or-generate decoding of a next frame (ITC), a drop-in replacement for plain sampling.

    Args:
        alpha: move-cost coefficient per squared cell distance (paper: 0.6 Craftax, 0.2 MinAtar).
        trash_cost: copy bonus ``tau`` (paper: 0.3 Craftax, 0.05 MinAtar).
        distance_cutoff: largest squared move distance that may be copied (paper: 4.1).
        solver: ``"sinkhorn"`` (project, pure torch), ``"pot"`` or ``"hungarian"`` (exact, scipy).
        reg: Sinkhorn entropic regularisation.
        num_iters: Sinkhorn iterations.
        temperature: sampling temperature of the logits.
        perturbed_probs: use the softmax of the Gumbel-perturbed logits as ``p_j`` (official code) rather than
            the plain softmax.

    Example:
        >>> decoder = ITCDecoder()
        >>> prev = torch.tensor([[[0, 2], [0, 0]]])  # (B, H, W)
        >>> logits = 10.0 * torch.nn.functional.one_hot(prev, 3).float()  # the model predicts "no change"
        >>> decoder(logits, prev, generator=torch.Generator().manual_seed(0)).tolist()
        [[[0, 2], [0, 0]]]
    """

    alpha: float = 0.6
    trash_cost: float = 0.3
    distance_cutoff: float = 4.1
    solver: str = "sinkhorn"
    reg: float = 0.05
    num_iters: int = 100
    temperature: float = 1.0
    perturbed_probs: bool = True

    def __post_init__(self) -> None:
        if self.solver not in _SOLVERS:
            raise ValueError(f"solver must be one of {_SOLVERS}, got {self.solver!r}")
        if self.alpha < 0:
            raise ValueError(f"alpha must be non-negative, got {self.alpha}")
        if self.distance_cutoff < 0:
            raise ValueError(f"distance_cutoff must be non-negative, got {self.distance_cutoff}")
        if not self.temperature > 0:
            raise ValueError(f"temperature must be positive, got {self.temperature}")
        if not self.reg > 0:
            raise ValueError(f"reg must be positive, got {self.reg}")

    def assign(
        self,
        logits: torch.Tensor,
        prev_frame: torch.Tensor,
        gumbel: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> dict[str, torch.Tensor]:
        """Compute the sample, the cost and the one-to-one assignment for one frame.

        Args:
            logits: ``(B, H, W, V)`` next-frame logits.
            prev_frame: ``(B, H, W)`` current tokens.
            gumbel: ``(B, H, W, V)`` Gumbel noise to use (drawn from ``generator`` when ``None``).
            generator: random generator for the Gumbel noise.

        Returns:
            ``{"sampled": (B, L), "source": (B, L), "cost": (B, 2L, 2L)}`` over the ``L = H * W`` cells in
            row-major order; ``source[b, j] < L`` means position ``j`` copies current token ``source[b, j]``,
            ``>= L`` that it is generated.

        Example:
            >>> out = ITCDecoder().assign(torch.zeros(1, 2, 2, 3), torch.zeros(1, 2, 2, dtype=torch.long),
            ...                           generator=torch.Generator().manual_seed(0))
            >>> len(set(out["source"][0].tolist()))  # one-to-one: four distinct rows
            4
        """
        _check_frame_logits(logits, prev_frame)
        batch, height, width, vocab = logits.shape
        length = height * width
        flat_gumbel = None if gumbel is None else gumbel.reshape(batch, length, vocab)
        coords = grid_coordinates(height, width, logits.device)
        return self._assign(
            logits.reshape(batch, length, vocab), prev_frame.reshape(batch, length), coords, flat_gumbel, generator
        )

    def _assign(
        self,
        logits: torch.Tensor,
        prev_tokens: torch.Tensor,
        coords: torch.Tensor,
        gumbel: torch.Tensor | None,
        generator: torch.Generator | None,
    ) -> dict[str, torch.Tensor]:
        if not bool(torch.isfinite(logits).all()):
            raise ValueError("logits contain nan or inf; the ITC cost would be infeasible")
        scaled = logits.float() / self.temperature
        if gumbel is None:
            gumbel = gumbel_noise(scaled.shape, generator).to(scaled.device)
        perturbed = scaled + gumbel
        sampled = perturbed.argmax(-1)
        probs = torch.softmax(perturbed if self.perturbed_probs else scaled, dim=-1)
        cost = build_itc_cost(
            probs,
            prev_tokens,
            sampled,
            coords.to(probs.device),
            alpha=self.alpha,
            trash_cost=self.trash_cost,
            distance_cutoff=self.distance_cutoff,
        )
        source = solve_assignment(
            cost,
            num_columns=logits.shape[1],
            solver=self.solver,
            reg=self.reg,
            num_iters=self.num_iters,
            check_feasible=False,  # the generator diagonal always makes the ITC cost feasible
        )
        return {"sampled": sampled, "source": source, "cost": cost}

    def __call__(
        self,
        logits: torch.Tensor,
        prev_frame: torch.Tensor,
        *,
        copy_mask: torch.Tensor | None = None,
        done: torch.Tensor | None = None,
        gumbel: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Decode the next frame.

        Args:
            logits: ``(B, H, W, V)`` next-frame logits.
            prev_frame: ``(B, H, W)`` current frame tokens.
            copy_mask: ``(H, W)`` bool, cells where a copy may be used (default all; the official Craftax code
                excludes the border and the inventory rows).
            done: ``(B,)`` bool, episodes that ended: they take the generated tokens everywhere.
            gumbel: ``(B, H, W, V)`` Gumbel noise to reuse (for paired comparisons with plain sampling).
            generator: random generator for the Gumbel noise.

        Returns:
            ``(B, H, W)`` int64 next frame.
        """
        out = self.assign(logits, prev_frame, gumbel=gumbel, generator=generator)
        batch, height, width, _ = logits.shape
        length = height * width
        flat_prev = prev_frame.reshape(batch, length).long()
        source, sampled = out["source"], out["sampled"]
        copied = flat_prev.gather(1, source.clamp(max=length - 1))
        use_copy = source < length
        if copy_mask is not None:
            if copy_mask.shape != (height, width):
                raise ValueError(f"copy_mask must have shape {(height, width)}, got {tuple(copy_mask.shape)}")
            use_copy = use_copy & copy_mask.reshape(1, length).to(use_copy.device, torch.bool)
        if done is not None:
            use_copy = use_copy & ~done.reshape(batch, 1).to(use_copy.device, torch.bool)
        return torch.where(use_copy, copied, sampled).reshape(batch, height, width)


def _check_frame_logits(logits: torch.Tensor, prev_frame: torch.Tensor) -> None:
    if not isinstance(logits, torch.Tensor) or logits.dim() != 4:
        shape = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise ValueError(f"logits must be a (B, H, W, V) tensor, got {shape}")
    if not isinstance(prev_frame, torch.Tensor) or tuple(prev_frame.shape) != tuple(logits.shape[:3]):
        shape = tuple(prev_frame.shape) if isinstance(prev_frame, torch.Tensor) else type(prev_frame).__name__
        raise ValueError(
            f"prev_frame must have shape (B, H, W) = {tuple(logits.shape[:3])} like the logits, got {shape}"
        )
    if prev_frame.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
        raise TypeError(f"prev_frame must hold integer tokens, got dtype {prev_frame.dtype}")
    vocab = logits.shape[-1]
    if prev_frame.numel() and (int(prev_frame.min()) < 0 or int(prev_frame.max()) >= vocab):
        raise ValueError(
            f"prev_frame tokens must lie in [0, {vocab}), got range [{prev_frame.min()}, {prev_frame.max()}]"
        )


def decode_next_frame(
    logits: torch.Tensor,
    prev_frame: torch.Tensor,
    decoder: str = "itc",
    *,
    itc: ITCDecoder | None = None,
    gumbel: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    **itc_kwargs: Any,
) -> torch.Tensor:
    """Decode a next frame from ``(B, H, W, V)`` logits with ``"itc"``, ``"sample"`` or ``"argmax"``.

    ``"sample"`` is the Gumbel-max sample (the same ``y_j`` that ITC starts from when ``gumbel`` is shared);
    ``"argmax"`` the most probable token per cell.

    Args:
        logits: ``(B, H, W, V)`` next-frame logits.
        prev_frame: ``(B, H, W)`` current frame.
        decoder: ``"itc"``, ``"sample"`` or ``"argmax"``.
        itc: the ITC configuration (default :class:`ITCDecoder()`).
        gumbel: Gumbel noise of the logits' shape to reuse.
        generator: random generator for the noise.
        **itc_kwargs: forwarded to ``ITCDecoder.__call__`` (``copy_mask``, ``done``).

    Returns:
        ``(B, H, W)`` int64 tokens.

    Raises:
        ValueError: unknown decoder name or mismatched shapes.

    Example:
        >>> logits = torch.tensor([[[[0.0, 3.0]]]])
        >>> decode_next_frame(logits, torch.zeros(1, 1, 1, dtype=torch.long), "argmax").tolist()
        [[[1]]]
    """
    if decoder not in DECODERS:
        raise ValueError(f"decoder must be one of {DECODERS}, got {decoder!r}")
    _check_frame_logits(logits, prev_frame)
    if decoder == "argmax":
        return logits.argmax(-1)
    config = itc or ITCDecoder()
    if decoder == "itc":
        return config(logits, prev_frame, gumbel=gumbel, generator=generator, **itc_kwargs)
    if gumbel is None:
        gumbel = gumbel_noise(logits.shape, generator).to(logits.device)
    return (logits.float() / config.temperature + gumbel).argmax(-1)
