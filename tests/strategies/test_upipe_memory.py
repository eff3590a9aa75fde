"""UPipe memory accounting: bytes on meta tensors equal the same run on CPU, closed forms, the search, the grid."""

from __future__ import annotations

import time

import pytest
import torch
from torch import nn

from lightning_icml26.distributed import ContextParallelGroup
from lightning_icml26.ops.attention.context_parallel import OffloadByteModel, forward_backward_memory
from lightning_icml26.ops.decoder import RowTiledRMSNorm, swiglu_width
from lightning_icml26.strategies._blocks import CheckpointedForward
from lightning_icml26.strategies.upipe_memory import (
    LayerShape,
    build_memory_model,
    longest_sequence,
    measure_memory,
    mlp_tiles,
    upipe_memory_figures,
)

SHAPE = LayerShape(hidden=64, heads=8, kv_heads=2, head_dim=16, layers=2)
CP = ContextParallelGroup()  # one process: the all-to-all is the identity, every other op runs for real


def _measure(scope: str, method: str, device: str, paper: bool, shape: LayerShape = SHAPE) -> dict[str, int]:
    module, offload = build_memory_model(scope, method, shape, CP, device=device, paper_config=paper)
    return measure_memory(module, shape, 256, 1, offload)


@pytest.mark.parametrize("scope", ["attn", "layer", "model"])
@pytest.mark.parametrize("method", ["ulysses", "upipe"])
@pytest.mark.parametrize("paper", [False, True])
def test_meta_accounting_equals_real_cpu_run(scope: str, method: str, paper: bool) -> None:
    on_meta = _measure(scope, method, "meta", paper)
    assert on_meta == _measure(scope, method, "cpu", paper)
    assert on_meta["peak"] > on_meta["fwd_transient"] > 0


def test_lean_norm_accounting_equals_real_cpu_run_and_drops_the_fp32_temporaries() -> None:
    lean = LayerShape(hidden=64, heads=8, kv_heads=2, head_dim=16, layers=2, lean_norm=True)
    on_meta = _measure("model", "upipe", "meta", True, lean)
    assert on_meta == _measure("model", "upipe", "cpu", True, lean)
    assert on_meta["peak"] < _measure("model", "upipe", "meta", True)["peak"]


def test_linear_closed_form() -> None:
    # y = x W^T on (4, 8) fp32: x, y, dy and dx are 128 bytes each and alive together; dW (256) is left out
    lin = nn.Linear(8, 8, bias=False)
    assert forward_backward_memory(lin, torch.randn(4, 8)) == {"fwd_transient": 0, "peak": 512, "const": 512}
    # SiLU saves its input: the forward keeps the linear's output (128 bytes) beside its own output
    assert forward_backward_memory(nn.Sequential(lin, nn.SiLU()), torch.randn(4, 8))["fwd_transient"] == 128


def test_paper_config_runs_the_strategys_checkpointing_offloads_the_inputs_and_tiles_the_mlp() -> None:
    model, offload = build_memory_model("model", "upipe", SHAPE, CP, device="meta")
    assert isinstance(offload, OffloadByteModel)
    assert all(isinstance(layer.__dict__["forward"], CheckpointedForward) for layer in model.layers)
    assert all(layer.mlp.__dict__["forward"].num_tiles == mlp_tiles(SHAPE, 1) for layer in model.layers)
    figures = measure_memory(model, SHAPE, 256, 1, offload)
    assert figures["host_offloaded"] == SHAPE.layers * 256 * 64 * 2  # each layer's (1, 256, 64) bf16 input
    plain, none = build_memory_model("model", "upipe", SHAPE, CP, device="meta", paper_config=False)
    assert none is None
    assert figures["peak"] < measure_memory(plain, SHAPE, 256, 1)["peak"]


