"""UPipe against Ulysses: activation memory of one rank at a Llama layer shape, longest sequence, CPU throughput.

The pieces the UPipe memory benchmarks run (``benchmarks/upipe_memory.py`` on ``meta`` tensors,
``benchmarks/gpu/upipe_memory_cuda.py`` on a GPU):

* :func:`build_memory_model`: the module of a scope for one method. ``attn``: the attention operator
  (projections and RoPE, ``o_proj`` left out); ``layer``: one :class:`~lightning_icml26.ops.decoder.DecoderLayer`;
  ``model``: ``shape.layers`` of them under activation checkpointing. With ``paper_config`` (how the paper
  benchmarks both UPipe and Ulysses) the layer and model scopes are checkpointed, their MLPs tiled along the
  sequence and the checkpoints' inputs offloaded, through the strategy's own
  ``activation_checkpointing`` / ``tiled_mlp`` / ``offload_activations`` code; off CUDA the offloading is the
  byte model :class:`~lightning_icml26.ops.attention.context_parallel.OffloadByteModel`.
* :func:`~lightning_icml26.ops.attention.context_parallel.forward_backward_memory` measures one forward + backward
  (CUDA allocator on a GPU, live tensor bytes on CPU / ``meta``); :func:`longest_sequence` searches the longest
  sequence under a cap; :func:`upipe_memory_figures` runs the whole grid of scopes, ranks and methods.
* :func:`attention_throughput`: forward + backward tokens per second of the attention on real gloo ranks.

UPipe and Ulysses run one rank's work with a ``fake`` process group of ``P`` ranks (:func:`fake_context_parallel_group`:
the all-to-all keeps its shapes and moves nothing), so one rank's bytes are every rank's.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.testing._internal.distributed.fake_pg import FakeStore

from lightning_icml26.distributed import ContextParallelGroup
from lightning_icml26.ops.attention import UPipeAttention
from lightning_icml26.ops.attention.context_parallel import OffloadByteModel, forward_backward_memory
from lightning_icml26.ops.decoder import DecoderLayer, DecoderStack, swiglu_width
from lightning_icml26.strategies._blocks import checkpoint_blocks, tile_block_mlps

__all__ = [
    "attention_throughput",
    "build_memory_model",
    "DTYPES",
    "fake_context_parallel_group",
    "LayerShape",
    "longest_sequence",
    "measure_memory",
    "mlp_tiles",
    "SCOPES",
    "upipe_memory_figures",
]

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
SCOPES = ("attn", "layer", "model")
METHODS = ("ulysses", "upipe", "sdpa")


def _positive(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}={value!r} must be a positive integer")


@dataclass(frozen=True)
class LayerShape:
    """A decoder layer's shape (default: Llama-3-8B in bf16) and the number of layers of the ``model`` scope.

    Raises:
        ValueError: for a non-positive size, ``heads`` not divisible by ``kv_heads`` or an unknown ``dtype``.

    Example:
        >>> LayerShape().hidden, LayerShape(hidden=64, heads=8, kv_heads=2, head_dim=16).dtype
        (4096, 'bf16')
    """

    hidden: int = 4096
    heads: int = 32
    kv_heads: int = 8
    head_dim: int = 128
    dtype: str = "bf16"
    batch: int = 1
    layers: int = 4
    lean_norm: bool = False

    def __post_init__(self) -> None:
        for name in ("hidden", "heads", "kv_heads", "head_dim", "batch", "layers"):
            _positive(name, getattr(self, name))
        if self.heads % self.kv_heads:
            raise ValueError(f"heads={self.heads} must be divisible by kv_heads={self.kv_heads}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype={self.dtype!r} is not supported; choose one of {tuple(DTYPES)}")

    @property
    def torch_dtype(self) -> torch.dtype:
        """The ``torch.dtype`` of :attr:`dtype`."""
        return DTYPES[self.dtype]


def mlp_tiles(shape: LayerShape, world: int) -> int:
    """MLP tiles per rank so that one tile's intermediate is at most one UPipe stage's query buffer.

    A tile of ``t`` local tokens holds ``t x inter`` elements per MLP intermediate; a UPipe stage of ``U = P``
    query heads holds ``S x U x head_dim`` query elements for the global sequence ``S = P x S_local``. Hence
    ``tiles = ceil(inter / (P^2 x head_dim))``, independent of the sequence length; both arms use it.

    Example:
        >>> mlp_tiles(LayerShape(), 2), mlp_tiles(LayerShape(), 4)
        (28, 7)
    """
    _positive("world", world)
    return max(1, -(-swiglu_width(shape.hidden) // (world * world * shape.head_dim)))


def fake_context_parallel_group(world: int) -> ContextParallelGroup:
    """A context-parallel group of ``world`` ranks on torch's ``fake`` backend, this process being rank 0.

    Collectives keep their shapes and move nothing: one rank's computation runs at the shapes of a ``world``-rank
    run. Any default process group of this process is destroyed first (destroy this one when done).

    Example:
        >>> fake_context_parallel_group(4).size
        4
        >>> dist.destroy_process_group()
    """
    _positive("world", world)
    if dist.is_initialized():
        dist.destroy_process_group()
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
    return ContextParallelGroup(dist.group.WORLD)


def build_memory_model(
    scope: str,
    method: str,
    shape: LayerShape,
    cp: ContextParallelGroup,
    *,
    device: str | torch.device = "meta",
    paper_config: bool = True,
    world: int = 1,
) -> tuple[nn.Module, OffloadByteModel | None]:
    """The module of ``scope`` with attention ``method``, and its offloading byte model (``None`` if none).

    Args:
        scope: ``"attn"``, ``"layer"`` or ``"model"`` (see the module docstring).
        method: the attention backend (``"ulysses"``, ``"upipe"``, ``"dense"``).
        shape: the layer shape.
        cp: the context-parallel group.
        device: where the parameters live (``"meta"``: bytes only).
        paper_config: layer and model scopes checkpointed, MLP tiled (:func:`mlp_tiles` at ``world``) and the
            checkpoints' inputs offloaded (to pinned host memory on CUDA, to :class:`OffloadByteModel` elsewhere).
        world: the context-parallel size the MLP tiles are chosen for.

    Raises:
        ValueError: for an unknown ``scope``.

    Example:
        >>> model, offload = build_memory_model("model", "upipe", LayerShape(hidden=64, heads=8, kv_heads=2,
        ...                                     head_dim=16, layers=2), ContextParallelGroup())
        >>> len(model.layers), offload is not None
        (2, True)
    """
    if scope not in SCOPES:
        raise ValueError(f"scope={scope!r} is not supported; choose one of {SCOPES}")
    device = torch.device(device)
    torch.manual_seed(0)
    offload = OffloadByteModel() if paper_config and device.type != "cuda" and scope != "attn" else None
    with device:
        if scope == "attn":
            module: nn.Module = UPipeAttention(
                shape.hidden, shape.heads, shape.kv_heads, shape.head_dim, backend=method, cp=cp, layout="contiguous"
            )
            module.o_proj = nn.Identity()  # type: ignore[assignment]
            return module.to(shape.torch_dtype), None
        count = 1 if scope == "layer" else shape.layers
        layers: list[nn.Module] = [
            DecoderLayer(shape.hidden, shape.heads, shape.kv_heads, shape.head_dim, method, cp, shape.lean_norm)
            for _ in range(count)
        ]
    if scope == "layer" and not paper_config:
        return layers[0].to(shape.torch_dtype), None
    stack = DecoderStack(layers, hooks=offload.hooks if offload is not None else None)
    if paper_config:
        tile_block_mlps(stack, mlp_tiles(shape, world))
    checkpoint_blocks(stack, offload=paper_config and device.type == "cuda")
    return stack.to(shape.torch_dtype), offload


def measure_memory(
    module: nn.Module, shape: LayerShape, seq: int, world: int, offload: OffloadByteModel | None = None
) -> dict[str, int]:
    """:func:`~lightning_icml26.ops.attention.context_parallel.forward_backward_memory` of one rank's shard.

    The input is ``(shape.batch, seq // world, shape.hidden)`` random values on the module's device.

    Example:
        >>> shape = LayerShape(hidden=64, heads=8, kv_heads=2, head_dim=16)
        >>> module, _ = build_memory_model("attn", "upipe", shape, ContextParallelGroup())
        >>> sorted(measure_memory(module, shape, 128, 1))
        ['const', 'fwd_transient', 'peak']
    """
    _positive("seq", seq)
    device = next(module.parameters()).device
    x = torch.randn(shape.batch, seq // world, shape.hidden, device=device).to(shape.torch_dtype)
    return forward_backward_memory(module, x, offload)


def longest_sequence(fits: Callable[[int], bool], base: int, quantum: int) -> int:
    """The longest sequence (a multiple of ``quantum``) for which ``fits`` holds, to 1 %; 0 if none.

    Starts at ``base`` (or ``quantum`` when ``base`` does not fit), doubles until ``fits`` fails, then bisects
    until the bracket is within ``max(quantum, 1 %)``. ``fits`` is assumed monotone.

    Example:
        >>> longest_sequence(lambda s: s <= 1000, base=64, quantum=8)
        1000
        >>> longest_sequence(lambda s: s <= 30_000, base=1024, quantum=64)  # the largest multiple of 64
        29952
    """
    _positive("quantum", quantum)
    lo = base if fits(base) else quantum
    if not fits(lo):
        return 0
    hi = 2 * lo
    while fits(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > max(quantum, lo // 100):
        mid = (lo + hi) // 2 // quantum * quantum
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def upipe_memory_figures(
    shape: LayerShape,
    scopes: Sequence[str],
    worlds: Sequence[int],
    *,
    methods: Sequence[str] = ("ulysses", "upipe"),
    seq: int = 0,
    device: str | torch.device = "meta",
    paper_config: bool = True,
    search_scopes: Sequence[str] = ("attn", "model"),
    deadline: float | None = None,
    keep_partial: bool = False,
) -> dict[str, Any]:
    """``{scope: {P: {method: figures}}}``: bytes of one rank per scope, rank count and method.

    ``figures`` are those of :func:`measure_memory` at the base global length ``seq`` (default 8 x hidden
    tokens per rank) plus ``seq``, ``mlp_tiles`` (paper configuration, layer and model scopes) and, for
    ``search_scopes``, ``max_seq``: the longest global sequence whose ``peak`` stays under Ulysses' peak at the
    base length (:func:`longest_sequence`, in multiples of ``8 P``). ``"sdpa"`` is the same module with the
    whole sequence on one rank (no context parallelism); its search starts at ``base / P``.

    Args:
        shape: the layer shape.
        scopes: among ``"attn"``, ``"layer"``, ``"model"``.
        worlds: context-parallel sizes (each divides ``shape.heads``).
        methods: among ``"ulysses"``, ``"upipe"``, ``"sdpa"``; ``"ulysses"`` must be one (it sets the cap).
        seq: the base global sequence (0: ``8 x hidden x P``).
        device: ``"meta"`` (bytes, nothing computed), ``"cpu"`` or a CUDA device (allocator peak).
        paper_config: see :func:`build_memory_model`.
        search_scopes: the scopes that get ``max_seq``.
        deadline: a ``time.monotonic()`` value after which ``TimeoutError`` is raised between measurements.
        keep_partial: an error while measuring (``TimeoutError`` past ``deadline`` included) ends the grid and
            the figures measured so far are returned, with ``"stopped"``: the error's type and message.

    Raises:
        ValueError: for an unknown scope or method, ``"ulysses"`` missing, or a size that does not divide.
        TimeoutError: past ``deadline`` (without ``keep_partial``).

    Example:
        >>> shape = LayerShape(hidden=64, heads=8, kv_heads=2, head_dim=16, layers=2)
        >>> figs = upipe_memory_figures(shape, ["attn"], [2], seq=256)
        >>> rows = figs["attn"][2]
        >>> rows["upipe"]["peak"] < rows["ulysses"]["peak"], rows["upipe"]["max_seq"] > 256
        (True, True)
    """
    _check_grid(shape, scopes, worlds, methods, seq)
    out: dict[str, Any] = {}
    try:
        for scope in scopes:
            for world in worlds:
                cp = fake_context_parallel_group(world)
                rows: dict[str, dict[str, int]] = {}
                out.setdefault(scope, {})[world] = rows
                grid = _Grid(shape, scope, world, cp, torch.device(device), paper_config, deadline)
                grid.fill(rows, methods, seq or 8 * shape.hidden * world, search_scopes)
    except Exception as error:  # keep what was measured; the figures say why the grid stopped
        if not keep_partial:
            raise
        out["stopped"] = f"{type(error).__name__}: {error}"
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    return out


@dataclass
class _Grid:
    """The measurements of one scope and context-parallel size (one module alive at a time, as on a GPU)."""

    shape: LayerShape
    scope: str
    world: int
    cp: ContextParallelGroup
    device: torch.device
    paper_config: bool
    deadline: float | None

    def build(self, method: str) -> tuple[nn.Module, OffloadByteModel | None, int]:
        size = 1 if method == "sdpa" else self.world
        backend, cp = ("dense", ContextParallelGroup()) if method == "sdpa" else (method, self.cp)
        module, offload = build_memory_model(
            self.scope, backend, self.shape, cp, device=self.device, paper_config=self.paper_config, world=size
        )
        return module, offload, size

    def measure(self, built: tuple[nn.Module, OffloadByteModel | None, int], seq: int) -> dict[str, int]:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise TimeoutError("the deadline of upipe_memory_figures was reached")
        module, offload, size = built
        return measure_memory(module, self.shape, seq, size, offload)

    def fill(
        self, rows: dict[str, dict[str, int]], methods: Sequence[str], base: int, search_scopes: Sequence[str]
    ) -> None:
        for method in methods:
            built = self.build(method)
            rows[method] = self.measure(built, base) | {"seq": base}
            if self.paper_config and self.scope != "attn":
                rows[method]["mlp_tiles"] = mlp_tiles(self.shape, built[2])
            del built
        if self.scope in search_scopes:
            cap = rows["ulysses"]["peak"]
            for method in methods:
                built = self.build(method)
                start = base if method != "sdpa" else max(8, base // self.world // 8 * 8)
                rows[method]["max_seq"] = longest_sequence(self.fits(built, cap), start, 8 * built[2])
                del built

    def fits(self, built: tuple[nn.Module, OffloadByteModel | None, int], cap: int) -> Callable[[int], bool]:
        def fits(seq: int) -> bool:
            return self.measure(built, seq)["peak"] <= cap

        return fits


def _check_grid(
    shape: LayerShape, scopes: Sequence[str], worlds: Sequence[int], methods: Sequence[str], seq: int
) -> None:
    if not scopes or any(s not in SCOPES for s in scopes):
        raise ValueError(f"scopes={list(scopes)!r} must be names among {SCOPES}")
    if "ulysses" not in methods or any(m not in METHODS for m in methods):
        raise ValueError(f"methods={list(methods)!r} must include 'ulysses' and be names among {METHODS}")
    if not worlds or any(isinstance(w, bool) or not isinstance(w, int) or w < 1 or shape.heads % w for w in worlds):
        raise ValueError(f"worlds={list(worlds)!r} must be sizes >= 1 that divide heads={shape.heads}")
    if seq < 0 or (seq and any(seq % w for w in worlds)):
        raise ValueError(f"seq={seq} must be 0 (the default) or divisible by every world size {list(worlds)}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _throughput_worker(rank: int, world: int, port: int, cfg: dict[str, Any], queue: Any) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        cp = ContextParallelGroup(dist.new_group(list(range(world))))
        gen = torch.Generator().manual_seed(cfg["seed"] + rank)
        x = torch.randn(1, cfg["seq"] // world, cfg["hidden"], generator=gen).requires_grad_()
        dy = torch.randn(1, cfg["seq"] // world, cfg["hidden"], generator=gen)
        rates = {}
        for method in cfg["methods"]:
            torch.manual_seed(cfg["seed"])
            layer = UPipeAttention(cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"], backend=method, cp=cp)
            layer(x).backward(dy)  # warm-up
            times = []
            for _ in range(cfg["iters"]):
                dist.barrier()
                start = time.perf_counter()
                layer(x).backward(dy)
                elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
                dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
                times.append(float(elapsed))
            rates[method] = [cfg["seq"] / t for t in times]
        if rank == 0:
            queue.put(("ok", rates))
    except BaseException as err:
        queue.put(("error", repr(err)))
        raise
    finally:
        dist.destroy_process_group()


def attention_throughput(
    hidden: int = 1024,
    heads: int = 32,
    kv_heads: int = 8,
    head_dim: int = 32,
    seq: int = 4096,
    iters: int = 4,
    world: int = 2,
    seed: int = 0,
    methods: Sequence[str] = ("ulysses", "upipe"),
) -> dict[str, list[float]]:
    """Global tokens per second of the attention's forward + backward (``o_proj`` included), per iteration.

    ``world`` spawned processes on CPU (gloo, one thread each) hold ``seq / world`` tokens each; an iteration's
    time is the slowest rank's, after one warm-up iteration per method.

    Raises:
        ValueError: for a non-positive size, or ``seq`` not divisible by ``world``.
        RuntimeError: if a rank fails (its error is named).

    Example:
        >>> rates = attention_throughput(hidden=32, heads=4, kv_heads=2, head_dim=8, seq=64, iters=1)
        >>> sorted(rates), len(rates["upipe"])
        (['ulysses', 'upipe'], 1)
    """
    for name, value in (("hidden", hidden), ("heads", heads), ("kv_heads", kv_heads), ("head_dim", head_dim),
                        ("seq", seq), ("iters", iters), ("world", world)):  # fmt: skip
        _positive(name, value)
    if seq % world:
        raise ValueError(f"seq={seq} must be divisible by world={world}")
    cfg: dict[str, Any] = {"hidden": hidden, "heads": heads, "kv_heads": kv_heads, "head_dim": head_dim, "seq": seq}
    cfg |= {"iters": iters, "seed": seed, "methods": tuple(methods)}
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    port = _free_port()
    procs = [ctx.Process(target=_throughput_worker, args=(r, world, port, cfg, queue)) for r in range(world)]
    for p in procs:
        p.start()
    status, payload = queue.get()
    for p in procs:
        p.join()
    if status != "ok":
        raise RuntimeError(f"attention_throughput: a rank failed: {payload}")
    rates: dict[str, list[float]] = payload
    return rates
