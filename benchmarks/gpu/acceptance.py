"""One GPU acceptance run, sized for 10 minutes on one H100: check every CUDA path, then the headline rows.

Stage 1, checks (about a minute): every CUDA path against its CPU / torch reference on small inputs, float32 and
bf16 where the path offers it, forward and backward:

- ``upipe_fused``: the fused UPipe operator (``upipe_attention``, which runs the flash / efficient / flex kernels
  chosen for the device) on CUDA against the same call on the CPU in float64;
- ``sdpa``: ``scaled_dot_product_attention`` on CUDA against the CPU (the dense reference every row compares with);
- ``fsdp2_one_device``: ``fully_shard`` on a one-rank process group: one AdamW step equals the plain model's step;
- ``isa_triton``: ``isa_attention(backend="triton")`` against ``backend="torch"`` on the same CUDA inputs;
- ``arm``: ``ARMAttention`` (parallel form and three decode steps) on CUDA against the CPU.

Stage 2, headline rows, in order of importance, each given the time left (``--minutes`` in all, default 10):
UPipe against Ulysses (peak memory and longest sequence at the Llama-8B layer shape,
``benchmarks/gpu/upipe_memory_cuda.py``), ISA against SDPA's flash backend at 32K and 64K tokens
(``benchmarks/gpu/isa_latency.py``), then a short ITC MinAtar row and a short ArBG row. A stage that would not fit
in the time left is skipped and named in the JSON.

The JSON (``--json``) is rewritten after every stage with ``"complete": false`` until the end, so a run cut short
keeps what it measured. ``figures.targets`` has the same names in every run (``nan``, i.e. missed, for what did
not run): ``check_<name>`` (relative error against the reference, at most the check's tolerance) and
``<stage>.<target>`` for each stage's headline targets. ``--dry-run`` prints the plan and writes the JSON
without touching a GPU (what the CPU tests run).

    python -m benchmarks.gpu.acceptance --json benchmarks/results/gpu_acceptance.json
    python -m benchmarks.gpu.acceptance --dry-run
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from benchmarks._common import markdown_table, print_targets, target, write_json

__all__ = ["CHECKS", "MEASURES", "Budget", "build_targets", "main", "plan", "run"]

DEFAULT_JSON = Path("benchmarks/results/gpu_acceptance.json")


@dataclass(frozen=True)
class Check:
    """A CUDA path against its reference: ``fn(device, dtype)`` returns the worst relative error."""

    name: str
    fn: Callable[[torch.device, torch.dtype], float]
    dtypes: tuple[torch.dtype, ...]
    tolerance: dict[torch.dtype, float]
    estimate_s: float = 10.0


@dataclass(frozen=True)
class Measure:
    """A headline row: ``argv(minutes, json_path)`` for ``module.main``, and the targets it reports."""

    name: str
    module: str
    argv: Callable[[float, Path], list[str]]
    headline: tuple[tuple[str, str, float], ...]  # (the script's target name, op, threshold)
    min_minutes: float


@dataclass
class Budget:
    """Wall-clock budget of the run: seconds left, and whether a stage of ``need`` seconds still fits.

    Example:
        >>> b = Budget(60.0, clock=lambda: 0.0)
        >>> b.left(), b.fits(30.0), b.fits(90.0)
        (60.0, True, False)
    """

    seconds: float
    clock: Callable[[], float] = time.monotonic
    start: float = field(default=-1.0)

    def __post_init__(self) -> None:
        if not self.seconds > 0:
            raise ValueError(f"the time budget must be positive, got {self.seconds!r} seconds")
        if self.start < 0:
            self.start = self.clock()

    def left(self) -> float:
        """Seconds left (never below 0)."""
        return max(0.0, self.seconds - (self.clock() - self.start))

    def fits(self, need: float) -> bool:
        """Whether ``need`` seconds fit in what is left."""
        return need <= self.left()


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def _grads_rel(outs: Sequence[Sequence[torch.Tensor]]) -> float:
    return max(_rel(a, b) for a, b in zip(*outs, strict=True))


def _fwd_bwd(
    fn: Callable[..., torch.Tensor], inputs: Sequence[torch.Tensor], upstream: torch.Tensor
) -> list[torch.Tensor]:
    leaves = [t.detach().clone().requires_grad_(True) for t in inputs]
    out = fn(*leaves)
    grads = torch.autograd.grad(out, leaves, upstream.to(out.device, out.dtype))
    return [out.detach(), *grads]


def check_upipe_fused(device: torch.device, dtype: torch.dtype) -> float:
    """UPipe's fused operator (q/k/v projection, rotary, attention kernels) on ``device`` against the CPU in float64."""
    from lightning_icml26.ops.attention import upipe_attention

    gen = torch.Generator().manual_seed(0)
    hidden, heads, kv_heads, dim, seq = 256, 8, 2, 32, 512
    x = torch.randn(2, seq, hidden, generator=gen)
    w_q = torch.randn(heads * dim, hidden, generator=gen) / hidden**0.5
    w_k = torch.randn(kv_heads * dim, hidden, generator=gen) / hidden**0.5
    w_v = torch.randn(kv_heads * dim, hidden, generator=gen) / hidden**0.5
    upstream = torch.randn(2, seq, heads, dim, generator=gen)

    def fn(*t: torch.Tensor) -> torch.Tensor:
        return upipe_attention(*t, num_heads=heads, num_kv_heads=kv_heads)

    ref = _fwd_bwd(fn, [t.double() for t in (x, w_q, w_k, w_v)], upstream.double())
    got = _fwd_bwd(fn, [t.to(device, dtype) for t in (x, w_q, w_k, w_v)], upstream)
    return _grads_rel([got, ref])