def test_mlp_tiles_keep_a_tile_within_a_stage() -> None:
    shape = LayerShape()
    for world in (1, 2, 4, 8):
        tiles, inter = mlp_tiles(shape, world), swiglu_width(shape.hidden)
        assert inter <= tiles * world * world * shape.head_dim  # tile of t tokens: t x inter <= S U d = t P^2 d
        assert tiles == 1 or inter > (tiles - 1) * world * world * shape.head_dim  # the fewest such tiles


def test_row_tiled_rms_norm_equals_rms_norm_fp64() -> None:
    torch.manual_seed(0)
    lean, ref = RowTiledRMSNorm(16, rows=5).double(), nn.RMSNorm(16).double()
    with torch.no_grad():
        lean.weight.uniform_()
        ref.weight.copy_(lean.weight)
    x, dy = torch.randn(2, 13, 16, dtype=torch.float64, requires_grad=True), torch.randn(2, 13, 16, dtype=torch.float64)
    lean(x).backward(dy)
    dx, dw = x.grad.clone(), lean.weight.grad
    x.grad = None
    y = ref(x)
    y.backward(dy)
    torch.testing.assert_close(lean(x.detach()), y.detach(), rtol=0, atol=1e-12)
    torch.testing.assert_close(dx, x.grad, rtol=0, atol=1e-12)
    torch.testing.assert_close(dw, ref.weight.grad, rtol=0, atol=1e-12)


@pytest.mark.parametrize(("limit", "base", "quantum"), [(1000, 64, 8), (77, 64, 8), (5, 64, 8), (10_000, 16, 16)])
def test_longest_sequence_within_one_percent_of_a_linear_scan(limit: int, base: int, quantum: int) -> None:
    found = longest_sequence(lambda s: s <= limit, base, quantum)
    best = max((s for s in range(quantum, 4 * limit + quantum, quantum) if s <= limit), default=0)
    assert found <= best
    assert best - found <= max(quantum, found // 100)


def test_grid_upipe_keeps_less_and_reaches_further_than_ulysses() -> None:
    figs = upipe_memory_figures(SHAPE, ["attn", "model"], [2], methods=("ulysses", "upipe", "sdpa"), seq=256)
    for scope in ("attn", "model"):
        rows = figs[scope][2]
        assert rows["upipe"]["peak"] < rows["ulysses"]["peak"]
        assert rows["upipe"]["max_seq"] > rows["ulysses"]["max_seq"] >= 256
        assert rows["sdpa"]["max_seq"] > 0
    assert figs["model"][2]["upipe"]["mlp_tiles"] == mlp_tiles(SHAPE, 2)
    assert not torch.distributed.is_initialized()


def test_grid_past_its_deadline_keeps_what_was_measured() -> None:
    figs = upipe_memory_figures(SHAPE, ["attn"], [2], seq=256, deadline=time.monotonic() - 1, keep_partial=True)
    assert figs["stopped"].startswith("TimeoutError")
    with pytest.raises(TimeoutError):
        upipe_memory_figures(SHAPE, ["attn"], [2], seq=256, deadline=time.monotonic() - 1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scopes": ["mlp"]}, "scopes="),
        ({"methods": ("upipe",)}, "must include 'ulysses'"),
        ({"worlds": [3]}, "divide heads=8"),
        ({"seq": 255}, "seq=255"),
    ],
)
def test_bad_grid_arguments_are_refused(kwargs: dict, message: str) -> None:
    args = {"scopes": ["attn"], "worlds": [2]} | kwargs
    with pytest.raises(ValueError, match=message):
        upipe_memory_figures(SHAPE, **args)


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="heads=6 must be divisible by kv_heads=4"):
        LayerShape(heads=6, kv_heads=4)
    with pytest.raises(ValueError, match="dtype='fp8'"):
        LayerShape(dtype="fp8")
    with pytest.raises(TypeError, match="module must be"):
        forward_backward_memory("layer", torch.ones(1))  # type: ignore[arg-type]
