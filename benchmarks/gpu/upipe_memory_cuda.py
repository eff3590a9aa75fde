"""UPipe vs Ulysses vs plain SDPA on one CUDA GPU: peak memory and longest sequence at a Llama-3-8B layer shape.

The memory benchmark of ``benchmarks/upipe_memory.py`` on a real device: one rank's work (projections, RoPE, the
all-to-all on a ``fake`` process group of ``P`` ranks, the CUDA attention kernel, autograd) runs on the GPU and
``torch.cuda.max_memory_allocated`` gives the peak. Plain SDPA is the same layer with the whole sequence on one
GPU (no context parallelism). Scopes:

* ``attn``: the attention operator (projections and RoPE, ``o_proj`` left out);
* ``model``: four Llama decoder layers in the paper's benchmark setting, the same for every method: activation
  checkpointing per layer, a tiled SwiGLU MLP (``benchmarks.upipe_memory.mlp_tiles``) and the checkpointed
  inputs offloaded to pinned host memory (``torch.autograd.graph.save_on_cpu``).

``peak`` is the forward + backward peak of activations (layer input and upstream gradient included, weights and
weight gradients left out), as on meta tensors. The longest sequence of each method is the longest global
sequence whose ``peak`` stays under Ulysses' peak at the base length (8 x hidden tokens per rank), found by
doubling then bisection to 1 % (an out-of-memory error counts as not fitting). A wall-clock cap
(``--max-minutes``) stops the search and writes what was measured (``"partial": true``).

    python -m benchmarks.gpu.upipe_memory_cuda --json benchmarks/results/upipe_memory_cuda.json   # one H200, < 8 min
    python -m benchmarks.gpu.upipe_memory_cuda --device cpu --hidden 64 --heads 8 --kv-heads 2 --head-dim 16 \\
        --world 2 --max-minutes 1   # the pieces on CPU (or --device meta): bytes from the live-tensor tracker
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

from benchmarks._common import markdown_table, print_targets, ratio, target, write_json
from benchmarks.upipe_memory import (
    DTYPES,
    _build,
    _fake_group,
    add_shape_arguments,
    check_shape_arguments,
    longest,
    mlp_tiles,
    shape_config,
)
from benchmarks.upipe_memory import measure as measure_tracked
from lightning_icml26.distributed import ContextParallelGroup

METHODS = ("ulysses", "upipe", "sdpa")
GIB = 2.0**30


class OutOfTime(Exception):
    """The wall-clock cap was reached."""


class HostOffload:
    """Offloads what checkpointed blocks save to host memory (``save_on_cpu``, pinned on CUDA)."""

    def __init__(self, pin_memory: bool) -> None:
        self.pin_memory = pin_memory

    def hooks(self) -> Any:
        return torch.autograd.graph.save_on_cpu(pin_memory=self.pin_memory)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (see the module docstring); raises ``SystemExit`` on bad values.

    The layer-shape flags (``--world``, ``--hidden``, ``--heads``, ``--kv-heads``, ``--head-dim``, ``--seq``,
    ``--dtype``) and their checks are those of ``benchmarks/upipe_memory.py``.
    """
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--json", type=Path, default=None, metavar="PATH")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cuda")
    p.add_argument("--scope", default="attn,model", help="comma-separated: attn, model")
    add_shape_arguments(p)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--max-minutes", type=float, default=7.0, help="wall-clock cap; partial JSON after it")
    args = p.parse_args(argv)
    check_shape_arguments(p, args)
    if args.layers < 1:
        p.error(f"--layers must be >= 1, got {args.layers}")
    args.scopes = args.scope.split(",")
    if not args.scopes or any(s not in ("attn", "model") for s in args.scopes):
        p.error(f"--scope must be comma-separated names among attn, model, got {args.scope!r}")
    if not args.max_minutes > 0:
        p.error(f"--max-minutes must be positive, got {args.max_minutes}")
    return args


def check_device(device: str) -> torch.device:
    """The device to run on; raises ``SystemExit`` with a clear message when CUDA is asked for and absent."""
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(
            "upipe_memory_cuda.py needs a CUDA GPU (torch.cuda.is_available() is False): run it on a GPU"
            " machine; on CPU the memory figures come from benchmarks/upipe_memory.py (bytes on meta tensors)"
        )
    if dev.type not in ("cuda", "cpu", "meta"):
        raise SystemExit(f"--device must be cuda, cpu or meta, got {device!r}")
    return dev


def build(scope: str, method: str, cfg: dict[str, Any], world: int, device: torch.device) -> tuple[nn.Module, int]:
    """The module of ``scope`` for ``method`` and its world size (plain SDPA: the whole sequence, one rank)."""
    if method == "sdpa":
        cp, backend, size = ContextParallelGroup(), "dense", 1
    else:
        cp, backend, size = _fake_group(world), method, world
    module = _build(scope, backend, cfg, cp, device=str(device), paper=scope == "model", world=size)
    if scope == "model" and device.type == "cuda":  # elsewhere the byte model of upipe_memory stays
        module.offload = HostOffload(pin_memory=True)  # type: ignore[assignment]
    return module, size


