"""UPipe vs Ulysses activation memory at a Llama-3-8B layer shape, longest sequence, and CPU throughput.

Memory is accounted at full size on ``meta`` tensors by :func:`lightning_icml26.strategies.upipe_memory.
upipe_memory_figures`: the real code path (projections, RoPE, all-to-all on a ``fake`` group of ``P`` ranks, the
kernel's shape function, autograd) runs for one rank and every tensor storage it creates is counted. Scopes:
``attn`` (the attention operator, ``o_proj`` left out), ``layer`` (one decoder layer: RMSNorm, attention,
RMSNorm, SwiGLU MLP 3.5x hidden) and ``model`` (four layers under activation checkpointing, searched for the
longest sequence only). ``--paper-config`` (default) runs layer and model as the paper benchmarks both arms:
checkpointing, the MLP tiled along the sequence and the checkpoints' inputs offloaded to the host (the strategy's
``activation_checkpointing`` / ``tiled_mlp`` / ``offload_activations``); ``--lean-norm`` computes RMSNorm in row
tiles (``RowTiledRMSNorm``: no full-size fp32 temporaries, as CUDA's fused kernel).

Figures per method and ``P``: ``fwd_transient`` (forward peak minus the output), ``peak`` (forward + backward,
weight gradients left out), ``const`` (weights and their gradients); ``max_seq`` is the longest global sequence
whose ``peak`` stays under Ulysses' peak at the base length (8 x hidden tokens per rank). ``tokens_per_s``: two
real gloo ranks on CPU at a smaller size (H = 32, G = 8, head_dim 32, hidden 1024), forward + backward of the
attention with ``o_proj`` (:func:`lightning_icml26.strategies.upipe_memory.attention_throughput`).

Run: ``python -m benchmarks.upipe_memory [--quick] [--scope attn|layer|all] [--world 2,4] [--no-paper-config]
[--lean-norm] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, write_json
from lightning_icml26.strategies import LayerShape, attention_throughput, upipe_memory_figures

METHODS = ("ulysses", "upipe")
MIB = 2.0**20


def add_shape_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the layer-shape flags that the UPipe memory scripts share (``--world`` to ``--dtype``)."""
    parser.add_argument("--world", default="2,4", help="context-parallel sizes (a fake group of P ranks)")
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4, help="layers of the model scope")
    parser.add_argument("--seq", type=int, default=0, help="base global sequence (default 8 x hidden per rank)")
    parser.add_argument("--dtype", choices=("bf16", "fp16", "fp32"), default="bf16")