def check_sdpa(device: torch.device, dtype: torch.dtype) -> float:
    """``scaled_dot_product_attention`` (causal, forward and backward) on ``device`` against the CPU in float64."""
    gen = torch.Generator().manual_seed(1)
    q, k, v, up = torch.randn(4, 2, 8, 1024, 64, generator=gen).unbind(0)

    def fn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    ref = _fwd_bwd(fn, [t.double() for t in (q, k, v)], up.double())
    got = _fwd_bwd(fn, [t.to(device, dtype) for t in (q, k, v)], up)
    return _grads_rel([got, ref])


def check_isa_triton(device: torch.device, dtype: torch.dtype) -> float:
    """ISA's Triton path against its torch backend on the same CUDA inputs, output and q, k, v gradients."""
    from lightning_icml26.ops.attention import isa_attention

    gen = torch.Generator().manual_seed(2)
    n = 2048
    q, k, v, up = (t.to(device, dtype) for t in torch.randn(4, 1, 2 * n, 4, 64, generator=gen).unbind(0))

    def run(backend: str) -> list[torch.Tensor]:
        def fn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            return isa_attention(q, k, v, n, backend=backend)

        return _fwd_bwd(fn, [q, k, v], up)

    outs = [run("triton"), run("torch")]
    return _grads_rel(outs)


def check_arm(device: torch.device, dtype: torch.dtype) -> float:
    """ARM's parallel form (with gradients) and three decode steps on ``device`` against the CPU."""
    from lightning_icml26.ops.attention import ARMAttention

    torch.manual_seed(3)
    attn = ARMAttention(num_heads=2, head_dim=16, num_slots=16, num_clusters=4, window=8).eval()
    gen = torch.Generator().manual_seed(3)
    q, k, v, up = torch.randn(4, 1, 40, 2, 16, generator=gen).unbind(0)
    errors = []
    results = []
    for dev, dt in ((torch.device("cpu"), torch.float64), (device, dtype)):
        layer = attn.to(dev, dt)
        full = _fwd_bwd(layer, [t.to(dev, dt) for t in (q, k, v)], up)
        with torch.no_grad():
            _, cache = layer.prefill(*(t[:, :37].to(dev, dt) for t in (q, k, v)))
            steps = []
            for i in range(37, 40):
                qi, ki, vi = (t[:, i : i + 1].to(dev, dt) for t in (q, k, v))
                out, cache = layer.step(qi, ki, vi, cache)
                steps.append(out)
        results.append([*full, torch.cat(steps, dim=1)])
    errors.append(_grads_rel(results))
    return max(errors)


def check_fsdp2_one_device(device: torch.device, dtype: torch.dtype) -> float:
    """``fully_shard`` on a one-rank group: one AdamW step gives the plain model's weights (relative error)."""
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard

    torch.manual_seed(4)
    layers = [torch.nn.Linear(64, 64) for _ in range(3)]
    plain = torch.nn.Sequential(*layers).to(device)
    sharded = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(3)]).to(device)
    sharded.load_state_dict(plain.state_dict())
    own_group = not dist.is_initialized()
    if own_group:
        store = os.path.join(tempfile.mkdtemp(), "store")
        dist.init_process_group("nccl", init_method=f"file://{store}", rank=0, world_size=1)
    try:
        for layer in sharded:
            fully_shard(layer)
        fully_shard(sharded)
        x = torch.randn(16, 64, device=device)
        for model in (plain, sharded):
            opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
            model(x).pow(2).mean().backward()
            opt.step()
        full = {k: (v.full_tensor() if hasattr(v, "full_tensor") else v) for k, v in sharded.state_dict().items()}
        return max(_rel(full[k], v) for k, v in plain.state_dict().items())
    finally:
        if own_group:
            dist.destroy_process_group()


