"""Every CUDA path of the package against its reference, as functions ``check_x(device, dtype) -> CheckResult``.

Each check runs a path forward and backward on ``device`` in ``dtype`` and compares the output and the input
gradients with a reference (the same call on the CPU in float64, or the path's pure-torch backend), as the worst
relative L2 error. The device is a parameter: on a GPU machine it is ``cuda`` (what ``make gpu-check`` runs); the
tests run every check on the CPU, where the same code compares CPU float32 / bfloat16 with CPU float64.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import Tensor
from torch.distributed.fsdp import fully_shard

from lightning_icml26.ops.attention import ARMAttention, isa_attention, upipe_attention

__all__ = [
    "ACCEPTANCE_CHECKS",
    "TOLERANCES",
    "AcceptanceCheck",
    "CheckResult",
    "check_arm",
    "check_fsdp2_one_device",
    "check_isa_triton",
    "check_sdpa",
    "check_upipe_fused",
    "dtype_name",
    "relative_error",
]

TOLERANCES: dict[torch.dtype, float] = {
    torch.float64: 1e-9,
    torch.float32: 1e-3,
    torch.float16: 1e-2,
    torch.bfloat16: 3e-2,
}
"""Largest relative L2 error a check accepts, per dtype of the path under test (unless the check is tighter)."""
_TIGHTER: dict[tuple[str, torch.dtype], float] = {
    ("arm", torch.float32): 1e-4,
    ("fsdp2_one_device", torch.float32): 1e-5,
}


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.bfloat16`` -> ``"bfloat16"``.

    Example:
        >>> dtype_name(torch.bfloat16)
        'bfloat16'
    """
    return str(dtype).removeprefix("torch.")


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check: the worst relative error against the reference and the tolerance it must meet.

    Attributes:
        name: the check (``"sdpa"``, ``"upipe_fused"``, ...).
        dtype: the dtype of the path under test, by name (``"float32"``).
        error: worst relative L2 error over the output and the gradients (``nan`` if the path failed).
        tolerance: the largest accepted error.
        seconds: wall time of the check.
        exception: ``repr`` of the exception raised by the path, if any.

    Example:
        >>> r = CheckResult("sdpa", "float32", 2e-7, 1e-3)
        >>> r.key, r.passed
        ('sdpa_float32', True)
        >>> CheckResult("sdpa", "float32", float("nan"), 1e-3).passed
        False
    """

    name: str
    dtype: str
    error: float
    tolerance: float
    seconds: float = 0.0
    exception: str | None = None

    @property
    def key(self) -> str:
        """``<name>_<dtype>``, the check's name in the JSON."""
        return f"{self.name}_{self.dtype}"

    @property
    def passed(self) -> bool:
        """Whether the error is measured and within the tolerance."""
        return not math.isnan(self.error) and self.error <= self.tolerance

    def as_dict(self) -> dict[str, Any]:
        """The JSON record: error, tolerance, ``ok``, seconds (and the exception when there is one).

        Example:
            >>> CheckResult("arm", "float32", 0.5, 1e-4, seconds=1.0).as_dict()
            {'error': 0.5, 'tolerance': 0.0001, 'ok': False, 'seconds': 1.0}
        """
        out: dict[str, Any] = {"error": self.error, "tolerance": self.tolerance, "ok": self.passed}
        out["seconds"] = self.seconds
        if self.exception is not None:
            out["exception"] = self.exception
        return out


def relative_error(a: Tensor, b: Tensor) -> float:
    """``‖a - b‖ / ‖b‖`` in float64 on the CPU (``b`` is the reference).

    Example:
        >>> relative_error(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0]))
        0.0
    """
    a64, b64 = a.detach().double().cpu(), b.detach().double().cpu()
    return float((a64 - b64).norm() / b64.norm().clamp_min(1e-30))


def _worst(got: Sequence[Tensor], ref: Sequence[Tensor]) -> float:
    return max(relative_error(a, b) for a, b in zip(got, ref, strict=True))


def _forward_backward(fn: Callable[..., Tensor], inputs: Sequence[Tensor], upstream: Tensor) -> list[Tensor]:
    """``[out, *grads]`` of ``fn(*inputs)`` against the output gradient ``upstream``."""
    leaves = [t.detach().clone().requires_grad_(True) for t in inputs]
    out = fn(*leaves)
    grads = torch.autograd.grad(out, leaves, upstream.to(out.device, out.dtype))
    return [out.detach(), *grads]


