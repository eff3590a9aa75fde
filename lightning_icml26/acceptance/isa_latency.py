"""ISA's latency against dense attention (SDPA with the flash backend) on one device, forward and backward.

For each head count and each part length N_t = N_c the inputs are ``video_qkv`` clips (``side x side`` tokens per
frame), batch 1, in ``dtype`` on the device. Three methods see the same tensors: ``sdpa_flash`` (the dense
reference), ``isa_triton`` (``isa_attention(..., backend="triton")``) and ``isa_torch`` (its torch backend). Per
method: forward latency (no grad) and forward + backward latency (``torch.autograd.grad`` against a fixed output
gradient), medians of timed calls (CUDA events on a GPU, ``perf_counter`` elsewhere), peak memory on CUDA, the
output cosine against ``sdpa_flash`` at every logit scale, and the Triton path's output and gradients against the
torch backend's.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn.attention import SDPBackend, sdpa_kernel

from lightning_icml26.acceptance.runner import target_entry
from lightning_icml26.data import video_qkv
from lightning_icml26.metrics.functional import attention_approx_error
from lightning_icml26.ops.attention import isa_attention

__all__ = [
    "ISA_LATENCY_METHODS",
    "IsaLatencySettings",
    "isa_latency_inputs",
    "isa_latency_table",
    "isa_latency_targets",
    "latency_ms",
    "measure_isa_latency",
    "sdpa_flash",
]

ISA_LATENCY_METHODS = ("sdpa_flash", "isa_triton", "isa_torch")
TARGET_TOKENS, TARGET_HEADS = 65536, 4
Attention = Callable[[Tensor, Tensor, Tensor], Tensor]


@dataclass(frozen=True)
class IsaLatencySettings:
    """What :func:`measure_isa_latency` measures (defaults: 16K to 64K tokens, H = 4, D = 64, bf16, 6 minutes).

    Example:
        >>> IsaLatencySettings(lengths=(128,), side=8).lengths
        (128,)
        >>> IsaLatencySettings(block_size=48)
        Traceback (most recent call last):
        ...
        ValueError: block_size must be a power of two >= 16 (the Triton kernel's tiles), got 48
    """

    lengths: tuple[int, ...] = (8192, 16384, 32768)
    heads: tuple[int, ...] = (4,)
    head_dim: int = 64
    side: int = 32
    block_size: int = 64
    temperatures: tuple[float, ...] = (2.0, 5.0, 10.0, 20.0)
    warmup: int = 3
    repeats: int = 20
    max_minutes: float = 6.0
    seed: int = 0
    dtype: str = "bfloat16"

    def __post_init__(self) -> None:
        for name in ("heads", "lengths", "temperatures"):
            if not getattr(self, name) or any(not x > 0 for x in getattr(self, name)):
                raise ValueError(f"{name} must all be positive, got {getattr(self, name)}")
        for name, low in (("head_dim", 2), ("side", 1), ("warmup", 0), ("repeats", 1)):
            if getattr(self, name) < low:
                raise ValueError(f"{name} must be >= {low}, got {getattr(self, name)}")
        if self.head_dim % 2:
            raise ValueError(f"head_dim must be even (rotary pairs of the generated inputs), got {self.head_dim}")
        if self.block_size < 16 or self.block_size & (self.block_size - 1):
            raise ValueError(
                f"block_size must be a power of two >= 16 (the Triton kernel's tiles), got {self.block_size}"
            )
        if any(n % self.side**2 for n in self.lengths):
            raise ValueError(
                f"lengths must be multiples of side**2 = {self.side**2} (whole frames), got {self.lengths}"
            )
        if not self.max_minutes > 0:
            raise ValueError(f"max_minutes must be positive, got {self.max_minutes}")
        if self.dtype not in ("bfloat16", "float16", "float32"):
            raise ValueError(f"dtype must be 'bfloat16', 'float16' or 'float32', got {self.dtype!r}")


class _OutOfTime(Exception):
    """Raised between two measurements once the wall-clock cap has passed."""


def sdpa_flash(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """Dense attention on ``(batch, seq, heads, head_dim)`` tensors with SDPA's flash backend forced.

    Example:
        >>> sdpa_flash(*torch.randn(3, 1, 8, 2, 16).unbind(0)).shape
        torch.Size([1, 8, 2, 16])
    """
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
    return out.transpose(1, 2)


def _methods(target_len: int, block_size: int, methods: Sequence[str]) -> dict[str, Attention]:
    unknown = set(methods) - set(ISA_LATENCY_METHODS)
    if unknown:
        raise ValueError(f"methods must be among {ISA_LATENCY_METHODS}, got {sorted(unknown)}")

    def isa(backend: str) -> Attention:
        return lambda q, k, v: isa_attention(q, k, v, target_len, block_size=block_size, backend=backend)

    table: dict[str, Attention] = {"sdpa_flash": sdpa_flash, "isa_triton": isa("triton"), "isa_torch": isa("torch")}
    return {m: table[m] for m in methods}


def latency_ms(fn: Callable[[], Any], device: torch.device | str, warmup: int, repeats: int) -> float:
    """Median milliseconds of ``fn()`` over ``repeats`` calls after ``warmup`` untimed ones.

    On CUDA each call is bracketed by CUDA events; elsewhere by ``time.perf_counter``.

    Example:
        >>> latency_ms(lambda: None, "cpu", warmup=1, repeats=3) >= 0.0
        True
    """
    for _ in range(warmup):
        fn()
    if torch.device(device).type != "cuda":
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append(1e3 * (time.perf_counter() - t0))
        return statistics.median(times)
    torch.cuda.synchronize(device)
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeats)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize(device)
    return statistics.median(float(start.elapsed_time(end)) for start, end in events)


def isa_latency_inputs(
    settings: IsaLatencySettings, n_part: int, heads: int, temperature: float, device: torch.device | str
) -> tuple[Tensor, Tensor, Tensor]:
    """``video_qkv`` with ``n_part`` target and ``n_part`` context tokens, in the settings' dtype on ``device``.

    Example:
        >>> q, k, v = isa_latency_inputs(IsaLatencySettings(side=8, head_dim=16), 128, 2, 5.0, "cpu")
        >>> q.shape, q.dtype
        (torch.Size([1, 256, 2, 16]), torch.bfloat16)
    """
    s = settings
    q, k, v, _ = video_qkv(
        n_part // s.side**2, s.side, s.side, heads=heads, head_dim=s.head_dim, temperature=temperature, seed=s.seed
    )
    dtype = getattr(torch, s.dtype)
    return q.to(device, dtype), k.to(device, dtype), v.to(device, dtype)


def _attempt(row: dict[str, Any], label: str, fn: Callable[[], Any]) -> Any:
    """``fn()``, or ``None`` with the error recorded in ``row["errors"][label]`` (out of memory, a kernel failure)."""
    try:
        return fn()
    except Exception as err:  # one failing method must not lose the other rows
        row["errors"][label] = f"{type(err).__name__}: {str(err)[:300]}"
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        return None


def _check_time(deadline: float) -> None:
    if time.monotonic() > deadline:
        raise _OutOfTime


def _rel_l2(a: Tensor, b: Tensor) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-300))


def _cosine(out: Tensor | None, ref: Tensor | None) -> float:
    if out is None or ref is None:
        return float("nan")
    return float(attention_approx_error(out.float(), ref.float())["cosine"])


def _cosines(
    row: dict[str, Any], settings: IsaLatencySettings, fns: dict[str, Attention], device: Any, deadline: float
) -> tuple[Tensor, Tensor, Tensor]:
    """Each ISA method's output cosine against ``sdpa_flash`` at every temperature; the first inputs, for timing."""
    timed = None
    for temp in settings.temperatures:
        _check_time(deadline)
        q, k, v = isa_latency_inputs(settings, row["n_target"], row["heads"], temp, device)
        with torch.no_grad():
            outs = {m: _attempt(row, f"forward T={temp} {m}", partial(fn, q, k, v)) for m, fn in fns.items()}
        ref = outs.get("sdpa_flash")
        row["cosine"][str(temp)] = {m: _cosine(out, ref) for m, out in outs.items() if m != "sdpa_flash"}
        timed = timed or (q, k, v)
    assert timed is not None  # temperatures is never empty
    return timed


def _time_method(
    row: dict[str, Any],
    name: str,
    fn: Attention,
    qkv: tuple[Tensor, Tensor, Tensor],
    grad_out: Tensor,
    settings: IsaLatencySettings,
    device: torch.device,
    deadline: float,
) -> tuple[Tensor, ...] | None:
    """Forward and forward + backward latency and peak memory of one method into ``row``; ISA's q, k, v grads."""
    q, k, v = qkv

    def forward() -> Tensor:
        with torch.no_grad():
            return fn(q, k, v)

    def forward_backward() -> tuple[Tensor, ...]:
        return torch.autograd.grad(fn(q, k, v), (q, k, v), grad_out)

    timing = (device, settings.warmup, settings.repeats)
    _check_time(deadline)
    row["fwd_ms"][name] = _attempt(row, f"fwd latency {name}", partial(latency_ms, forward, *timing))
    _check_time(deadline)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    row["fwd_bwd_ms"][name] = _attempt(row, f"fwd+bwd latency {name}", partial(latency_ms, forward_backward, *timing))
    row["peak_gib"][name] = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None
    if name == "sdpa_flash":
        return None
    grads: tuple[Tensor, ...] | None = _attempt(row, f"gradients {name}", forward_backward)
    return grads


def _fill_ratios(row: dict[str, Any], fns: dict[str, Attention]) -> None:
    """``row["fwd_ratio"]``, ``row["fwd_bwd_ratio"]``: each ISA method's latency over ``sdpa_flash``'s (or nan)."""
    for kind in ("fwd", "fwd_bwd"):
        ms = row[f"{kind}_ms"]
        base = ms.get("sdpa_flash")
        row[f"{kind}_ratio"] = {
            m: (ms[m] / base if ms.get(m) is not None and base else float("nan")) for m in fns if m != "sdpa_flash"
        }


def _measure_config(
    row: dict[str, Any], settings: IsaLatencySettings, device: torch.device, deadline: float, methods: Sequence[str]
) -> None:
    """Fill ``row`` with cosines, latencies, memory and the Triton-against-torch check (``_OutOfTime`` may cut it)."""
    fns = _methods(row["n_target"], settings.block_size, methods)
    row.update(cosine={}, fwd_ms={}, fwd_bwd_ms={}, peak_gib={}, errors={})
    q, k, v = (x.requires_grad_() for x in _cosines(row, settings, fns, device, deadline))
    gen = torch.Generator().manual_seed(settings.seed)
    grad_out = torch.randn(q.shape, generator=gen).to(device, q.dtype)
    grads: dict[str, tuple[Tensor, ...]] = {}
    try:
        for m, fn in fns.items():
            got = _time_method(row, m, fn, (q, k, v), grad_out, settings, device, deadline)
            if got is not None:
                grads[m] = got
    finally:  # also when out of time: the ratios of what was measured
        _fill_ratios(row, fns)
    if "isa_triton" in grads and "isa_torch" in grads:
        with torch.no_grad():
            out_tr, out_to = fns["isa_triton"](q, k, v), fns["isa_torch"](q, k, v)
        pairs = zip("qkv", grads["isa_triton"], grads["isa_torch"], strict=True)
        row["triton_vs_torch_rel_l2"] = {
            "out": _rel_l2(out_tr, out_to),
            **{f"grad_{n}": _rel_l2(a, b) for n, a, b in pairs},
        }


def _worst(values: Sequence[float]) -> float:
    floats = [float(v) for v in values]
    return float("nan") if not floats or any(v != v for v in floats) else min(floats)


def isa_latency_targets(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Triton forward at most 0.4 x SDPA at 64K tokens with H = 4, and output cosine at least 0.99 (worst case).

    Unmeasured figures are ``nan`` and missed; the keys are the same whatever was measured.

    Example:
        >>> isa_latency_targets([])["isa_triton_latency_ratio_64k"]["met"]
        False
    """
    ratio = float("nan")
    for row in rows:
        if row["tokens"] == TARGET_TOKENS and row["heads"] == TARGET_HEADS:
            value = row.get("fwd_ratio", {}).get("isa_triton")
            ratio = float("nan") if value is None else float(value)
    cosines = [per_t.get("isa_triton", float("nan")) for r in rows for per_t in r.get("cosine", {}).values()]
    return {
        "isa_triton_latency_ratio_64k": target_entry(ratio, "<=", 0.4),
        "isa_triton_cosine_min": target_entry(_worst(cosines), ">=", 0.99),
    }


def isa_latency_table(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One flat row per (tokens, heads, method) for printing.

    Example:
        >>> isa_latency_table([])
        []
    """
    flat = []
    for r in rows:
        for m in r.get("fwd_ms", {}):
            base = 1.0 if m == "sdpa_flash" else None
            flat.append({
                "tokens": r["tokens"], "heads": r["heads"], "method": m,
                "fwd_ms": r["fwd_ms"].get(m), "fwd_bwd_ms": r["fwd_bwd_ms"].get(m),
                "fwd_vs_sdpa": r.get("fwd_ratio", {}).get(m, base),
                "fwd_bwd_vs_sdpa": r.get("fwd_bwd_ratio", {}).get(m, base),
                "cosine_min": "ref" if base else _worst([t.get(m, float("nan")) for t in r.get("cosine", {}).values()]),
                "peak_gib": r.get("peak_gib", {}).get(m),
            })  # fmt: skip
    return flat


def measure_isa_latency(
    settings: IsaLatencySettings,
    device: torch.device | str,
    methods: Sequence[str] = ISA_LATENCY_METHODS,
    write: Callable[[dict[str, Any]], None] = lambda figures: None,
) -> dict[str, Any]:
    """Every (heads, length) configuration until done or out of ``settings.max_minutes``; the figures.

    ``write`` gets the figures after every configuration (``"complete": False``) and at the end; a run cut short
    by the cap ends with ``"complete": False`` and what it measured.

    Example:
        >>> s = IsaLatencySettings(lengths=(64,), side=8, head_dim=16, block_size=16, temperatures=(5.0,),
        ...                        warmup=0, repeats=1)
        >>> figures = measure_isa_latency(s, "cpu", methods=("sdpa_flash", "isa_torch"))
        >>> figures["complete"], figures["rows"][0]["tokens"]
        (True, 128)
    """
    dev = torch.device(device)
    start = time.monotonic()
    deadline = start + 60 * settings.max_minutes
    rows: list[dict[str, Any]] = []
    figures: dict[str, Any] = {
        "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else str(dev),
        "versions": {"torch": torch.__version__, "cuda": torch.version.cuda},
        "settings": asdict(settings),
        "rows": rows,
    }

    def record(complete: bool) -> None:
        figures.update(complete=complete, elapsed_s=time.monotonic() - start, targets=isa_latency_targets(rows))
        write(figures)

    complete = True
    try:
        for heads in settings.heads:
            for n_part in settings.lengths:
                _check_time(deadline)
                rows.append({"tokens": 2 * n_part, "n_target": n_part, "heads": heads})
                try:
                    _measure_config(rows[-1], settings, dev, deadline, methods)
                finally:
                    record(complete=False)
    except _OutOfTime:
        complete = False
    record(complete)
    return figures
