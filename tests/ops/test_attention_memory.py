"""The memory trackers on synthetic allocation patterns with known sizes, and the UPipe saved-bytes claim."""

from __future__ import annotations

import pytest
import torch

from lightning_icml26.ops.attention import LiveBytesTracker, SavedTensorBytes, UPipeAttention, upipe_attention


def test_live_tracker_counts_allocations_frees_and_views() -> None:
    with LiveBytesTracker() as mem:
        a = torch.empty(1000, dtype=torch.float32)  # 4000 B
        b = torch.empty(500, dtype=torch.float64)  # 4000 B
        assert mem.current == 8000
        v = a.view(10, 100)  # view: no new storage
        t = b.t() if b.ndim == 2 else b[:10]  # slice: no new storage
        assert mem.current == 8000
        del a
        assert mem.current == 8000  # the view keeps the storage alive
        del v
        assert mem.current == 4000
        c = torch.empty(250, dtype=torch.float32)  # 1000 B
        del b, t, c
        assert mem.current == 0
    assert mem.peak == 8000


def test_live_tracker_ignores_preexisting_and_inplace() -> None:
    base = torch.zeros(1024)
    with LiveBytesTracker() as mem:
        base.add_(1.0)  # in place on a storage that existed before
        view = base[:10]
        assert mem.current == 0
        y = base * 2  # 4096 B
        assert mem.current == 4096
        del y, view
    assert mem.peak == 4096
    assert mem.current == 0


def test_live_tracker_sees_backward_allocations() -> None:
    w = torch.randn(64, 64, requires_grad=True)
    x = torch.randn(32, 64)
    with LiveBytesTracker() as mem:
        y = (x @ w).sum()
        y.backward()
        del y
        # w.grad (64*64*4 B) survives; everything else was freed
        assert mem.current == 64 * 64 * 4
    assert mem.peak >= 64 * 64 * 4


def test_saved_tensor_bytes_deduplicates_storages() -> None:
    x = torch.randn(16, 8, requires_grad=True)
    with SavedTensorBytes() as saved:
        y = x * x  # saves x (twice, one storage)
        z = y.exp()  # saves its output (a new storage)
    assert saved.count == 2
    assert saved.bytes == 2 * 16 * 8 * 4
    with SavedTensorBytes(exclude=[x]) as saved2:
        _ = x * x
    assert saved2.bytes == 0
    del z


def test_upipe_saves_less_than_ulysses_single_process() -> None:
    """UPipe saves x, weights, out and per-stage LSE only; Ulysses also saves projected q/k/v (+ RoPE inputs)."""
    torch.manual_seed(0)
    e, s = 64, 32
    layers = {b: UPipeAttention(e, 8, 2, backend=b) for b in ("ulysses", "upipe")}
    layers["upipe"].load_state_dict(layers["ulysses"].state_dict())
    x = torch.randn(1, s, e, requires_grad=True)
    figures = {}
    for name, layer in layers.items():
        with SavedTensorBytes(exclude=[x, *layer.parameters()]) as saved:
            layer(x)
        figures[name] = saved.bytes
    unit = s * e * 4  # one (seq, hidden) fp32 tensor
    # UPipe: out (1 unit, saved by the op and by o_proj: one storage) + 8 LSE rows of s floats + rotary tables
    assert figures["upipe"] <= unit + 8 * s * 4 + 2 * s * 8 * 4
    assert figures["ulysses"] >= 2 * unit


def _backward_excess(dtype: torch.dtype, stage_heads: int) -> tuple[int, int]:
    """Peak bytes of the fused operator's backward above the gradients it returns, and those gradients' bytes."""
    gen = torch.Generator().manual_seed(0)
    b, s, e, h, g, d = 1, 128, 128, 8, 2, 16
    x = torch.randn(b, s, e, generator=gen).to(dtype).requires_grad_(True)
    weights = [(torch.randn(n * d, e, generator=gen) / e**0.5).to(dtype).requires_grad_(True) for n in (h, g, g)]
    out = upipe_attention(x, *weights, num_heads=h, num_kv_heads=g, stage_heads=stage_heads)
    dout = torch.randn(out.shape, generator=gen).to(dtype)
    with LiveBytesTracker() as mem:
        out.backward(dout)
    grads = sum(t.grad.numel() * t.grad.element_size() for t in (x, *weights))  # type: ignore[union-attr]
    return mem.peak - grads, s * d * 4  # the second value: one KV head's fp32 (seq, head_dim) accumulator


@pytest.mark.parametrize("stage_heads", [1, 2])
def test_fused_backward_works_in_the_input_dtype(stage_heads: int) -> None:
    """bf16 backward transients are half of fp32's: only the shared-KV dk/dv sums stay in fp32.

    With an fp32 dx accumulator (and fp32 copies of each stage's gradient and weight rows) the bf16 excess
    equals the fp32 one; in the input dtype it is half, plus the fp32 dk and dv of one KV group.
    """
    excess32, kv_acc = _backward_excess(torch.float32, stage_heads)
    excess16, _ = _backward_excess(torch.bfloat16, stage_heads)
    assert excess32 > 0
    assert excess16 <= excess32 // 2 + 2 * kv_acc