def _against_float64_cpu(
    fn: Callable[..., Tensor], inputs: Sequence[Tensor], upstream: Tensor, device: torch.device, dtype: torch.dtype
) -> float:
    ref = _forward_backward(fn, [t.double() for t in inputs], upstream.double())
    got = _forward_backward(fn, [t.to(device, dtype) for t in inputs], upstream)
    return _worst(got, ref)


def _result(name: str, dtype: torch.dtype, error: float, start: float) -> CheckResult:
    tolerance = _TIGHTER.get((name, dtype), TOLERANCES.get(dtype, 0.0))
    return CheckResult(name, dtype_name(dtype), float(error), tolerance, time.perf_counter() - start)


def check_upipe_fused(
    device: torch.device | str, dtype: torch.dtype = torch.float32, *, seq_len: int = 512
) -> CheckResult:
    """UPipe's fused operator (projection, rotary, the device's attention kernel) against the CPU in float64.

    On CUDA, float32 runs SDPA's memory-efficient kernel and bfloat16 its flash kernel (see
    ``select_kernel``); on the CPU, PyTorch's CPU flash kernel.

    Example:
        >>> check_upipe_fused("cpu", seq_len=64).passed
        True
    """
    start = time.perf_counter()
    gen = torch.Generator().manual_seed(0)
    hidden, heads, kv_heads, dim = 256, 8, 2, 32
    x = torch.randn(2, seq_len, hidden, generator=gen)
    w_q = torch.randn(heads * dim, hidden, generator=gen) / hidden**0.5
    w_k, w_v = (torch.randn(kv_heads * dim, hidden, generator=gen) / hidden**0.5 for _ in range(2))
    upstream = torch.randn(2, seq_len, heads, dim, generator=gen)

    def fn(*t: Tensor) -> Tensor:
        return upipe_attention(*t, num_heads=heads, num_kv_heads=kv_heads)

    error = _against_float64_cpu(fn, (x, w_q, w_k, w_v), upstream, torch.device(device), dtype)
    return _result("upipe_fused", dtype, error, start)