def measure_cuda(module: nn.Module, cfg: dict[str, Any], seq: int, world: int) -> dict[str, int]:
    """Peak activation bytes of one forward + backward at global length ``seq`` on CUDA (OOM: infinite)."""
    dtype = DTYPES[cfg["dtype"]]
    device = next(module.parameters()).device
    for p in module.parameters():
        p.grad = None
    x = y = None
    try:
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
        x = torch.randn(cfg["batch"], seq // world, cfg["hidden"], device=device, dtype=dtype).requires_grad_()
        start = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        y = module(x)
        y.backward(torch.randn_like(y))
        torch.cuda.synchronize(device)
        peak = torch.cuda.max_memory_allocated(device) - start
    except torch.cuda.OutOfMemoryError:
        return {"peak": sys.maxsize}
    finally:
        del x, y
    weight_grads = sum(p.grad.numel() * p.grad.element_size() for p in module.parameters() if p.grad is not None)
    return {"peak": peak - weight_grads + seq // world * cfg["hidden"] * torch.finfo(dtype).bits // 8}


def run(args: argparse.Namespace) -> tuple[dict[str, Any], bool]:
    """``({scope: {P: {method: figures}}}, partial)``; stops at the wall-clock cap or an error (``"stopped"``)."""
    device = check_device(args.device)
    cfg = shape_config(args) | {"layers": args.layers}
    deadline = time.monotonic() + 60 * args.max_minutes

    def timed(module: nn.Module, c: dict[str, Any], seq: int, world: int) -> dict[str, int]:
        if time.monotonic() > deadline:
            raise OutOfTime
        return (measure_cuda if device.type == "cuda" else measure_tracked)(module, c, seq, world)

    figs: dict[str, Any] = {}
    try:
        for scope in args.scopes:
            for world in args.worlds:
                base = args.seq or 8 * args.hidden * world
                rows: dict[str, dict[str, Any]] = {}
                figs.setdefault(scope, {})[str(world)] = rows
                for method in METHODS:
                    torch.manual_seed(args.seed)
                    module, size = build(scope, method, cfg, world, device)
                    rows[method] = {"seq": base, "peak": timed(module, cfg, base, size)["peak"]}
                    if scope == "model":
                        rows[method]["mlp_tiles"] = mlp_tiles(cfg, size)
                    del module
                cap = rows["ulysses"]["peak"]
                for method in METHODS:
                    module, size = build(scope, method, cfg, world, device)
                    start = base if method != "sdpa" else max(8, base // world // 8 * 8)
                    rows[method]["max_seq"] = longest(module, cfg, cap, size, start, measure_fn=timed)
                    del module
    except OutOfTime:
        figs["stopped"] = f"wall-clock cap of {args.max_minutes} min reached"
        return figs, True
    except Exception as error:  # keep what was measured; the JSON says why the run stopped
        figs["stopped"] = f"{type(error).__name__}: {error}"
        return figs, True
    return figs, False


def _rel(figs: dict[str, Any], scope: str, world: int, key: str, method: str = "upipe") -> float:
    rows = figs.get(scope, {}).get(str(world), {}) if scope != "stopped" else {}
    if method not in rows or "ulysses" not in rows or key not in rows[method] or key not in rows["ulysses"]:
        return float("nan")
    return ratio(float(rows[method][key]), float(rows["ulysses"][key]))


def build_targets(figs: dict[str, Any], worlds: list[int]) -> dict[str, dict[str, Any]]:
    """The issue's targets (UPipe / Ulysses) on CUDA; ``nan``, i.e. missed, for what was not measured."""
    targets: dict[str, dict[str, Any]] = {}
    for p in worlds:
        targets[f"cuda_attn_peak_P{p}"] = target(_rel(figs, "attn", p, "peak"), "<=", 0.35)
        targets[f"cuda_attn_max_seq_P{p}"] = target(_rel(figs, "attn", p, "max_seq"), ">=", 1.8)
        targets[f"cuda_model_ckpt_max_seq_P{p}"] = target(_rel(figs, "model", p, "max_seq"), ">=", 1.25)
    return targets


def _table(figs: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for scope, per_world in figs.items():
        if scope == "stopped":
            continue
        for world, per_method in per_world.items():
            uly = per_method.get("ulysses", {})
            for method, r in per_method.items():
                row: dict[str, Any] = {"scope": scope, "P": world, "method": method, "S_base": r["seq"]}
                row["peak_GiB"] = r["peak"] / GIB
                row["peak/uly"] = ratio(r["peak"], uly["peak"]) if "peak" in uly else float("nan")
                if "max_seq" in r:
                    row["max_seq"] = r["max_seq"]
                    row["max_seq/uly"] = ratio(r["max_seq"], uly["max_seq"]) if "max_seq" in uly else float("nan")
                rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; return the JSON figures (also written to ``--json``)."""
    args = parse_args(argv)
    start = time.perf_counter()
    figs, partial = run(args)
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    print(markdown_table(_table(figs)))
    if "stopped" in figs:
        print(f"\nStopped early: {figs['stopped']}")
    targets = build_targets(figs, args.worlds)
    print_targets(targets)
    device_name = torch.cuda.get_device_name() if args.device.startswith("cuda") else args.device
    record = {
        "memory": figs,
        "partial": partial,
        "wall_s": time.perf_counter() - start,
        "device": device_name,
        "targets": targets,
    }
    write_json(args.json, "upipe_memory_cuda", record, args)
    return record


if __name__ == "__main__":
    main()
