"""The UPipe memory benchmark accounts bytes on meta tensors: the same bytes as running the code on CPU."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from benchmarks.upipe_memory import OffloadModel, RowTiledRMSNorm, _build, measure, mlp_tiles
from lightning_icml26.distributed import ContextParallelGroup

CFG = {"batch": 1, "hidden": 64, "heads": 8, "kv_heads": 2, "head_dim": 16, "dtype": "bf16", "layers": 2}


@pytest.mark.parametrize("scope", ["attn", "layer", "model"])
@pytest.mark.parametrize("method", ["ulysses", "upipe"])
@pytest.mark.parametrize("paper", [False, True])
def test_meta_accounting_equals_real_cpu_run(scope: str, method: str, paper: bool) -> None:
    cp = ContextParallelGroup()  # one process: the all-to-all is the identity, every other op runs for real
    on_meta = measure(_build(scope, method, CFG, cp, device="meta", paper=paper), CFG, 256, 1)
    on_cpu = measure(_build(scope, method, CFG, cp, device="cpu", paper=paper), CFG, 256, 1)
    assert on_meta == on_cpu
    assert on_meta["peak"] > on_meta["fwd_transient"] > 0


@pytest.mark.parametrize("method", ["ulysses", "upipe"])
def test_lean_norm_accounting_equals_real_cpu_run(method: str) -> None:
    cfg = {**CFG, "lean_norm": True}
    cp = ContextParallelGroup()
    on_meta = measure(_build("model", method, cfg, cp, device="meta", paper=True), cfg, 256, 1)
    on_cpu = measure(_build("model", method, cfg, cp, device="cpu", paper=True), cfg, 256, 1)
    assert on_meta == on_cpu
    plain = measure(_build("model", method, CFG, cp, device="meta", paper=True), CFG, 256, 1)
    assert on_meta["peak"] < plain["peak"]  # the composite RMSNorm's fp32 temporaries are gone


def test_paper_config_offloads_the_checkpointed_inputs_and_tiles_the_mlp() -> None:
    cp = ContextParallelGroup()
    model = _build("model", "upipe", CFG, cp, device="meta", paper=True, world=1)
    assert isinstance(model.offload, OffloadModel)
    figures = measure(model, CFG, 256, 1)
    # each of the 2 checkpointed layers keeps its input, (1, 256, 64) bf16, on the host
    assert figures["host_offloaded"] == CFG["layers"] * 256 * 64 * 2
    plain = measure(_build("model", "upipe", CFG, cp, device="meta", paper=False), CFG, 256, 1)
    assert "host_offloaded" not in plain
    assert figures["peak"] < plain["peak"]


def test_mlp_tiles_keep_a_tile_within_a_stage() -> None:
    for world in (1, 2, 4, 8):
        tiles = mlp_tiles({"hidden": 4096, "head_dim": 128}, world)
        inter, s_local = 14336, 4096 * tiles  # any local length that the tiles divide
        assert s_local // tiles * inter <= s_local * world * world * 128  # tile <= S x U x head_dim, U = P
        assert (s_local // (tiles - 1)) * inter > s_local * world * world * 128 if tiles > 1 else True


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


def test_upipe_keeps_less_than_ulysses_in_the_attention_scope() -> None:
    cp = ContextParallelGroup()
    up = measure(_build("attn", "upipe", CFG, cp), CFG, 512, 1)
    uly = measure(_build("attn", "ulysses", CFG, cp), CFG, 512, 1)
    assert up["const"] == uly["const"]
    assert up["fwd_transient"] < uly["fwd_transient"]
    assert up["peak"] < uly["peak"]
