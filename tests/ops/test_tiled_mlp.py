"""The sequence-tiled MLP equals the untiled one (fp64) and keeps only its input for backward."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from lightning_icml26.ops.attention import SavedTensorBytes
from lightning_icml26.ops.tiled_mlp import TiledForward, TiledMLP, tile_bounds, tiled_mlp


class SwiGLU(nn.Module):
    def __init__(self, hidden: int, inter: int) -> None:
        super().__init__()
        self.gate = nn.Linear(hidden, inter, bias=False)
        self.up = nn.Linear(hidden, inter, bias=True)
        self.down = nn.Linear(inter, hidden, bias=False)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.down(nn.functional.silu(self.gate(h)) * self.up(h))


class Shared(nn.Module):
    """The same linear used twice: both uses must reach its gradient."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.a = nn.Linear(hidden, hidden)
        self.b = self.a

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.b(torch.tanh(self.a(h)))


def _grads(mlp: nn.Module, fn, x: torch.Tensor, dy: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    x = x.detach().requires_grad_()
    mlp.zero_grad(set_to_none=True)
    y = fn(x)
    y.backward(dy)
    assert x.grad is not None
    return y.detach(), [x.grad, *(p.grad for p in mlp.parameters())]


@pytest.mark.parametrize(
    ("length", "num_tiles", "seq_dim"), [(13, 4, 1), (7, 7, 1), (5, 9, 1), (11, 3, 0), (10, 1, -2)]
)
@pytest.mark.parametrize("make", [lambda: SwiGLU(6, 20), lambda: Shared(6)])
def test_outputs_and_all_gradients_equal_the_untiled_mlp(make, length: int, num_tiles: int, seq_dim: int) -> None:
    torch.manual_seed(0)
    mlp = make().double()
    shape = [3, 3, 6]
    shape[seq_dim % 3 if seq_dim >= 0 else seq_dim + 3] = length
    x, dy = torch.randn(shape, dtype=torch.float64), torch.randn(shape, dtype=torch.float64)
    y_ref, g_ref = _grads(mlp, mlp, x, dy)
    y, g = _grads(mlp, lambda t: tiled_mlp(mlp, t, num_tiles, seq_dim), x, dy)
    torch.testing.assert_close(y, y_ref, rtol=0, atol=1e-10)
    assert len(g) == len(g_ref) == 1 + len(list(mlp.parameters()))
    for got, ref in zip(g, g_ref, strict=True):
        assert got is not None
        torch.testing.assert_close(got, ref, rtol=0, atol=1e-10)


def test_gradients_reach_autograd_grad_and_a_frozen_input() -> None:
    torch.manual_seed(1)
    mlp = SwiGLU(4, 8).double()
    x = torch.randn(2, 9, 4, dtype=torch.float64)  # no grad wanted for the input: the weights still get theirs
    params = list(mlp.parameters())
    ref = torch.autograd.grad(mlp(x).square().sum(), params)
    got = torch.autograd.grad(tiled_mlp(mlp, x, 4).square().sum(), params)
    for a, b in zip(got, ref, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-10)


def test_only_the_input_is_saved_for_backward() -> None:
    torch.manual_seed(2)
    batch, length, hidden, inter = 2, 32, 8, 40
    mlp = SwiGLU(hidden, inter).double()
    x = torch.randn(batch, length, hidden, dtype=torch.float64, requires_grad=True)
    weights = list(mlp.parameters())
    with SavedTensorBytes(exclude=weights) as tiled:
        tiled_mlp(mlp, x, num_tiles=4)
    assert (tiled.count, tiled.bytes) == (1, x.numel() * 8)
    with SavedTensorBytes(exclude=weights) as plain:
        mlp(x)
    # Untiled: the input (saved by gate and up), gate(h), silu(gate(h)), up(h) and their product, each
    # (batch, length, inter): closed form of the SwiGLU's saved activations.
    assert plain.bytes == (x.numel() + 4 * batch * length * inter) * 8


def test_tiled_forward_keeps_class_and_state_dict_keys() -> None:
    torch.manual_seed(3)
    mlp = SwiGLU(4, 8).double()
    keys, cls = list(mlp.state_dict()), type(mlp)
    x, dy = torch.randn(1, 7, 4, dtype=torch.float64), torch.randn(1, 7, 4, dtype=torch.float64)
    y_ref, g_ref = _grads(mlp, mlp, x, dy)
    mlp.forward = TiledForward(mlp, num_tiles=3)  # type: ignore[method-assign]
    y, g = _grads(mlp, mlp, x, dy)
    assert list(mlp.state_dict()) == keys
    assert type(mlp) is cls
    torch.testing.assert_close(y, y_ref, rtol=0, atol=1e-10)
    for a, b in zip(g, g_ref, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-10)


def test_no_grad_runs_the_tiles_plainly() -> None:
    mlp = SwiGLU(4, 8)
    x = torch.randn(2, 5, 4)
    with torch.no_grad():
        out = TiledMLP(mlp, num_tiles=2)(x)
    assert out.grad_fn is None
    torch.testing.assert_close(out, mlp(x).detach())


def test_tile_bounds_cover_the_sequence() -> None:
    for length in range(0, 12):
        for tiles in range(1, 6):
            bounds = tile_bounds(length, tiles)
            assert sum(n for _, n in bounds) == length
            assert all(s == sum(n for _, n in bounds[:i]) for i, (s, _) in enumerate(bounds))
            assert max(n for _, n in bounds) - min(n for _, n in bounds) <= 1


@pytest.mark.parametrize("num_tiles", [0, -1, 2.0, True])
def test_bad_num_tiles(num_tiles) -> None:
    with pytest.raises(ValueError, match="num_tiles="):
        TiledMLP(nn.Linear(2, 2), num_tiles=num_tiles)
    with pytest.raises(ValueError, match="num_tiles="):
        tiled_mlp(nn.Linear(2, 2), torch.randn(1, 3, 2), num_tiles=num_tiles)


@pytest.mark.parametrize("seq_dim", [3, -4])
def test_seq_dim_out_of_range(seq_dim: int) -> None:
    with pytest.raises(ValueError, match=rf"seq_dim={seq_dim} is out of range .* allowed: -3 to 2"):
        TiledMLP(nn.Linear(2, 2), num_tiles=2, seq_dim=seq_dim)(torch.randn(1, 3, 2))


def test_not_a_module() -> None:
    with pytest.raises(TypeError, match="mlp must be an nn.Module"):
        TiledMLP(lambda t: t, num_tiles=2)  # type: ignore[arg-type]
