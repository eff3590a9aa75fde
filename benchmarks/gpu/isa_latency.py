"""ISA's Triton path against FlashAttention (SDPA) on one CUDA device: latency at 16K to 64K tokens, bf16.

For each head count (``--heads``, default 4) and each part length N_t = N_c (``--lengths``, default 8192, 16384,
32768: 16K to 64K tokens in all), the inputs are ``video_qkv`` clips (``--side`` x ``--side`` tokens per frame,
the frames filling the part, the same generator as ``benchmarks/isa_attention.py``), batch 1, D = 64, cast to
bf16 on the device. Three methods see the same tensors:

- ``sdpa_flash``: ``scaled_dot_product_attention`` with the flash backend forced
  (``torch.nn.attention.sdpa_kernel(SDPBackend.FLASH_ATTENTION)``), the dense reference;
- ``isa_triton``: ``isa_attention(..., backend="triton")`` with the paper's defaults (only the Taylor path is
  the Triton kernel; pooling, selection, the exact half and the gate stay in torch);
- ``isa_torch``: the same with ``backend="torch"`` (the differentiable reference).

Per method: forward latency (under ``torch.no_grad``) and forward + backward latency (``torch.autograd.grad``
of the output against a fixed random output gradient), each the median over ``--repeats`` timed calls after
``--warmup`` untimed ones, timed with CUDA events; peak memory of the forward + backward. Output cosine
against ``sdpa_flash`` on the same inputs at every ``--temperatures`` logit scale (flat to sharp attention, as
in the CPU benchmark); latency is timed on the inputs of the first temperature (it does not depend on the
values). As a check of the kernel on real hardware, the Triton path's output and q, k, v gradients are
compared with the torch backend's (relative L2).

The JSON (``--json``, default ``benchmarks/results/isa_latency_cuda.json``) is rewritten after every
configuration; after ``--max-minutes`` of wall clock (default 6) the run stops between two measurements and
the JSON says ``"complete": false``. Targets: ISA's Triton forward at most 0.4 x SDPA's latency at 64K tokens
with H = 4 (the issue's target, after the official README's 2.8 x speed-up over FlashAttention-2 at 65K) and
output cosine at least 0.99 against SDPA (worst case over everything measured).

    python -m benchmarks.gpu.isa_latency                       # one CUDA GPU with triton, H = 4, < 6 min
    python -m benchmarks.gpu.isa_latency --heads 4 16          # also a wider head count, after the H = 4 rows

Without a CUDA device the script stops with a message; ``benchmarks/isa_attention.py`` gives the CPU figures.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn.attention import SDPBackend, sdpa_kernel

from benchmarks._common import markdown_table, print_targets, target, worst, write_json
from lightning_icml26.data import video_qkv
from lightning_icml26.metrics.functional import attention_approx_error
from lightning_icml26.ops.attention import isa_attention
from lightning_icml26.optional import is_available

DEFAULT_JSON = Path(__file__).resolve().parents[1] / "results" / "isa_latency_cuda.json"
METHODS = ("sdpa_flash", "isa_triton", "isa_torch")
TARGET_TOKENS, TARGET_HEADS = 65536, 4

Attention = Callable[[Tensor, Tensor, Tensor], Tensor]


class OutOfTime(Exception):
    """Raised between two measurements once the wall-clock cap has passed."""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (see the module docstring); exits with a message naming the flag on bad values."""
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--json", type=Path, default=DEFAULT_JSON, metavar="PATH")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lengths", type=int, nargs="+", default=[8192, 16384, 32768], help="N_t = N_c per run")
    p.add_argument("--heads", type=int, nargs="+", default=[4], help="head counts, measured in this order")
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--side", type=int, default=32, help="tokens per frame side (a part is frames x side x side)")
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--temperatures", type=float, nargs="+", default=[2.0, 5.0, 10.0, 20.0])
    p.add_argument("--warmup", type=int, default=3, help="untimed calls before timing (Triton compiles here)")
    p.add_argument("--repeats", type=int, default=20, help="timed calls; the median is reported")
    p.add_argument("--max-minutes", type=float, default=6.0, help="wall-clock cap; the JSON is then partial")
    args = p.parse_args(argv)
    for name in ("heads", "lengths", "temperatures"):
        if any(not x > 0 for x in getattr(args, name)):
            p.error(f"--{name} must all be positive, got {getattr(args, name)}")
    for name, low in (("head_dim", 2), ("side", 1), ("warmup", 0), ("repeats", 1)):
        if getattr(args, name) < low:
            p.error(f"--{name.replace('_', '-')} must be >= {low}, got {getattr(args, name)}")
    if args.head_dim % 2:
        p.error(f"--head-dim must be even (rotary pairs of the generated inputs), got {args.head_dim}")
    if args.block_size < 16 or args.block_size & (args.block_size - 1):
        p.error(f"--block-size must be a power of two >= 16 (the Triton kernel's tiles), got {args.block_size}")
    if any(n % args.side**2 for n in args.lengths):
        p.error(f"--lengths must be multiples of side**2 = {args.side**2} (whole frames), got {args.lengths}")
    if not args.max_minutes > 0:
        p.error(f"--max-minutes must be positive, got {args.max_minutes}")
    return args


