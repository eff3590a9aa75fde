"""UPipe vs Ulysses vs ring attention on 2 gloo ranks: peak memory, saved bytes, longest sequence, throughput.

One Llama-style attention layer (``UPipeAttention``: q/k/v/o projections, RoPE, GQA with H = 32, G = 8) runs
forward + backward on each rank with each backend, same weights and inputs:

1. ``peak_MiB``: peak live tensor bytes per rank during forward + backward (``LiveBytesTracker``, a
   ``TorchDispatchMode`` counting storages created in the region: activations, exchange buffers, gradients;
   the layer input, weights and upstream gradient exist before and are not counted); ``transient_MiB``
   is that peak minus what is still alive at the end (the input and weight gradients, equal for all methods);
2. ``saved_MiB``: bytes saved for backward (``saved_tensors_hooks``, distinct storages, input and weights
   excluded);
3. ``max_seq``: the longest global sequence whose peak stays under a cap = Ulysses' peak at the base length
   (doubling then bisection, granularity ``2 * P * 64`` tokens);
4. ``tokens_per_s``: global tokens per second of forward + backward at the base length (no tracker).

CPU proxy: gloo on loopback, the CPU flash-attention kernel; GPU throughput is not measured here.
Run: ``python benchmarks/upipe_memory.py [--quick] [--json PATH]``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, write_json

METHODS = ("ulysses", "ring", "upipe")
LAYOUT = {"ulysses": "contiguous", "ring": "headtail", "upipe": "contiguous"}
MIB = 2.0**20


def _layer(method: str, cfg: dict[str, Any], cp: Any) -> torch.nn.Module:
    from lightning_icml26.ops.attention import UPipeAttention

    torch.manual_seed(cfg["seed"])
    return UPipeAttention(cfg["hidden"], cfg["heads"], cfg["kv_heads"], backend=method, cp=cp, layout=LAYOUT[method])


def _inputs(cfg: dict[str, Any], seq: int, world: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(cfg["seed"] + dist.get_rank())
    x = torch.randn(cfg["batch"], seq // world, cfg["hidden"], generator=gen).requires_grad_()
    dy = torch.randn(cfg["batch"], seq // world, cfg["hidden"], generator=gen)
    return x, dy


def _peak(layer: torch.nn.Module, cfg: dict[str, Any], seq: int, world: int) -> tuple[int, int, int]:
    from lightning_icml26.ops.attention import LiveBytesTracker, SavedTensorBytes

    x, dy = _inputs(cfg, seq, world)
    for p in layer.parameters():
        p.grad = None
    with LiveBytesTracker() as mem:
        with SavedTensorBytes(exclude=[x, *layer.parameters()]) as saved:
            y = layer(x)
        y.backward(dy)
        del y
        kept = mem.current  # x.grad and the weight gradients: results every method must produce
    stats = torch.tensor([mem.peak, saved.bytes, mem.peak - kept], dtype=torch.float64)
    dist.all_reduce(stats, op=dist.ReduceOp.MAX)
    return int(stats[0]), int(stats[1]), int(stats[2])


def _longest(layer: torch.nn.Module, cfg: dict[str, Any], cap: int, world: int) -> int:
    step = 2 * world * 64
    lo, hi = 0, cfg["seq"]
    while _peak(layer, cfg, hi, world)[0] <= cap and hi < cfg["max_seq"]:
        lo, hi = hi, min(2 * hi, cfg["max_seq"])
    if lo == hi or (hi == cfg["max_seq"] and _peak(layer, cfg, hi, world)[0] <= cap):
        return hi
    lo = max(lo, step)
    while hi - lo > step:
        mid = (lo + hi) // 2 // step * step
        if _peak(layer, cfg, mid, world)[0] <= cap:
            lo = mid
        else:
            hi = mid
    return lo


def _throughput(layer: torch.nn.Module, cfg: dict[str, Any], world: int) -> float:
    x, dy = _inputs(cfg, cfg["seq"], world)
    layer(x).backward(dy)  # warm-up
    dist.barrier()
    start = time.perf_counter()
    for _ in range(cfg["iters"]):
        layer(x).backward(dy)
    elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    return cfg["seq"] * cfg["batch"] * cfg["iters"] / float(elapsed)


def _worker(rank: int, world: int, port: int, cfg: dict[str, Any], queue: Any) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        from lightning_icml26.distributed import ContextParallelGroup

        cp = ContextParallelGroup(dist.new_group(list(range(world))))
        layers = {m: _layer(m, cfg, cp) for m in METHODS}
        rows: dict[str, dict[str, float]] = {}
        for m in METHODS:
            _peak(layers[m], cfg, cfg["seq"], world)  # warm-up: first calls may allocate caches
            peak, saved, transient = _peak(layers[m], cfg, cfg["seq"], world)
            rows[m] = {
                "peak_MiB": peak / MIB,
                "transient_MiB": transient / MIB,
                "saved_MiB": saved / MIB,
                "peak_bytes": peak,
            }
        cap = int(rows["ulysses"]["peak_bytes"])
        for m in METHODS:
            rows[m]["max_seq"] = _longest(layers[m], cfg, cap, world)
            rows[m]["tokens_per_s"] = _throughput(layers[m], cfg, world)
        if rank == 0:
            queue.put(("ok", rows))
    except BaseException as err:
        queue.put(("error", repr(err)))
        raise
    finally:
        dist.destroy_process_group()


def run(cfg: dict[str, Any], world: int = 2) -> dict[str, dict[str, float]]:
    """Spawn ``world`` gloo ranks and return per-method figures (max over ranks)."""
    from tests._support.distributed import free_port

    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    port = free_port()
    procs = [ctx.Process(target=_worker, args=(r, world, port, cfg, queue)) for r in range(world)]
    for p in procs:
        p.start()
    status, payload = queue.get()
    for p in procs:
        p.join()
    if status != "ok":
        raise RuntimeError(f"benchmark rank failed: {payload}")
    return payload


def build_targets(rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """UPipe against Ulysses on one layer: peak memory, longest sequence and throughput ratios."""
    up, base = rows["upipe"], rows["ulysses"]
    return {
        "peak_over_ulysses": target(ratio(up["peak_MiB"], base["peak_MiB"]), "<=", 0.25),
        "max_seq_over_ulysses": target(ratio(up["max_seq"], base["max_seq"]), ">=", 1.25),
        "throughput_over_ulysses": target(ratio(up["tokens_per_s"], base["tokens_per_s"]), ">=", 0.9),
    }


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--world", type=int, default=2)
    args = parser.parse_args()
    cfg = {
        "seed": args.seed,
        "batch": 1,
        "heads": 32,
        "kv_heads": 8,
        "hidden": 256 if args.quick else 512,
        "seq": 1024 if args.quick else 2048,
        "max_seq": 4096 if args.quick else 8192,
        "iters": 2 if args.quick else 3,
    }
    rows = run(cfg, args.world)
    base = rows["ulysses"]
    table = []
    for m in METHODS:
        r = rows[m]
        table.append(
            {
                "method": m,
                "peak_MiB": r["peak_MiB"],
                "peak/ulysses": ratio(r["peak_MiB"], base["peak_MiB"]),
                "transient_MiB": r["transient_MiB"],
                "transient/ulysses": ratio(r["transient_MiB"], base["transient_MiB"]),
                "saved_MiB": r["saved_MiB"],
                "saved/ulysses": ratio(r["saved_MiB"], base["saved_MiB"]),
                "max_seq": r["max_seq"],
                "max_seq/ulysses": ratio(r["max_seq"], base["max_seq"]),
                "tokens_per_s": r["tokens_per_s"],
                "tput/ulysses": ratio(r["tokens_per_s"], base["tokens_per_s"]),
            }
        )
    head_dim = cfg["hidden"] // cfg["heads"]
    print(
        f"UPipe attention layer, {args.world} gloo ranks, H={cfg['heads']}, G={cfg['kv_heads']}, d={head_dim}, "
        f"base S={cfg['seq']}, cap = Ulysses peak at base S, search up to S={cfg['max_seq']} (CPU proxy)\n"
    )
    print(markdown_table(table))
    targets = build_targets(rows)
    print_targets(targets)
    figures: dict[str, Any] = {"config": cfg, "world": args.world, "rows": table, "targets": targets}
    try:
        from benchmarks.upipe_e2e import run_e2e
    except ImportError as err:
        print(f"\n(end-to-end training step not run: {err})")
    else:
        e2e = run_e2e(args.quick)
        print("\n## End-to-end training step\n")
        print(markdown_table(e2e))
        figures["end_to_end"] = e2e
    write_json(args.json, "upipe_memory", figures, args)


if __name__ == "__main__":
    main()
