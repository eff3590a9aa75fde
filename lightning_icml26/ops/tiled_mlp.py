"""Sequence-tiled MLP: run a token-wise MLP tile by tile along the sequence, keeping only its input for backward.

A transformer's MLP acts on every token independently, so its output over a sequence is the concatenation of its
outputs over consecutive tiles of the sequence. :func:`tiled_mlp` uses that (as ALST's ``TiledMLP`` does) to bound
the MLP's activation memory by one tile: the forward runs the wrapped module on each tile without building a graph
and keeps only the input; the backward runs the module again on one tile at a time, with a graph, and propagates
that tile's slice of the upstream gradient, writing the input gradient into one buffer and adding the parameter
gradients into one accumulator per parameter. The intermediates (e.g. a SwiGLU MLP's gate, up and product,
``3.5 x`` hidden wide) exist for one tile only, in forward and in backward.

The parameter gradients are returned through autograd (``torch.autograd.grad`` sees them, hooks and FSDP2 work as
for the untiled module); they are accumulated in the parameters' dtype. The module must act on each position of
``seq_dim`` independently (an MLP, a norm); a module that mixes positions (attention, a convolution along the
sequence) gives wrong results. Buffers are read, not updated per tile: modules that update running statistics in
forward (batch norm) are not supported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import Tensor, nn

__all__ = ["TiledForward", "TiledMLP", "tile_bounds", "tiled_mlp"]


def tile_bounds(length: int, num_tiles: int) -> list[tuple[int, int]]:
    """``(start, size)`` of ``min(num_tiles, length)`` consecutive tiles covering ``length`` positions.

    The first ``length % tiles`` tiles hold one position more than the others (ragged when ``num_tiles`` does not
    divide ``length``).

    Raises:
        ValueError: if ``num_tiles < 1`` or ``length < 0``.

    Example:
        >>> tile_bounds(10, 3)
        [(0, 4), (4, 3), (7, 3)]
        >>> tile_bounds(2, 4)
        [(0, 1), (1, 1)]
    """
    if isinstance(num_tiles, bool) or not isinstance(num_tiles, int) or num_tiles < 1:
        raise ValueError(f"num_tiles={num_tiles!r} must be an integer >= 1")
    if length < 0:
        raise ValueError(f"length={length} must be >= 0")
    tiles = max(1, min(num_tiles, length))
    base, extra = divmod(length, tiles)
    bounds, start = [], 0
    for i in range(tiles):
        size = base + (1 if i < extra else 0)
        bounds.append((start, size))
        start += size
    return bounds


def _check_seq_dim(x: Tensor, seq_dim: int) -> int:
    if not -x.dim() <= seq_dim < x.dim():
        raise ValueError(
            f"seq_dim={seq_dim} is out of range for an input of {x.dim()} dimensions (shape {tuple(x.shape)});"
            f" allowed: {-x.dim()} to {x.dim() - 1}"
        )
    return seq_dim % x.dim()


class _TiledMLPFunction(torch.autograd.Function):
    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        mlp: nn.Module,
        fn: Callable[[Tensor], Tensor],
        num_tiles: int,
        seq_dim: int,
        x: Tensor,
        *params: Tensor,
    ) -> Tensor:
        ctx.mlp, ctx.fn, ctx.num_tiles, ctx.seq_dim = mlp, fn, num_tiles, seq_dim
        ctx.save_for_backward(x)
        with torch.no_grad():
            outs = [fn(x.narrow(seq_dim, start, size)) for start, size in tile_bounds(x.shape[seq_dim], num_tiles)]
        return torch.cat(outs, dim=seq_dim) if len(outs) > 1 else outs[0]

    @staticmethod
    def backward(ctx: Any, grad_out: Tensor) -> tuple[Tensor | None, ...]:  # type: ignore[override]
        (x,) = ctx.saved_tensors
        mlp, fn, seq_dim = ctx.mlp, ctx.fn, ctx.seq_dim
        params = _unique_parameters(mlp)
        # Leaf aliases of the parameters whose .grad is the accumulator: the engine adds each tile's gradient
        # into it in place, so only one tile's parameter gradients exist beside the sum.
        leaves = {id(p): p.detach().requires_grad_(p.requires_grad) for p in params}
        wants_x = bool(ctx.needs_input_grad[4])
        dx = torch.empty_like(x) if wants_x else None
        with _swapped(mlp, leaves):
            for start, size in tile_bounds(x.shape[seq_dim], ctx.num_tiles):
                x_tile = x.narrow(seq_dim, start, size).detach().requires_grad_(wants_x)
                inputs = [leaf for leaf in leaves.values() if leaf.requires_grad] + ([x_tile] if wants_x else [])
                if not inputs:
                    break
                with torch.enable_grad():
                    y = fn(x_tile)
                torch.autograd.backward(y, grad_out.narrow(seq_dim, start, size), inputs=inputs)
                if dx is not None and x_tile.grad is not None:
                    dx.narrow(seq_dim, start, size).copy_(x_tile.grad)
                del y, x_tile
        grads = tuple(leaves[id(p)].grad if p.requires_grad else None for p in params)
        return (None, None, None, None, dx, *grads)


def _unique_parameters(module: nn.Module) -> list[Tensor]:
    return list(dict.fromkeys(module.parameters()))


@contextmanager
def _swapped(module: nn.Module, replacement: dict[int, Tensor]) -> Iterator[None]:
    """Register ``replacement[id(p)]`` in place of every parameter ``p`` of ``module`` (shared ones included)."""
    slots = [
        (sub, key, p)
        for sub in module.modules()
        for key, p in sub._parameters.items()
        if p is not None and id(p) in replacement
    ]
    try:
        for sub, key, p in slots:
            sub._parameters[key] = replacement[id(p)]  # type: ignore[assignment]
        yield
    finally:
        for sub, key, p in slots:
            sub._parameters[key] = p  # type: ignore[assignment]


def tiled_mlp(
    mlp: nn.Module, x: Tensor, num_tiles: int, seq_dim: int = 1, forward: Callable[[Tensor], Tensor] | None = None
) -> Tensor:
    """``mlp(x)`` computed over ``num_tiles`` tiles of ``x`` along ``seq_dim``, keeping only ``x`` for backward.

    Without gradients (``torch.no_grad``, or neither ``x`` nor a parameter requiring one) the tiles run plainly.

    Args:
        mlp: a module acting on each position of ``seq_dim`` independently (the MLP of a transformer block);
            its parameters receive the gradients.
        x: its input.
        num_tiles: number of tiles (at most the sequence length is used; tiles differ by at most one position).
        seq_dim: the sequence dimension of ``x``.
        forward: the function run on each tile (default: ``mlp`` itself); it must compute with ``mlp``'s
            registered parameters, e.g. ``mlp``'s own ``forward`` when ``mlp.forward`` has been replaced.

    Raises:
        ValueError: if ``num_tiles < 1`` or ``seq_dim`` is out of range for ``x``.

    Example:
        >>> torch.manual_seed(0) and None
        >>> mlp = nn.Sequential(nn.Linear(4, 16), nn.GELU(), nn.Linear(16, 4))
        >>> x = torch.randn(2, 10, 4, requires_grad=True)
        >>> torch.allclose(tiled_mlp(mlp, x, num_tiles=3), mlp(x), atol=1e-6)
        True
    """
    tile_bounds(0, num_tiles)  # validates num_tiles
    dim = _check_seq_dim(x, seq_dim)
    fn = mlp if forward is None else forward
    params = _unique_parameters(mlp)
    if not (torch.is_grad_enabled() and (x.requires_grad or any(p.requires_grad for p in params))):
        outs = [fn(x.narrow(dim, s, n)) for s, n in tile_bounds(x.shape[dim], num_tiles)]
        return torch.cat(outs, dim=dim) if len(outs) > 1 else outs[0]
    out: Tensor = _TiledMLPFunction.apply(mlp, fn, num_tiles, dim, x, *params)
    return out


class TiledMLP(nn.Module):
    """Wrap a token-wise MLP so that it runs tile by tile along the sequence (see :func:`tiled_mlp`).

    The wrapped module is ``self.mlp`` (its state-dict keys gain the prefix ``mlp.``); to tile a block's MLP
    while keeping its class and keys, give it a :class:`TiledForward` instead.

    Args:
        mlp: a module acting on each position of ``seq_dim`` independently, called with one tensor.
        num_tiles: number of sequence tiles.
        seq_dim: the sequence dimension of the input.

    Raises:
        ValueError: if ``num_tiles < 1``; at call time if ``seq_dim`` is out of range for the input.
        TypeError: if ``mlp`` is not an ``nn.Module``.

    Example:
        >>> torch.manual_seed(0) and None
        >>> mlp = nn.Sequential(nn.Linear(4, 16), nn.SiLU(), nn.Linear(16, 4))
        >>> tiled = TiledMLP(mlp, num_tiles=4)
        >>> x = torch.randn(1, 9, 4)
        >>> torch.allclose(tiled(x), mlp(x), atol=1e-6)
        True
        >>> TiledMLP(mlp, num_tiles=0)
        Traceback (most recent call last):
        ...
        ValueError: num_tiles=0 must be an integer >= 1
    """

    def __init__(self, mlp: nn.Module, num_tiles: int, seq_dim: int = 1) -> None:
        super().__init__()
        if not isinstance(mlp, nn.Module):
            raise TypeError(f"mlp must be an nn.Module, got {type(mlp).__name__}")
        tile_bounds(0, num_tiles)
        if isinstance(seq_dim, bool) or not isinstance(seq_dim, int):
            raise TypeError(f"seq_dim={seq_dim!r} must be an integer")
        self.mlp = mlp
        self.num_tiles = num_tiles
        self.seq_dim = seq_dim

    def forward(self, x: Tensor) -> Tensor:
        """``self.mlp(x)``, tiled along ``seq_dim``."""
        return tiled_mlp(self.mlp, x, self.num_tiles, self.seq_dim)

    def extra_repr(self) -> str:
        """Tiles and sequence dimension."""
        return f"num_tiles={self.num_tiles}, seq_dim={self.seq_dim}"


class TiledForward:
    """Instance-level ``forward`` that runs a module's own forward tile by tile (see :func:`tiled_mlp`).

    ``module.forward = TiledForward(module, num_tiles)`` tiles the module in place: its class, parameters and
    state-dict keys are unchanged. ``inner`` (the forward before wrapping) is kept so that a module is not
    wrapped twice.

    Args:
        module: the token-wise module (its forward takes one tensor).
        num_tiles: number of sequence tiles.
        seq_dim: the sequence dimension of the input.

    Raises:
        ValueError: if ``num_tiles < 1``.

    Example:
        >>> torch.manual_seed(0) and None
        >>> mlp = nn.Sequential(nn.Linear(4, 8), nn.SiLU(), nn.Linear(8, 4))
        >>> keys = list(mlp.state_dict())
        >>> x = torch.randn(1, 6, 4)
        >>> expected = mlp(x)
        >>> mlp.forward = TiledForward(mlp, num_tiles=3)
        >>> torch.allclose(mlp(x), expected, atol=1e-6), list(mlp.state_dict()) == keys
        (True, True)
    """

    def __init__(self, module: nn.Module, num_tiles: int, seq_dim: int = 1) -> None:
        tile_bounds(0, num_tiles)
        self.inner = module.forward
        self.module = module
        self.num_tiles = num_tiles
        self.seq_dim = seq_dim

    def __call__(self, x: Tensor) -> Tensor:
        """The module's output on ``x``, tiled along ``seq_dim``."""
        return tiled_mlp(self.module, x, self.num_tiles, self.seq_dim, forward=self.inner)
