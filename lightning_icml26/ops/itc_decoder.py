"""ITC: identifiable token correspondence decoding (copy-or-generate assignment) for token world models.

Per imagined frame with ``L`` cell tokens (Kim et al., ICML 2026), :class:`ITCDecoder` draws Gumbel-max
proposals, builds the copy-or-generate cost matrix and solves the assignment
(:mod:`lightning_icml26.ops.assignment`), then decodes: ``next_j = c_src(j)`` when ``j`` is assigned a
current token, copying is allowed at ``j`` and the episode is not done; otherwise ``next_j = y_j``.

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

from lightning_icml26.ops.assignment import SOLVERS, build_itc_cost, grid_coordinates, gumbel_noise, solve_assignment

__all__ = ["DECODERS", "ITCDecoder", "decode_next_frame"]


DECODERS = ("itc", "sample", "argmax")


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
        use_zero_neighbor_distance: the official option of that name: copies to the same cell or a direct
            neighbour (squared distance <= 1.1) pay no move cost ``alpha * d_ij``. Default off.

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
    use_zero_neighbor_distance: bool = False

    def __post_init__(self) -> None:
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}")
        if self.alpha < 0:
            raise ValueError(f"alpha must be non-negative, got {self.alpha}")
        if self.distance_cutoff < 0:
            raise ValueError(f"distance_cutoff must be non-negative, got {self.distance_cutoff}")
        if not self.temperature > 0:
            raise ValueError(f"temperature must be positive, got {self.temperature}")
        if not self.reg > 0:
            raise ValueError(f"reg must be positive, got {self.reg}")
        if not isinstance(self.use_zero_neighbor_distance, bool):
            raise TypeError(f"use_zero_neighbor_distance must be a bool, got {self.use_zero_neighbor_distance!r}")

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
            zero_neighbor_distance=self.use_zero_neighbor_distance,
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
