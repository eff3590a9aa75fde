"""Bad shapes and arguments end in clear errors naming the argument."""

from __future__ import annotations

import pytest
import torch

from lightning_icml26.ops.attention import (
    UPipeAttention,
    dense_attention,
    ring_attention,
    ulysses_attention,
    upipe_attention,
    upipe_qkv_attention,
    upipe_schedule,
)

QKV_BACKENDS = [dense_attention, ulysses_attention, ring_attention, upipe_qkv_attention]


@pytest.mark.parametrize("fn", QKV_BACKENDS)
def test_qkv_errors(fn) -> None:  # type: ignore[no-untyped-def]
    q, k = torch.randn(1, 4, 4, 8), torch.randn(1, 4, 2, 8)
    with pytest.raises(ValueError, match="KV heads"):
        fn(q, torch.randn(1, 4, 3, 8), torch.randn(1, 4, 3, 8))
    with pytest.raises(TypeError, match="dtype"):
        fn(q, k.double(), k.double())
    with pytest.raises(ValueError, match="seq_local"):
        fn(q, torch.randn(1, 5, 2, 8), torch.randn(1, 5, 2, 8))
    with pytest.raises(ValueError, match="shape"):
        fn(q[0], k, k)
    with pytest.raises(ValueError, match="layout"):
        fn(q, k, k, layout="zigzag")
    with pytest.raises(ValueError, match="even"):
        fn(torch.randn(1, 3, 4, 8), torch.randn(1, 3, 2, 8), torch.randn(1, 3, 2, 8), layout="headtail")
    with pytest.raises(ValueError, match="scale"):
        fn(q, k, k, scale=-1.0)


def test_stage_errors() -> None:
    with pytest.raises(ValueError, match="stage_heads=3 must divide num_heads=8"):
        upipe_schedule(8, 2, 3, 1)
    with pytest.raises(ValueError, match="divisible by the context-parallel size 4"):
        upipe_schedule(8, 2, 2, 4)
    with pytest.raises(ValueError, match="num_kv_heads=3 must divide"):
        upipe_schedule(8, 3, 2, 2)
    q, k = torch.randn(1, 4, 4, 8), torch.randn(1, 4, 2, 8)
    with pytest.raises(ValueError, match="stage_heads"):
        upipe_qkv_attention(q, k, k, stage_heads=3)


def test_fused_errors() -> None:
    x = torch.randn(1, 4, 16)
    w_q, w_kv = torch.randn(16, 16), torch.randn(8, 16)
    with pytest.raises(ValueError, match="num_kv_heads=3 must divide num_heads=4"):
        upipe_attention(x, w_q, w_kv, w_kv, num_heads=4, num_kv_heads=3)
    with pytest.raises(ValueError, match="w_k must have shape"):
        upipe_attention(x, w_q, torch.randn(4, 16), w_kv, num_heads=4, num_kv_heads=2)
    with pytest.raises(TypeError, match="dtype"):
        upipe_attention(x, w_q.double(), w_kv, w_kv, num_heads=4, num_kv_heads=2)
    with pytest.raises(ValueError, match="rotary"):
        upipe_attention(x, w_q, w_kv, w_kv, num_heads=4, num_kv_heads=2, rotary=(torch.ones(5, 4), torch.ones(5, 4)))
    with pytest.raises(ValueError, match="x must have shape"):
        upipe_attention(x[0], w_q, w_kv, w_kv, num_heads=4, num_kv_heads=2)


def test_module_errors_and_backend_switch() -> None:
    with pytest.raises(ValueError, match="backend"):
        UPipeAttention(16, 4, backend="flash")
    with pytest.raises(ValueError, match="must divide num_heads"):
        UPipeAttention(16, 4, 3)
    torch.manual_seed(0)
    layer = UPipeAttention(32, 4, 2)
    x = torch.randn(2, 8, 32)
    ref = layer(x)
    for backend in ("ulysses", "ring", "upipe"):
        torch.testing.assert_close(layer.set_context_parallel(None, backend=backend)(x), ref, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="x must have shape"):
        layer(torch.randn(2, 8, 16))
