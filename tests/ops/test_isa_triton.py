"""ISA's Triton Taylor path against the torch reference under TRITON_INTERPRET=1 (outputs and q, k, v grads)."""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before anything imports triton: kernels then run on CPU tensors

import pytest
import torch

pytest.importorskip("triton")

from lightning_icml26.ops.attention import isa_attention

SEQ, TARGET = 90, 37  # ragged last blocks in both parts with blocks of 16
KW = {"block_size": 16, "context_keep": 0.5, "full_fraction": 0.25, "exact_block_fraction": 0.3}


def _inputs(d: int, dtype: torch.dtype, seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(2, SEQ, 2, d, generator=g).to(dtype).requires_grad_() for _ in range(3)]


def _run(qkv: list[torch.Tensor], backend: str, **extra: object) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
    q, k, v = qkv
    out = isa_attention(q, k, v, TARGET, backend=backend, **(KW | extra))  # type: ignore[call-overload]
    weight = torch.linspace(-1, 1, out.shape[-1])
    return out, torch.autograd.grad((out.float() * weight).sum(), qkv)


@pytest.mark.parametrize("head_dim", [16, 24])
def test_fp32_matches_torch_reference(head_dim: int) -> None:
    qkv = _inputs(head_dim, torch.float32, seed=head_dim)
    out_t, grads_t = _run(qkv, "triton")
    out_r, grads_r = _run(qkv, "torch")
    torch.testing.assert_close(out_t, out_r, atol=1e-5, rtol=0)
    for name, a, b in zip("qkv", grads_t, grads_r, strict=True):
        assert b.abs().max() > 1e-3, name  # the gradient is not trivially zero
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0, msg=f"grad {name}")


def test_taylor_only_routing_and_gate() -> None:
    qkv = _inputs(16, torch.float32, seed=3)
    gate = torch.randn(2, SEQ, 2)
    out_t, grads_t = _run(qkv, "triton", routing="taylor", context_keep=1.0, gate_logits=gate)
    out_r, grads_r = _run(qkv, "torch", routing="taylor", context_keep=1.0, gate_logits=gate)
    torch.testing.assert_close(out_t, out_r, atol=1e-5, rtol=0)
    for a, b in zip(grads_t, grads_r, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)


def test_bf16_inputs_match_the_torch_reference_in_bf16() -> None:
    qkv = _inputs(32, torch.bfloat16, seed=4)
    out_t, grads_t = _run(qkv, "triton", routing="taylor", context_keep=1.0)
    out_r, grads_r = _run(qkv, "torch", routing="taylor", context_keep=1.0)  # same bf16 block selections
    assert out_t.dtype == torch.bfloat16
    # the kernel accumulates in fp32, the reference in bf16 (~4e-3 relative); bf16 tl.dot garbage would be >> 1
    torch.testing.assert_close(out_t.float(), out_r.float(), atol=2e-2, rtol=0)
    for a, b in zip(grads_t, grads_r, strict=True):
        torch.testing.assert_close(a.float(), b.float(), atol=4e-2, rtol=0)


def test_triton_backend_needs_a_power_of_two_block() -> None:
    q, k, v = _inputs(16, torch.float32, 0)
    with pytest.raises(ValueError, match="block_size"):
        isa_attention(q, k, v, TARGET, block_size=12, backend="triton")