_F32, _BF16 = torch.float32, torch.bfloat16
CHECKS: tuple[Check, ...] = (
    Check("upipe_fused", check_upipe_fused, (_F32, _BF16), {_F32: 1e-3, _BF16: 3e-2}),
    Check("sdpa", check_sdpa, (_F32, _BF16), {_F32: 1e-3, _BF16: 3e-2}),
    Check("fsdp2_one_device", check_fsdp2_one_device, (_F32,), {_F32: 1e-5}),
    Check("isa_triton", check_isa_triton, (_F32, _BF16), {_F32: 1e-3, _BF16: 3e-2}),
    Check("arm", check_arm, (_F32,), {_F32: 1e-4}),
)

MEASURES: tuple[Measure, ...] = (
    Measure(
        "upipe_memory",
        "benchmarks.gpu.upipe_memory_cuda",
        lambda minutes, path: ["--max-minutes", f"{minutes:.2f}", "--json", str(path)],
        (
            ("cuda_attn_peak_P2", "<=", 0.35),
            ("cuda_attn_max_seq_P2", ">=", 1.8),
            ("cuda_model_ckpt_max_seq_P2", ">=", 1.25),
        ),
        min_minutes=2.0,
    ),
    Measure(
        "isa_latency",
        "benchmarks.gpu.isa_latency",
        lambda minutes, path: ["--lengths", "16384", "32768", "--max-minutes", f"{minutes:.2f}", "--json", str(path)],
        (("isa_triton_latency_ratio_64k", "<=", 0.4), ("isa_triton_cosine_min", ">=", 0.99)),
        min_minutes=1.5,
    ),
    Measure(
        "itc_short",
        "benchmarks.gpu.itc_minatar_cuda",
        lambda minutes, path: [
            "--games",
            "breakout",
            "--wm-minutes",
            "0.5",
            "--agent-seconds",
            f"{max(5.0, 60 * (minutes - 1.0)) / 2:.1f}",
            "--set",
            "seeds=1",
            "--json",
            str(path),
        ],
        (),
        min_minutes=1.5,
    ),
    Measure(
        "arbg_short",
        "benchmarks.gpu.arbg_alanine",
        lambda minutes, path: ["--max-train-minutes", f"{max(0.5, minutes - 1.0):.2f}", "--json", str(path)],
        (("ess_min", ">=", 0.01), ("e_w2_max", "<=", 1.0)),
        min_minutes=1.5,
    ),
)


def plan(minutes: float) -> list[dict[str, Any]]:
    """The stages in run order with their time share: checks first, then each row with the minutes left for it."""
    if not minutes > 0:
        raise ValueError(f"--minutes must be positive, got {minutes!r}")
    rows = [
        {
            "stage": f"check_{c.name}",
            "dtypes": ", ".join(str(d).removeprefix("torch.") for d in c.dtypes),
            "seconds": c.estimate_s,
        }
        for c in CHECKS
    ]
    left = minutes * 60 - sum(c.estimate_s for c in CHECKS)
    for i, m in enumerate(MEASURES):
        share = max(m.min_minutes * 60, left / (len(MEASURES) - i)) if left > 0 else 0.0
        rows.append({"stage": m.name, "dtypes": "", "seconds": min(share, max(left, 0.0))})
        left -= share
    return rows


