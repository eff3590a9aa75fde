"""Kernel dispatch: one selector by device and dtype; CUDA kernels checked on meta tensors here, on a GPU there.

The CUDA tests compare SDPA's flash / memory-efficient kernels against the CPU flash kernel in fp64 (output,
log-sum-exp and the gradients given the output and log-sum-exp) and skip without a GPU.
"""

from __future__ import annotations

import pytest
import torch

from lightning_icml26.ops.attention import upipe_attention
from lightning_icml26.ops.attention.context_parallel import _kernels as kernels

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16, torch.float16])
def test_cpu_always_takes_the_cpu_flash_kernel(dtype: torch.dtype) -> None:
    assert kernels.select_kernel("cpu", dtype, 64) == "cpu_flash"
    assert kernels.select_kernel(torch.device("cpu"), dtype, 96) == "cpu_flash"


def test_cuda_choice_by_dtype_and_head_size() -> None:
    assert kernels.select_kernel("cuda", torch.bfloat16, 128) == "cuda_flash"
    assert kernels.select_kernel("cuda:1", torch.float16, 256) == "cuda_flash"
    assert kernels.select_kernel("cuda", torch.bfloat16, 320) == "cuda_efficient"  # beyond flash's head size
    assert kernels.select_kernel("cuda", torch.bfloat16, 100) == "cuda_efficient"  # not a multiple of 8
    assert kernels.select_kernel("cuda", torch.float32, 128) == "cuda_efficient"


def test_unsupported_device_and_dtype_raise_clearly() -> None:
    with pytest.raises(ValueError, match=r"device='mps'; supported devices: 'cpu', 'cuda', 'meta'"):
        kernels.select_kernel("mps", torch.float32, 64)
    with pytest.raises(TypeError, match=r"attention on cuda supports dtypes .* got dtype=torch.float64"):
        kernels.select_kernel("cuda", torch.float64, 64)
    with pytest.raises(TypeError, match=r"attention on cpu supports dtypes .* got dtype=torch.int32"):
        kernels.select_kernel("cpu", torch.int32, 64)


def test_meta_tensors_take_the_cpu_kernel_shapes() -> None:
    """Meta tensors (memory accounting at full size without computing) run the CPU kernel's shape functions."""
    assert kernels.select_kernel("meta", torch.bfloat16, 128) == "cpu_flash"
    q, k = torch.empty(1, 8, 4096, 128, device="meta"), torch.empty(1, 2, 4096, 128, device="meta")
    out, lse = kernels.attention_forward(q, k, k, True, 0.1)
    assert tuple(out.shape) == (1, 8, 4096, 128)
    assert tuple(lse.shape) == (1, 8, 4096)


@pytest.mark.parametrize("kernel", ["cuda_flash", "cuda_efficient"])
def test_cuda_kernels_argument_layout_on_meta_tensors(kernel: str) -> None:
    """The aten calls of the CUDA kernels type-check (meta kernels) and fold GQA gradients onto G heads."""
    b, h, g, s, d = 2, 8, 2, 40, 64  # 40 rows: the efficient kernel pads its log-sum-exp to 64
    dtype = torch.bfloat16 if kernel == "cuda_flash" else torch.float32
    q = torch.empty(b, h, s, d, device="meta", dtype=dtype)
    k = torch.empty(b, g, s, d, device="meta", dtype=dtype)
    out, lse = kernels._FORWARD[kernel](q, k, k, True, 0.125)
    assert tuple(out.shape) == (b, h, s, d)
    assert tuple(lse.shape) == (b, h, s)
    assert lse.dtype == torch.float32
    dq, dk, dv = kernels._BACKWARD[kernel](out, q, k, k, out, lse, True, 0.125)
    assert tuple(dq.shape) == (b, h, s, d)
    assert tuple(dk.shape) == tuple(dv.shape) == (b, g, s, d)


def test_fold_kv_sums_each_group() -> None:
    grad = torch.arange(2 * 6 * 3 * 1, dtype=torch.float64).view(2, 6, 3, 1)
    like = torch.empty(2, 2, 3, 1)
    want = torch.stack([grad[:, 0:3].sum(1), grad[:, 3:6].sum(1)], dim=1)  # heads 0-2 -> KV 0, 3-5 -> KV 1
    assert torch.equal(kernels._fold_kv(grad, like), want)


def _case(dtype: torch.dtype, device: str) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    b, h, g, s, d = 2, 8, 2, 72, 64
    shapes = [(b, h, s, d), (b, g, s, d), (b, g, s, d), (b, h, s, d)]
    return [torch.randn(*sh, generator=gen, dtype=torch.float64).to(device=device, dtype=dtype) for sh in shapes]


@requires_cuda
@pytest.mark.parametrize(("dtype", "tol"), [(torch.float32, 2e-3), (torch.bfloat16, 3e-2)])
@pytest.mark.parametrize("causal", [True, False])
def test_cuda_kernels_match_the_cpu_kernel(dtype: torch.dtype, tol: float, causal: bool) -> None:
    q, k, v, dout = _case(dtype, "cuda")
    q64, k64, v64, dout64 = (t.cpu().double() for t in (q, k, v, dout))
    out_ref, lse_ref = kernels.attention_forward(q64, k64, v64, causal, 0.125)
    grads_ref = kernels.attention_backward(dout64, q64, k64, v64, out_ref, lse_ref, causal, 0.125)
    out, lse = kernels.attention_forward(q, k, v, causal, 0.125)
    grads = kernels.attention_backward(dout, q, k, v, out, lse, causal, 0.125)
    for got, want in ((out, out_ref), (lse, lse_ref), *zip(grads, grads_ref, strict=True)):
        err = (got.double().cpu() - want).abs().max() / want.abs().max()
        assert err <= tol


@requires_cuda
def test_upipe_attention_on_cuda_matches_cpu() -> None:
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(2, 64, 256, generator=gen, dtype=torch.float64)
    ws = [torch.randn(n * 32, 256, generator=gen, dtype=torch.float64) / 16 for n in (8, 2, 2)]
    dout = torch.randn(2, 64, 8, 32, generator=gen, dtype=torch.float64)
    results = []
    for device, dtype in (("cpu", torch.float64), ("cuda", torch.bfloat16)):
        # a fresh leaf per run: ``.to`` returns the fp64 CPU tensor itself, which must not start requiring grad
        leaves = [t.to(device=device, dtype=dtype).clone().requires_grad_(True) for t in (x, *ws)]
        out = upipe_attention(*leaves, num_heads=8, num_kv_heads=2, stage_heads=2)
        out.backward(dout.to(device=device, dtype=dtype))
        results.append([out.detach().double().cpu()] + [t.grad.double().cpu() for t in leaves])  # type: ignore[union-attr]
    for got, want in zip(results[1], results[0], strict=True):
        assert (got - want).abs().max() / want.abs().max() <= 3e-2