def sdpa_flash(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """Dense attention on ``(batch, seq, heads, head_dim)`` tensors with SDPA's flash backend forced."""
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
    return out.transpose(1, 2)


def attention_methods(target_len: int, block_size: int, methods: Sequence[str] = METHODS) -> dict[str, Attention]:
    """The compared methods as ``fn(q, k, v)`` on a ``[target ‖ context]`` sequence with ``target_len`` targets."""
    unknown = set(methods) - set(METHODS)
    if unknown:
        raise ValueError(f"methods must be among {METHODS}, got {sorted(unknown)}")

    def isa(backend: str) -> Attention:
        return lambda q, k, v: isa_attention(q, k, v, target_len, block_size=block_size, backend=backend)

    table: dict[str, Attention] = {"sdpa_flash": sdpa_flash, "isa_triton": isa("triton"), "isa_torch": isa("torch")}
    return {m: table[m] for m in methods}


def latency_ms(fn: Callable[[], Any], device: torch.device, warmup: int, repeats: int) -> float:
    """Median milliseconds of ``fn()`` over ``repeats`` calls after ``warmup`` untimed ones.

    On CUDA each call is bracketed by CUDA events (device time between them, host syncs included); on the CPU
    (tests only) by ``time.perf_counter``.
    """
    for _ in range(warmup):
        fn()
    times = []
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeats)]
        for start, end in events:
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize(device)
        times = [float(start.elapsed_time(end)) for start, end in events]
    else:
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append(1e3 * (time.perf_counter() - t0))
    return statistics.median(times)


def make_inputs(
    n_part: int, heads: int, head_dim: int, side: int, temperature: float, seed: int, device: torch.device
) -> tuple[Tensor, Tensor, Tensor]:
    """``video_qkv`` with ``n_part`` target and ``n_part`` context tokens, bf16 on ``device``."""
    q, k, v, n_t = video_qkv(
        n_part // side**2, side, side, heads=heads, head_dim=head_dim, temperature=temperature, seed=seed
    )
    assert n_t == n_part
    q, k, v = (x.to(device=device, dtype=torch.bfloat16) for x in (q, k, v))
    return q, k, v


def _cosine(out: Tensor | None, ref: Tensor | None) -> float:
    if out is None or ref is None:
        return float("nan")
    return float(attention_approx_error(out.float(), ref.float())["cosine"])


def _rel_l2(a: Tensor, b: Tensor) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-300))


def _attempt(row: dict[str, Any], label: str, fn: Callable[[], Any]) -> Any:
    """``fn()``, or ``None`` with the error recorded in ``row["errors"][label]`` (out of memory, a kernel failure)."""
    try:
        return fn()
    except Exception as err:  # one failing method must not lose the other rows
        row["errors"][label] = f"{type(err).__name__}: {str(err)[:300]}"
        print(f"  {label}: {row['errors'][label]}", flush=True)
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        return None


def _check_time(deadline: float) -> None:
    if time.monotonic() > deadline:
        raise OutOfTime


def measure_config(
    row: dict[str, Any],
    args: argparse.Namespace,
    device: torch.device,
    deadline: float,
    methods: Sequence[str] = METHODS,
) -> None:
    """Fill ``row`` (``n_target`` and ``heads`` set) with cosines, latencies, memory and the kernel check.

    Raises ``OutOfTime`` between two measurements after ``deadline`` (``time.monotonic``); what was measured
    stays in ``row``.
    """
    n_part, heads = row["n_target"], row["heads"]
    fns = attention_methods(n_part, args.block_size, methods)
    row.update(cosine={}, fwd_ms={}, fwd_bwd_ms={}, peak_gib={}, errors={})
    timed: tuple[Tensor, Tensor, Tensor] | None = None
    for i, temp in enumerate(args.temperatures):
        _check_time(deadline)
        q, k, v = make_inputs(n_part, heads, args.head_dim, args.side, temp, args.seed, device)
        with torch.no_grad():
            outs = {m: _attempt(row, f"forward T={temp} {m}", partial(fn, q, k, v)) for m, fn in fns.items()}
        ref = outs.get("sdpa_flash")
        row["cosine"][str(temp)] = {m: _cosine(outs[m], ref) for m in fns if m != "sdpa_flash"}
        del outs, ref
        if i == 0:
            timed = (q, k, v)
    assert timed is not None
    q, k, v = (x.requires_grad_() for x in timed)
    grad_out = torch.randn(q.shape, generator=torch.Generator().manual_seed(args.seed)).to(device, q.dtype)
    grads: dict[str, tuple[Tensor, ...]] = {}
    try:
        for m, fn in fns.items():
            got = _time_method(row, m, fn, (q, k, v), grad_out, args, device, deadline)
            if got is not None:
                grads[m] = got
    finally:  # also when out of time: the ratios of what was measured
        _fill_ratios(row, fns)
    if "isa_triton" in grads and "isa_torch" in grads:
        with torch.no_grad():
            out_tr, out_to = fns["isa_triton"](q, k, v), fns["isa_torch"](q, k, v)
        pairs = zip("qkv", grads["isa_triton"], grads["isa_torch"], strict=True)
        check = {"out": _rel_l2(out_tr, out_to), **{f"grad_{n}": _rel_l2(a, b) for n, a, b in pairs}}
        row["triton_vs_torch_rel_l2"] = check