def build_targets(checks: dict[str, dict[str, Any]], measures: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``check_<name>_<dtype>`` and ``<stage>.<target>`` for every check and headline target (``nan`` if not run).

    Example:
        >>> t = build_targets({"sdpa_float32": {"error": 2e-6, "tolerance": 1e-3}}, {})
        >>> t["check_sdpa_float32"]["met"], t["check_sdpa_bfloat16"]["met"]
        (True, False)
        >>> t["isa_latency.isa_triton_cosine_min"]["value"]
        nan
    """
    targets: dict[str, dict[str, Any]] = {}
    for c in CHECKS:
        for dtype in c.dtypes:
            key = f"{c.name}_{str(dtype).removeprefix('torch.')}"
            row = checks.get(key, {})
            targets[f"check_{key}"] = target(row.get("error", math.nan), "<=", c.tolerance[dtype])
    for m in MEASURES:
        got = measures.get(m.name, {}).get("targets", {})
        for name, op, threshold in m.headline:
            value = got.get(name, {}).get("value", math.nan)
            targets[f"{m.name}.{name}"] = target(math.nan if value is None else value, op, threshold)
    return targets


def _device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else str(device)


def _targets_of(record: Any) -> dict[str, Any]:
    if not isinstance(record, dict):
        return {}
    found = record.get("targets")
    if isinstance(found, dict):
        return found
    figures = record.get("figures")
    return _targets_of(figures) if isinstance(figures, dict) else {}


def run(
    args: argparse.Namespace,
    device: torch.device | None,
    budget: Budget,
    write: Callable[[dict[str, Any]], None],
) -> dict[str, Any]:
    """Run (or, with ``device=None``, plan only) the checks then the rows; ``write`` gets the figures after each."""
    figures: dict[str, Any] = {
        "complete": False,
        "device": None if device is None else _device_name(device),
        "dry_run": device is None,
        "plan": plan(args.minutes),
        "checks": {},
        "measures": {},
        "skipped": [],
    }

    def flush() -> None:
        figures["targets"] = build_targets(figures["checks"], figures["measures"])
        figures["seconds_used"] = budget.seconds - budget.left()
        write(figures)

    flush()
    for c in CHECKS:
        for dtype in c.dtypes:
            key = f"{c.name}_{str(dtype).removeprefix('torch.')}"
            if device is None or not budget.fits(c.estimate_s):
                figures["skipped"].append(key)
                continue
            start = time.monotonic()
            try:
                err = float(c.fn(device, dtype))
                figures["checks"][key] = {
                    "error": err,
                    "tolerance": c.tolerance[dtype],
                    "ok": err <= c.tolerance[dtype],
                }
            except Exception as exc:  # a failing path is a result: it is recorded and the run goes on
                figures["checks"][key] = {
                    "error": math.nan,
                    "ok": False,
                    "exception": repr(exc)[:500],
                    "traceback": traceback.format_exc()[-2000:],
                }
            figures["checks"][key]["seconds"] = time.monotonic() - start
            flush()
    for i, m in enumerate(MEASURES):
        minutes = budget.left() / 60 / (len(MEASURES) - i) if i < len(MEASURES) - 1 else budget.left() / 60
        minutes = max(minutes, m.min_minutes)
        if device is None or not budget.fits(m.min_minutes * 60):
            figures["skipped"].append(m.name)
            continue
        minutes = min(minutes, budget.left() / 60)
        path = (
            args.json.with_name(f"{args.json.stem}_{m.name}.json") if args.json else Path(tempfile.mkdtemp()) / "x.json"
        )
        start = time.monotonic()
        try:
            module = __import__(m.module, fromlist=["main"])
            record = module.main(m.argv(minutes, path))
            figures["measures"][m.name] = {"targets": _targets_of(record), "json": str(path), "minutes_given": minutes}
        except SystemExit as exc:
            figures["measures"][m.name] = {"targets": {}, "exception": f"SystemExit({exc.code})"}
        except Exception as exc:
            figures["measures"][m.name] = {
                "targets": {},
                "exception": repr(exc)[:500],
                "traceback": traceback.format_exc()[-2000:],
            }
        figures["measures"][m.name]["seconds"] = time.monotonic() - start
        flush()
    figures["complete"] = True
    flush()
    return figures


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line: ``--minutes``, ``--json``, ``--dry-run``, ``--seed``."""
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--minutes", type=float, default=10.0, help="wall-clock budget of the whole run")
    p.add_argument("--json", type=Path, default=DEFAULT_JSON, metavar="PATH")
    p.add_argument("--dry-run", action="store_true", help="print the plan and write the JSON; no GPU needed")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if not args.minutes > 0:
        p.error(f"--minutes must be positive, got {args.minutes}")
    return args


def main(argv: Sequence[str] | None = None, budget: Budget | None = None) -> dict[str, Any]:
    """Run the acceptance checks and rows (or the dry run); returns the figures, also written to ``--json``."""
    args = parse_args(argv)
    device = None
    if not args.dry_run:
        if not torch.cuda.is_available():
            raise SystemExit("benchmarks/gpu/acceptance.py needs a CUDA device (use --dry-run to see the plan)")
        device = torch.device("cuda")
    budget = budget or Budget(args.minutes * 60)

    def write(figures: dict[str, Any]) -> None:
        write_json(args.json, "gpu_acceptance", json.loads(json.dumps(figures, default=str)), args)

    figures = run(args, device, budget, write)
    print(markdown_table(figures["plan"]))
    print_targets(figures["targets"])
    return figures


if __name__ == "__main__":
    main()
