"""UPipe vs Ulysses activation memory at a Llama-3-8B layer shape, longest sequence, and CPU throughput.

Memory is accounted at full size on ``meta`` tensors: the real code path (projections, RoPE, all-to-all on a
``fake`` process group of ``P`` ranks, the attention kernel's shape function, autograd) runs for one rank, and
``LiveBytesTracker(include_meta=True)`` records every tensor storage it creates, without computing anything. All
ranks hold the same shapes, so one rank's figure is every rank's. Scopes:

* ``attn``: the attention operator, projections and RoPE included, ``o_proj`` left out (its output is the
  ``(batch, seq_local, H * head_dim)`` attention output);
* ``layer``: one decoder layer (RMSNorm, attention with ``o_proj``, RMSNorm, SwiGLU MLP of width 3.5x hidden);
* ``model``: four such layers, each under activation checkpointing (``torch.utils.checkpoint``), searched for
  the longest sequence only.

``--paper-config`` (default; ``--no-paper-config`` gives the earlier figures) runs the ``layer`` and ``model``
scopes as the paper's benchmark runs both UPipe and the Ulysses baseline: every layer under activation
checkpointing, the MLP tiled along the sequence (:mod:`lightning_icml26.ops.tiled_mlp`; ``mlp_tiles`` tiles, so
that a tile's intermediate is at most one UPipe stage's query buffer, the same for both arms) and the inputs the
checkpoints keep offloaded to the host. Offloading is modelled by ``saved_tensors_hooks`` (``OffloadModel``):
a packed tensor leaves the device count, its bytes are reported apart as ``host_offloaded``, and unpacking
allocates it again on the device. ``--lean-norm`` computes RMSNorm in row tiles (``RowTiledRMSNorm``, same
results): PyTorch's CPU / meta ``rms_norm`` is a composite whose backward holds several full-size fp32
temporaries that CUDA's fused kernel does not allocate.

Figures per method and ``P``: ``fwd_transient`` (forward peak minus the output, the paper's accounting),
``peak`` (forward + backward peak of the activations, the layer input and its upstream gradient included; the
weight gradients left out) and ``const`` (weights and their gradients, the same for every method, reported
apart). ``max_seq`` is the longest global sequence whose ``peak`` stays under Ulysses' peak at the base length
(``--seq``, default 8 x hidden tokens per rank), found by doubling then bisection to 1 %.

Throughput cannot come from meta tensors: ``tokens_per_s`` is measured on two real gloo ranks on CPU at a
smaller size (H = 32, G = 8, head_dim 32), forward + backward of the attention with ``o_proj``.
Run: ``python -m benchmarks.upipe_memory [--quick] [--scope attn|layer|all] [--world 2,4] [--no-paper-config]
[--lean-norm] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import os
import time
import weakref
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.testing._internal.distributed.fake_pg import FakeStore
from torch.utils.checkpoint import checkpoint

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, write_json
from lightning_icml26.distributed import ContextParallelGroup
from lightning_icml26.ops.attention import LiveBytesTracker, UPipeAttention
from lightning_icml26.ops.tiled_mlp import TiledForward

METHODS = ("ulysses", "upipe")
MIB = 2.0**20
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


class _RowTiledRMSNormFn(torch.autograd.Function):
    """RMSNorm over the last dimension, computed in tiles of rows: no full-size fp32 temporaries."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, eps: float, rows: int) -> torch.Tensor:  # type: ignore[override]
        acc = torch.promote_types(x.dtype, torch.float32)
        x2 = x.reshape(-1, x.shape[-1])
        out = torch.empty_like(x2)
        rstd = torch.empty(x2.shape[0], 1, dtype=acc, device=x.device)
        for s in range(0, x2.shape[0], rows):
            xt = x2[s : s + rows].to(acc)
            r = torch.rsqrt(xt.pow(2).mean(-1, keepdim=True) + eps)
            rstd[s : s + rows] = r
            out[s : s + rows] = (xt * r * weight.to(acc)).to(x.dtype)
        ctx.save_for_backward(x, weight, rstd)
        ctx.rows = rows
        return out.view_as(x)

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:  # type: ignore[override]
        x, weight, rstd = ctx.saved_tensors
        rows = ctx.rows
        x2, dy2 = x.reshape(-1, x.shape[-1]), dy.reshape(-1, x.shape[-1])
        acc = rstd.dtype
        dx = torch.empty_like(x2)
        dw = torch.zeros(x.shape[-1], dtype=acc, device=x.device)
        for s in range(0, x2.shape[0], rows):
            n = x2[s : s + rows].to(acc) * rstd[s : s + rows]
            dyt = dy2[s : s + rows].to(acc)
            g = dyt * weight.to(acc)
            dx[s : s + rows] = (rstd[s : s + rows] * (g - n * (g * n).mean(-1, keepdim=True))).to(x.dtype)
            dw += (dyt * n).sum(0)
        return dx.view_as(x), dw.to(weight.dtype), None, None