def _time_method(
    row: dict[str, Any],
    name: str,
    fn: Attention,
    qkv: tuple[Tensor, Tensor, Tensor],
    grad_out: Tensor,
    args: argparse.Namespace,
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

    timing = (device, args.warmup, args.repeats)
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


def latency_ratio(rows: Sequence[dict[str, Any]], tokens: int, heads: int, method: str = "isa_triton") -> float:
    """Forward latency of ``method`` over ``sdpa_flash``'s at ``tokens`` (in all) and ``heads``; nan if not measured."""
    for row in rows:
        if row["tokens"] == tokens and row["heads"] == heads:
            value = row.get("fwd_ratio", {}).get(method)
            return float("nan") if value is None else float(value)
    return float("nan")


def build_targets(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The two targets (same keys whatever was measured; an unmeasured figure is ``nan`` and missed)."""
    cosines = [per_t.get("isa_triton", float("nan")) for r in rows for per_t in r.get("cosine", {}).values()]
    return {
        "isa_triton_latency_ratio_64k": target(latency_ratio(rows, TARGET_TOKENS, TARGET_HEADS), "<=", 0.4),
        "isa_triton_cosine_min": target(worst(cosines, "min"), ">=", 0.99),
    }


def latency_table(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One flat row per (tokens, heads, method) for printing."""
    flat = []
    for r in rows:
        for m in r.get("fwd_ms", {}):
            cos = [per_t.get(m, float("nan")) for per_t in r.get("cosine", {}).values()]
            flat.append({
                "tokens": r["tokens"], "heads": r["heads"], "method": m,
                "fwd_ms": r["fwd_ms"].get(m), "fwd_bwd_ms": r["fwd_bwd_ms"].get(m),
                "fwd_vs_sdpa": r.get("fwd_ratio", {}).get(m, 1.0 if m == "sdpa_flash" else None),
                "fwd_bwd_vs_sdpa": r.get("fwd_bwd_ratio", {}).get(m, 1.0 if m == "sdpa_flash" else None),
                "cosine_min": worst(cos, "min") if m != "sdpa_flash" else "ref",
                "peak_gib": r.get("peak_gib", {}).get(m),
            })  # fmt: skip
    return flat


def run(
    args: argparse.Namespace,
    device: torch.device,
    methods: Sequence[str] = METHODS,
    json_path: Path | None = None,
) -> dict[str, Any]:
    """Every (heads, length) configuration until done or out of time; the figures (also written to ``json_path``)."""
    start = time.monotonic()
    deadline = start + 60 * args.max_minutes
    rows: list[dict[str, Any]] = []
    figures: dict[str, Any] = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else str(device),
        "versions": {"torch": torch.__version__, "triton": _version("triton"), "cuda": torch.version.cuda},
        "settings": {k: getattr(args, k) for k in ("lengths", "heads", "head_dim", "side", "block_size",
                                                   "temperatures", "warmup", "repeats", "max_minutes", "seed")},
        "rows": rows,
    }  # fmt: skip

    def record(complete: bool) -> None:
        figures.update(complete=complete, elapsed_s=time.monotonic() - start, targets=build_targets(rows))
        write_json(json_path, "isa_latency_cuda", figures, args)

    complete = True
    try:
        for heads in args.heads:
            for n_part in args.lengths:
                _check_time(deadline)
                print(f"N_t = N_c = {n_part} ({2 * n_part} tokens), H = {heads}", flush=True)
                row: dict[str, Any] = {"tokens": 2 * n_part, "n_target": n_part, "heads": heads}
                rows.append(row)
                try:
                    measure_config(row, args, device, deadline, methods)
                finally:
                    record(complete=False)
    except OutOfTime:
        complete = False
        print(f"wall-clock cap of {args.max_minutes} min reached: the JSON is partial", flush=True)
    record(complete)
    print(markdown_table(latency_table(rows)))
    print_targets(figures["targets"])
    return figures


def _version(module: str) -> str | None:
    if not is_available(module):
        return None
    return str(getattr(importlib.import_module(module), "__version__", None))


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Check for CUDA and triton, then run every configuration; return the figures (written to ``--json``)."""
    args = parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit(
            "benchmarks/gpu/isa_latency.py measures GPU latency and needs a CUDA device, but "
            "torch.cuda.is_available() is False here; on the CPU run benchmarks/isa_attention.py instead"
        )
    if not is_available("triton"):
        raise SystemExit(
            "benchmarks/gpu/isa_latency.py times ISA's Triton backend and needs triton: "
            "pip install 'lightning-icml26[kernels]'"
        )
    return run(args, torch.device("cuda"), json_path=args.json)


if __name__ == "__main__":
    main()