def shape_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace, **extra: Any) -> LayerShape:
    """The :class:`LayerShape` of the flags of :func:`add_shape_arguments`; sets ``args.worlds``.

    Bad values end in ``parser.error`` naming the flag.
    """
    for name in ("hidden", "heads", "kv_heads", "head_dim", "layers"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.heads % args.kv_heads:
        parser.error(f"--heads ({args.heads}) must be divisible by --kv-heads ({args.kv_heads})")
    try:
        args.worlds = [int(w) for w in args.world.split(",")]
    except ValueError:
        parser.error(f"--world must be comma-separated integers, got {args.world!r}")
    if any(w < 1 or args.heads % w for w in args.worlds):
        parser.error(f"every --world size must be >= 1 and divide --heads ({args.heads}), got {args.worlds}")
    if args.seq < 0 or (args.seq and any(args.seq % w for w in args.worlds)):
        parser.error(f"--seq={args.seq} must be 0 (default) or divisible by every --world size {args.worlds}")
    return LayerShape(args.hidden, args.heads, args.kv_heads, args.head_dim, args.dtype, 1, args.layers, **extra)


def relative(figs: dict[str, Any], scope: str, world: int, key: str) -> float:
    """UPipe / Ulysses of ``key`` in ``figs[scope][world]`` (``nan`` where either was not measured)."""
    rows = figs.get(scope, {}).get(world, {})
    up, uly = rows.get("upipe", {}), rows.get("ulysses", {})
    return ratio(float(up[key]), float(uly[key])) if key in up and key in uly else float("nan")


def build_targets(figs: dict[str, Any], rates: dict[str, list[float]] | None) -> dict[str, dict[str, Any]]:
    """The issue's targets, UPipe / Ulysses, at P = 2 and P = 4 (``nan``, i.e. missed, for what was not run)."""
    targets: dict[str, dict[str, Any]] = {}
    for p in (2, 4):
        targets[f"attn_fwd_transient_P{p}"] = target(relative(figs, "attn", p, "fwd_transient"), "<=", 0.15)
        targets[f"attn_peak_P{p}"] = target(relative(figs, "attn", p, "peak"), "<=", 0.35)
        targets[f"layer_peak_P{p}"] = target(relative(figs, "layer", p, "peak"), "<=", 0.6)
        targets[f"attn_max_seq_P{p}"] = target(relative(figs, "attn", p, "max_seq"), ">=", 1.8)
        targets[f"model_ckpt_max_seq_P{p}"] = target(relative(figs, "model", p, "max_seq"), ">=", 1.25)
    tput = float("nan")
    if rates:
        tput = ratio(sum(rates["upipe"]) / len(rates["upipe"]), sum(rates["ulysses"]) / len(rates["ulysses"]))
    targets["tokens_per_s_P2"] = target(tput, ">=", 0.9)
    return targets


def cuda_targets(figs: dict[str, Any], worlds: list[int]) -> dict[str, dict[str, Any]]:
    """The targets of ``benchmarks/gpu/upipe_memory_cuda.py`` (UPipe / Ulysses on a GPU) at each ``P``."""
    targets: dict[str, dict[str, Any]] = {}
    for p in worlds:
        targets[f"cuda_attn_peak_P{p}"] = target(relative(figs, "attn", p, "peak"), "<=", 0.35)
        targets[f"cuda_attn_max_seq_P{p}"] = target(relative(figs, "attn", p, "max_seq"), ">=", 1.8)
        targets[f"cuda_model_ckpt_max_seq_P{p}"] = target(relative(figs, "model", p, "max_seq"), ">=", 1.25)
    return targets


def table(figs: dict[str, Any], unit: float = MIB, suffix: str = "MiB") -> list[dict[str, Any]]:
    """One row per scope, ``P`` and method; sizes in ``unit`` and ratios to Ulysses."""
    rows = []
    for scope, per_world in figs.items():
        for world, per_method in per_world.items():
            base = per_method.get("ulysses", {})  # absent when a capped run stopped before it
            for m, r in per_method.items():
                row: dict[str, Any] = {"scope": scope, "P": world, "method": m, "S_base": r["seq"]}
                for key in ("fwd_transient", "peak", "const", "host_offloaded", "max_seq"):
                    if key in r and key != "max_seq":
                        row[f"{key}_{suffix}"] = r[key] / unit
                    if key in ("fwd_transient", "peak", "max_seq") and key in r:
                        row[f"{key}/uly"] = ratio(r[key], base[key]) if key in base else float("nan")
                if "max_seq" in r:
                    row["max_seq"] = r["max_seq"]
                rows.append(row)
    return rows


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--scope", choices=("attn", "layer", "all"), default="all")
    add_shape_arguments(parser)
    parser.add_argument(
        "--paper-config",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="layer and model scopes checkpointed, MLP tiled, checkpoint inputs offloaded (as the paper runs both)",
    )
    parser.add_argument("--lean-norm", action="store_true", help="RMSNorm in row tiles (both arms)")
    args = parser.parse_args()
    shape = shape_arguments(parser, args, lean_norm=args.lean_norm)
    scopes = {"attn": ["attn"], "layer": ["layer", "model"], "all": ["attn", "layer", "model"]}[args.scope]
    start = time.perf_counter()
    figs = upipe_memory_figures(shape, scopes, args.worlds, seq=args.seq, paper_config=args.paper_config)
    mem_s = time.perf_counter() - start
    tcfg = {"seed": args.seed, "hidden": 1024, "heads": 32, "kv_heads": 8, "head_dim": 32}
    tcfg |= {"seq": 1024 if args.quick else 4096, "iters": 2 if args.quick else 4}
    rates = attention_throughput(**tcfg)
    print(f"UPipe vs Ulysses, {shape}, per-rank bytes on meta tensors ({mem_s:.0f} s)\n")
    print(markdown_table(table(figs)))
    tput = [{"method": m, "tokens_per_s": sum(r) / len(r), "min": min(r), "max": max(r)} for m, r in rates.items()]
    print(f"\nThroughput, 2 gloo ranks on CPU, S={tcfg['seq']}, hidden={tcfg['hidden']}, {tcfg['iters']} iters:\n")
    print(markdown_table(tput))
    targets = build_targets(figs, rates)
    print_targets(targets)
    cfg = {"batch": 1, **vars(shape), "seq": args.seq, "paper_config": args.paper_config}
    figures: dict[str, Any] = {
        "config": cfg,
        "worlds": args.worlds,
        "memory": {str(s): {str(w): r for w, r in pw.items()} for s, pw in figs.items()},
        "throughput": {"config": tcfg, "tokens_per_s": rates},
        "targets": targets,
    }
    write_json(args.json, "upipe_memory", figures, args)


if __name__ == "__main__":
    main()