class RowTiledRMSNorm(nn.RMSNorm):
    """``nn.RMSNorm`` (same parameters and results) computed in tiles of ``rows`` rows.

    PyTorch's CPU (and ``meta``) ``rms_norm`` is a composite of fp32 operators whose backward holds several
    full-size fp32 temporaries; CUDA runs a fused kernel without them. This module keeps only the input, the
    per-row ``rstd``, the output and ``dx`` at full size, like the fused kernel, so that bytes counted on meta
    tensors model the GPU path (``--lean-norm``).

    Example:
        >>> torch.manual_seed(0) and None
        >>> norm, ref = RowTiledRMSNorm(8, rows=3).double(), nn.RMSNorm(8).double()
        >>> x = torch.randn(2, 5, 8, dtype=torch.float64)
        >>> torch.allclose(norm(x), ref(x))
        True
    """

    def __init__(self, hidden: int, rows: int = 1024) -> None:
        super().__init__(hidden)
        self.rows = rows

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        eps = self.eps if self.eps is not None else torch.finfo(x.dtype).eps
        out: torch.Tensor = _RowTiledRMSNormFn.apply(x, self.weight, eps, self.rows)
        return out


class _SwiGLU(nn.Module):
    """Llama's MLP: ``down(silu(gate(h)) * up(h))``, width 3.5 x hidden (rounded down to a multiple of 256)."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        inter = int(3.5 * hidden) // 256 * 256 or 256
        self.gate, self.up = nn.Linear(hidden, inter, bias=False), nn.Linear(hidden, inter, bias=False)
        self.down = nn.Linear(inter, hidden, bias=False)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.down(nn.functional.silu(self.gate(h)) * self.up(h))


class _Block(nn.Module):
    """A Llama decoder layer: pre-norm attention and SwiGLU MLP with residuals (the MLP tiled when ``tiles``)."""

    def __init__(self, cfg: dict[str, Any], method: str, cp: ContextParallelGroup, tiles: int = 0) -> None:
        super().__init__()
        e = cfg["hidden"]
        norm = RowTiledRMSNorm if cfg.get("lean_norm") else nn.RMSNorm
        self.norm1, self.norm2 = norm(e), norm(e)
        self.attn = _attention(cfg, method, cp)
        self.mlp = _SwiGLU(e)
        if tiles:
            self.mlp.forward = TiledForward(self.mlp, tiles)  # type: ignore[method-assign]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class OffloadModel:
    """``saved_tensors_hooks`` modelling activation offloading for byte accounting (values are not kept).

    Packing a tensor records its bytes as host memory and drops the device tensor (only its shape, stride and
    dtype are kept); unpacking allocates a new device tensor of that shape, as ``save_on_cpu`` copies the
    tensor back. The unpacked values are uninitialised: the model serves byte counts (on ``meta`` tensors, or
    on CPU to check them), not results. ``host`` is the sum of the bytes packed so far, ``host_peak`` the most
    that were held at once.
    """

    def __init__(self) -> None:
        self.host = 0
        self.host_peak = 0
        self._held = 0

    def _release(self, nbytes: int) -> None:
        self._held -= nbytes

    def pack(self, t: torch.Tensor) -> Any:
        nbytes = _nbytes(t)
        self.host += nbytes
        self._held += nbytes
        self.host_peak = max(self.host_peak, self._held)
        handle = _Packed(t.shape, t.stride(), t.dtype, t.device)
        weakref.finalize(handle, self._release, nbytes)
        return handle

    @staticmethod
    def unpack(handle: Any) -> torch.Tensor:
        return torch.empty_strided(handle.shape, handle.stride, dtype=handle.dtype, device=handle.device)

    def hooks(self) -> Any:
        return torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)


class _Packed:
    def __init__(self, shape: torch.Size, stride: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> None:
        self.shape, self.stride, self.dtype, self.device = shape, stride, dtype, device


class _Checkpointed(nn.Module):
    """Blocks under activation checkpointing; with ``offload`` their saved inputs are modelled as offloaded."""

    def __init__(self, blocks: list[_Block], offload: bool = False) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.offload = OffloadModel() if offload else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            if self.offload is None:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                with self.offload.hooks():
                    x = checkpoint(block, x, use_reentrant=False)
        return x


def _attention(cfg: dict[str, Any], method: str, cp: ContextParallelGroup) -> UPipeAttention:
    return UPipeAttention(
        cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"], backend=method, cp=cp, layout="contiguous"
    )


def mlp_tiles(cfg: dict[str, Any], world: int) -> int:
    """MLP tiles per rank so that one tile's intermediate is at most one UPipe stage's query buffer.

    A tile of ``t`` local tokens holds ``t x inter`` elements per MLP intermediate; a UPipe stage of ``U = P``
    query heads holds ``S x U x head_dim`` query elements for the global sequence ``S = P x S_local``. Hence
    ``tiles = ceil(inter / (P^2 x head_dim))``, independent of the sequence length; both arms use it.

    Example:
        >>> mlp_tiles({"hidden": 4096, "head_dim": 128}, 2), mlp_tiles({"hidden": 4096, "head_dim": 128}, 4)
        (28, 7)
    """
    inter = int(3.5 * cfg["hidden"]) // 256 * 256 or 256
    return max(1, -(-inter // (world * world * cfg["head_dim"])))


def _build(
    scope: str,
    method: str,
    cfg: dict[str, Any],
    cp: ContextParallelGroup,
    device: str = "meta",
    paper: bool = False,
    world: int = 1,
) -> nn.Module:
    """The module of ``scope``; ``paper``: layer and model scopes checkpointed, MLP tiled, inputs offloaded."""
    torch.manual_seed(0)
    tiles = mlp_tiles(cfg, world) if paper else 0
    with torch.device(device):
        if scope == "attn":
            module: nn.Module = _attention(cfg, method, cp)
            module.o_proj = nn.Identity()  # type: ignore[assignment]
        elif scope == "layer":
            block = _Block(cfg, method, cp, tiles)
            module = _Checkpointed([block], offload=True) if paper else block
        else:
            blocks = [_Block(cfg, method, cp, tiles) for _ in range(cfg["layers"])]
            module = _Checkpointed(blocks, offload=paper)
    return module.to(DTYPES[cfg["dtype"]])


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def measure(module: nn.Module, cfg: dict[str, Any], seq: int, world: int) -> dict[str, int]:
    """Bytes of one rank for one forward + backward at global length ``seq`` (on meta tensors nothing is computed).

    The module's device is used: ``meta`` for the benchmark, ``cpu`` to check that both give the same bytes.
    """
    dtype = DTYPES[cfg["dtype"]]
    device = next(module.parameters()).device
    x = torch.randn(cfg["batch"], seq // world, cfg["hidden"], device=device).to(dtype).requires_grad_()
    for p in module.parameters():
        p.grad = None
    with LiveBytesTracker(include_meta=True) as mem:
        y = module(x)
        fwd_transient = mem.peak - _nbytes(y)
        dy = torch.randn_like(y)
        y.backward(dy)
        del y
    weight_grads = sum(_nbytes(p.grad) for p in module.parameters() if p.grad is not None)
    const = sum(2 * _nbytes(p) for p in module.parameters())
    out = {
        "fwd_transient": fwd_transient,
        "peak": mem.peak - weight_grads + _nbytes(x),  # x exists before the tracker; dy is created inside it
        "const": const,
    }
    offload = getattr(module, "offload", None)
    if isinstance(offload, OffloadModel):
        out["host_offloaded"] = offload.host_peak  # host memory, not in the device figures
        offload.host = offload.host_peak = 0
    return out


def longest(
    module: nn.Module,
    cfg: dict[str, Any],
    cap: int,
    world: int,
    base: int,
    measure_fn: Callable[[nn.Module, dict[str, Any], int, int], dict[str, int]] = measure,
) -> int:
    """The longest global sequence (a multiple of ``8 P``) whose peak is at most ``cap``, to 1 %.

    ``measure_fn`` gives the figures of one sequence length (default :func:`measure`, bytes on meta tensors).
    """
    quant = 8 * world

    def fits(seq: int) -> bool:
        return measure_fn(module, cfg, seq, world)["peak"] <= cap

    lo = base if fits(base) else quant
    if not fits(lo):
        return 0
    hi = 2 * lo
    while fits(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > max(quant, lo // 100):
        mid = (lo + hi) // 2 // quant * quant
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def _fake_group(world: int) -> ContextParallelGroup:
    if dist.is_initialized():
        dist.destroy_process_group()
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
    return ContextParallelGroup(dist.group.WORLD)


def memory_figures(cfg: dict[str, Any], scopes: list[str], worlds: list[int], paper: bool = True) -> dict[str, Any]:
    """``{scope: {P: {method: figures}}}`` for the memory scopes (``paper``: see :func:`_build`)."""
    out: dict[str, Any] = {}
    for world in worlds:
        cp = _fake_group(world)
        base = cfg["seq"] or 8 * cfg["hidden"] * world
        for scope in scopes:
            modules = {m: _build(scope, m, cfg, cp, paper=paper, world=world) for m in METHODS}
            rows = {m: measure(modules[m], cfg, base, world) for m in METHODS}
            if scope in ("attn", "model"):
                cap = rows["ulysses"]["peak"]
                for m in METHODS:
                    rows[m]["max_seq"] = longest(modules[m], cfg, cap, world, base)
            for m in METHODS:
                rows[m]["seq"] = base
                if paper and scope != "attn":
                    rows[m]["mlp_tiles"] = mlp_tiles(cfg, world)
            out.setdefault(scope, {})[world] = rows
    if dist.is_initialized():
        dist.destroy_process_group()
    return out


def _tput_worker(rank: int, world: int, port: int, cfg: dict[str, Any], queue: Any) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        cp = ContextParallelGroup(dist.new_group(list(range(world))))
        gen = torch.Generator().manual_seed(cfg["seed"] + rank)
        x = torch.randn(1, cfg["seq"] // world, cfg["hidden"], generator=gen).requires_grad_()
        dy = torch.randn(1, cfg["seq"] // world, cfg["hidden"], generator=gen)
        rates = {}
        for m in METHODS:
            torch.manual_seed(cfg["seed"])
            layer = _attention(cfg, m, cp)
            layer(x).backward(dy)  # warm-up
            times = []
            for _ in range(cfg["iters"]):
                dist.barrier()
                start = time.perf_counter()
                layer(x).backward(dy)
                elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
                dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
                times.append(float(elapsed))
            rates[m] = [cfg["seq"] / t for t in times]
        if rank == 0:
            queue.put(("ok", rates))
    except BaseException as err:
        queue.put(("error", repr(err)))
        raise
    finally:
        dist.destroy_process_group()


def throughput(cfg: dict[str, Any], world: int = 2) -> dict[str, list[float]]:
    """Global tokens per second of forward + backward per iteration, per method (real compute, gloo, CPU)."""
    from tests._support.distributed import free_port

    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    port = free_port()
    procs = [ctx.Process(target=_tput_worker, args=(r, world, port, cfg, queue)) for r in range(world)]
    for p in procs:
        p.start()
    status, payload = queue.get()
    for p in procs:
        p.join()
    if status != "ok":
        raise RuntimeError(f"throughput rank failed: {payload}")
    return payload


def _rel(figs: dict[str, Any], scope: str, world: int, key: str) -> float:
    rows = figs.get(scope, {}).get(world)
    if rows is None:
        return float("nan")
    return ratio(float(rows["upipe"][key]), float(rows["ulysses"][key]))


def build_targets(figs: dict[str, Any], rates: dict[str, list[float]] | None) -> dict[str, dict[str, Any]]:
    """The issue's targets, UPipe / Ulysses, at P = 2 and P = 4 (``nan``, i.e. missed, for what was not run)."""
    targets: dict[str, dict[str, Any]] = {}
    for p in (2, 4):
        targets[f"attn_fwd_transient_P{p}"] = target(_rel(figs, "attn", p, "fwd_transient"), "<=", 0.15)
        targets[f"attn_peak_P{p}"] = target(_rel(figs, "attn", p, "peak"), "<=", 0.35)
        targets[f"layer_peak_P{p}"] = target(_rel(figs, "layer", p, "peak"), "<=", 0.6)
        targets[f"attn_max_seq_P{p}"] = target(_rel(figs, "attn", p, "max_seq"), ">=", 1.8)
        targets[f"model_ckpt_max_seq_P{p}"] = target(_rel(figs, "model", p, "max_seq"), ">=", 1.25)
    tput = float("nan")
    if rates:
        tput = ratio(sum(rates["upipe"]) / len(rates["upipe"]), sum(rates["ulysses"]) / len(rates["ulysses"]))
    targets["tokens_per_s_P2"] = target(tput, ">=", 0.9)
    return targets