def check_sdpa(device: torch.device | str, dtype: torch.dtype = torch.float32, *, seq_len: int = 1024) -> CheckResult:
    """``scaled_dot_product_attention`` (causal, forward and backward) against the CPU in float64.

    Example:
        >>> check_sdpa("cpu", seq_len=32).passed
        True
    """
    start = time.perf_counter()
    q, k, v, up = torch.randn(4, 2, 8, seq_len, 64, generator=torch.Generator().manual_seed(1)).unbind(0)

    def fn(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    error = _against_float64_cpu(fn, (q, k, v), up, torch.device(device), dtype)
    return _result("sdpa", dtype, error, start)


def check_isa_triton(
    device: torch.device | str, dtype: torch.dtype = torch.float32, *, part_len: int = 2048, block_size: int = 64
) -> CheckResult:
    """ISA's Triton path against its torch backend on the same inputs: output and q, k, v gradients.

    Needs triton; on the CPU only under ``TRITON_INTERPRET=1`` (set before triton is first imported).

    Example:
        >>> check_isa_triton("cpu", part_len=128, block_size=16).passed  # doctest: +SKIP
        True
    """
    start = time.perf_counter()
    dev = torch.device(device)
    gen = torch.Generator().manual_seed(2)
    q, k, v, up = (t.to(dev, dtype) for t in torch.randn(4, 1, 2 * part_len, 4, 64, generator=gen).unbind(0))

    def run(backend: str) -> list[Tensor]:
        def fn(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
            return isa_attention(q, k, v, part_len, block_size=block_size, backend=backend)

        return _forward_backward(fn, (q, k, v), up)

    error = _worst(run("triton"), run("torch"))
    return _result("isa_triton", dtype, error, start)


def check_arm(device: torch.device | str, dtype: torch.dtype = torch.float32, *, seq_len: int = 40) -> CheckResult:
    """ARM's parallel form (with gradients) and three decode steps against the CPU in float64.

    Example:
        >>> check_arm("cpu").passed
        True
    """
    start = time.perf_counter()
    if seq_len < 4:
        raise ValueError(f"seq_len must be >= 4 (a prefill and three decode steps), got {seq_len}")
    torch.manual_seed(3)
    attn = ARMAttention(num_heads=2, head_dim=16, num_slots=16, num_clusters=4, window=8).eval()
    q, k, v, up = torch.randn(4, 1, seq_len, 2, 16, generator=torch.Generator().manual_seed(3)).unbind(0)
    results = []
    for dev, dt in ((torch.device("cpu"), torch.float64), (torch.device(device), dtype)):
        layer = attn.to(dev, dt)
        full = _forward_backward(layer, [t.to(dev, dt) for t in (q, k, v)], up)
        with torch.no_grad():
            _, cache = layer.prefill(*(t[:, : seq_len - 3].to(dev, dt) for t in (q, k, v)))
            steps = []
            for i in range(seq_len - 3, seq_len):
                qi, ki, vi = (t[:, i : i + 1].to(dev, dt) for t in (q, k, v))
                out, cache = layer.step(qi, ki, vi, cache)
                steps.append(out)
        results.append([*full, torch.cat(steps, dim=1)])
    return _result("arm", dtype, _worst(results[1], results[0]), start)


def check_fsdp2_one_device(device: torch.device | str, dtype: torch.dtype = torch.float32) -> CheckResult:
    """``fully_shard`` on a one-rank group: one AdamW step gives the plain model's weights.

    The group is NCCL on CUDA and gloo on the CPU; one already initialised is used as it is.

    Example:
        >>> check_fsdp2_one_device("cpu").passed
        True
    """
    start = time.perf_counter()
    dev = torch.device(device)
    torch.manual_seed(4)
    plain = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(3)]).to(dev, dtype)
    sharded = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(3)]).to(dev, dtype)
    sharded.load_state_dict(plain.state_dict())
    own_group = not dist.is_initialized()
    if own_group:
        store = os.path.join(tempfile.mkdtemp(), "store")
        backend = "nccl" if dev.type == "cuda" else "gloo"
        dist.init_process_group(backend, init_method=f"file://{store}", rank=0, world_size=1)
    try:
        for layer in sharded:
            fully_shard(layer)
        fully_shard(sharded)
        x = torch.randn(16, 64, device=dev, dtype=dtype)
        for model in (plain, sharded):
            opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
            model(x).pow(2).mean().backward()
            opt.step()
        full = {k: getattr(v, "full_tensor", lambda v=v: v)() for k, v in sharded.state_dict().items()}
        error = max(relative_error(full[k], v) for k, v in plain.state_dict().items())
    finally:
        if own_group:
            dist.destroy_process_group()
    return _result("fsdp2_one_device", dtype, error, start)


@dataclass(frozen=True)
class AcceptanceCheck:
    """A check in the acceptance run: its function, the dtypes it runs in, and a time estimate per dtype.

    Example:
        >>> ACCEPTANCE_CHECKS[0].name, [dtype_name(d) for d in ACCEPTANCE_CHECKS[0].dtypes]
        ('upipe_fused', ['float32', 'bfloat16'])
    """

    name: str
    fn: Callable[[torch.device, torch.dtype], CheckResult]
    dtypes: tuple[torch.dtype, ...]
    estimate_s: float = 10.0

    def tolerance(self, dtype: torch.dtype) -> float:
        """The largest relative error this check accepts in ``dtype``.

        Example:
            >>> [c.tolerance(torch.float32) for c in ACCEPTANCE_CHECKS if c.name == "arm"]
            [0.0001]
        """
        return _TIGHTER.get((self.name, dtype), TOLERANCES.get(dtype, 0.0))

    def result_keys(self) -> list[str]:
        """``<name>_<dtype>`` for every dtype, in run order."""
        return [f"{self.name}_{dtype_name(d)}" for d in self.dtypes]


_F32, _BF16 = torch.float32, torch.bfloat16
ACCEPTANCE_CHECKS: tuple[AcceptanceCheck, ...] = (
    AcceptanceCheck("upipe_fused", check_upipe_fused, (_F32, _BF16)),
    AcceptanceCheck("sdpa", check_sdpa, (_F32, _BF16)),
    AcceptanceCheck("fsdp2_one_device", check_fsdp2_one_device, (_F32,)),
    AcceptanceCheck("isa_triton", check_isa_triton, (_F32, _BF16)),
    AcceptanceCheck("arm", check_arm, (_F32,)),
)
"""The checks of ``make gpu-check``, in run order (the most used paths first)."""