def _table(figs: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for scope, per_world in figs.items():
        for world, per_method in per_world.items():
            base = per_method["ulysses"]
            for m in METHODS:
                r = per_method[m]
                row = {
                    "scope": scope,
                    "P": world,
                    "method": m,
                    "S_base": r["seq"],
                    "fwd_transient_MiB": r["fwd_transient"] / MIB,
                    "fwd_transient/uly": ratio(r["fwd_transient"], base["fwd_transient"]),
                    "peak_MiB": r["peak"] / MIB,
                    "peak/uly": ratio(r["peak"], base["peak"]),
                    "const_MiB": r["const"] / MIB,
                }
                if "host_offloaded" in r:
                    row["host_offloaded_MiB"] = r["host_offloaded"] / MIB
                if "max_seq" in r:
                    row["max_seq"] = r["max_seq"]
                    row["max_seq/uly"] = ratio(r["max_seq"], base["max_seq"])
                rows.append(row)
    return rows


def add_shape_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the layer-shape flags that the UPipe memory scripts share (``--world`` to ``--dtype``).

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_shape_arguments(parser)
        >>> args = parser.parse_args(["--world", "2"])
        >>> check_shape_arguments(parser, args), shape_config(args)["head_dim"]
        ([2], 128)
    """
    parser.add_argument(
        "--world", default="2,4", help="context-parallel sizes (a fake group of P ranks), comma-separated"
    )
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--seq", type=int, default=0, help="base global sequence (default 8 x hidden per rank)")
    parser.add_argument("--dtype", choices=tuple(DTYPES), default="bf16")


def check_shape_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[int]:
    """Check the flags of :func:`add_shape_arguments` (``parser.error`` on bad values); return ``args.worlds``."""
    for name in ("hidden", "heads", "kv_heads", "head_dim"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.heads % args.kv_heads:
        parser.error(f"--heads ({args.heads}) must be divisible by --kv-heads ({args.kv_heads})")
    try:
        worlds = [int(w) for w in args.world.split(",")]
    except ValueError:
        parser.error(f"--world must be comma-separated integers, got {args.world!r}")
    if any(w < 1 or args.heads % w for w in worlds):
        parser.error(f"every --world size must be >= 1 and divide --heads ({args.heads}), got {worlds}")
    if args.seq < 0 or (args.seq and any(args.seq % w for w in worlds)):
        parser.error(f"--seq={args.seq} must be 0 (default) or divisible by every --world size {worlds}")
    args.worlds = worlds
    return worlds


def shape_config(args: argparse.Namespace) -> dict[str, Any]:
    """The layer shape of the parsed flags of :func:`add_shape_arguments`, batch 1."""
    return {
        "batch": 1,
        "hidden": args.hidden,
        "heads": args.heads,
        "kv_heads": args.kv_heads,
        "head_dim": args.head_dim,
        "seq": args.seq,
        "dtype": args.dtype,
    }


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--scope", choices=("attn", "layer", "all"), default="all")
    add_shape_arguments(parser)
    parser.add_argument(
        "--paper-config",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="layer and model scopes as the paper benchmarks both arms: activation checkpointing, tiled MLP,"
        " offloaded checkpoint inputs (--no-paper-config: plain layer, checkpointed model, as before)",
    )
    parser.add_argument(
        "--lean-norm",
        action="store_true",
        help="RMSNorm in row tiles without full-size fp32 temporaries, as CUDA's fused kernel (both arms)",
    )
    args = parser.parse_args()
    worlds = check_shape_arguments(parser, args)
    cfg = shape_config(args) | {"layers": 4, "paper_config": args.paper_config, "lean_norm": args.lean_norm}
    scopes = {"attn": ["attn"], "layer": ["layer", "model"], "all": ["attn", "layer", "model"]}[args.scope]
    start = time.perf_counter()
    figs = memory_figures(cfg, scopes, worlds, paper=args.paper_config)
    mem_s = time.perf_counter() - start
    tcfg = {"seed": args.seed, "hidden": 1024, "heads": 32, "kv_heads": 8, "head_dim": 32}
    tcfg |= {"seq": 1024 if args.quick else 4096, "iters": 2 if args.quick else 4}
    rates = throughput(tcfg)
    print(
        f"UPipe vs Ulysses, H={cfg['heads']}, G={cfg['kv_heads']}, head_dim={cfg['head_dim']}, hidden={cfg['hidden']},"
        f" {cfg['dtype']}, per-rank bytes on meta tensors ({mem_s:.0f} s)\n"
    )
    print(markdown_table(_table(figs)))
    if rates:
        tput = [{"method": m, "tokens_per_s": sum(r) / len(r), "min": min(r), "max": max(r)} for m, r in rates.items()]
        print(f"\nThroughput, 2 gloo ranks on CPU, S={tcfg['seq']}, hidden={tcfg['hidden']}, {tcfg['iters']} iters:\n")
        print(markdown_table(tput))
    targets = build_targets(figs, rates)
    print_targets(targets)
    json_figs = {str(s): {str(w): r for w, r in pw.items()} for s, pw in figs.items()}
    figures: dict[str, Any] = {
        "config": cfg,
        "worlds": worlds,
        "memory": json_figs,
        "throughput": {"config": tcfg, "tokens_per_s": rates},
        "targets": targets,
    }
    write_json(args.json, "upipe_memory", figures, args)


if __name__ == "__main__":
    main()
