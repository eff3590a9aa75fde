"""End-to-end training step under context parallelism: UPipe against Ulysses and plain data parallel.

Two gloo ranks on this machine run one training step (forward, causal-LM loss, backward, gradient all-reduce
over both ranks, SGD update) of a small Llama-style model, routed exactly as ``UPipeStrategy`` does it:

* ``dp``: plain data parallel, every rank trains on its own full-length sequence (no context parallelism);
* ``ulysses`` / ``upipe``: one sequence split over the two ranks (contiguous shards), attention through the
  Ulysses all-to-all or UPipe's head-chunked stages.

Two models of the same shape: the transformers ``LlamaForCausalLM`` of the ``upipe_llama`` recipe (random weights
from a config) and the project's ``TinyCausalTransformer`` built on ``UPipeAttention``. Both are routed by
:func:`lightning_icml26.ops.route_attention` with the strategy's defaults (``stage_heads=None``, contiguous
layout), as ``Trainer(strategy="upipe")`` does: under ``upipe`` every attention layer runs the fused head-chunked
operator (projection, RoPE, all-to-all and attention per stage, recomputed per stage in backward); the row records
how many layers do (``upipe_fused_layers``).

Reported per rank: peak live bytes of the tensors created during the step (activations, transients and
gradients; weights excluded), measured with ``LiveBytesTracker`` (a ``TorchDispatchMode``; never RSS), and
training tokens per second of the step (global tokens / median wall time over the timed steps, measured
without the tracker). Ratios are UPipe / baseline. Targets (issue #15), on the HF Llama model: UPipe's peak at
most 0.6x Ulysses' at a throughput within 10 % of it (tokens/s at least 0.9x). This is a CPU proxy: gloo on 2
cores says nothing about GPU throughput; the memory figures are exact byte counts of the same computation.

    .venv/bin/python -m benchmarks.upipe_e2e --quick
    .venv/bin/python -m benchmarks.upipe_e2e --json benchmarks/results/upipe_e2e.json
"""

from __future__ import annotations

import os
import socket
import statistics
import time
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, worst, write_json

METHODS = ("dp", "ulysses", "upipe")
MODELS = ("hf_llama", "upipe_attention")


def _config(quick: bool) -> dict[str, Any]:
    if quick:
        return {"seq_len": 1024, "hidden": 128, "heads": 8, "kv_heads": 4, "layers": 2, "steps": 2}
    return {"seq_len": 4096, "hidden": 256, "heads": 8, "kv_heads": 4, "layers": 2, "steps": 3}


def _build(model: str, cfg: dict[str, Any]) -> torch.nn.Module:
    from lightning_icml26.modules.causal_lm import TinyCausalTransformer, build_hf_causal_lm

    if model == "hf_llama":
        return build_hf_causal_lm(
            "llama",
            seed=0,
            vocab_size=256,
            hidden_size=cfg["hidden"],
            intermediate_size=4 * cfg["hidden"],
            num_hidden_layers=cfg["layers"],
            num_attention_heads=cfg["heads"],
            num_key_value_heads=cfg["kv_heads"],
            max_position_embeddings=cfg["seq_len"],
            tie_word_embeddings=False,
        )
    torch.manual_seed(0)
    return TinyCausalTransformer(
        vocab_size=256,
        hidden_size=cfg["hidden"],
        num_layers=cfg["layers"],
        num_heads=cfg["heads"],
        num_kv_heads=cfg["kv_heads"],
    )


def _step(
    net: torch.nn.Module, optimizer: torch.optim.Optimizer, ids: torch.Tensor, labels: torch.Tensor, pos: Any
) -> float:
    out = net(input_ids=ids, position_ids=pos)
    logits = out if isinstance(out, torch.Tensor) else out.logits
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    grads = [p.grad for p in net.parameters() if p.grad is not None]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat.div_(dist.get_world_size())
    offset = 0
    for g in grads:
        g.copy_(flat[offset : offset + g.numel()].view_as(g))
        offset += g.numel()
    optimizer.step()
    return float(loss.detach())


def _measure(rank: int, world: int, model: str, method: str, cfg: dict[str, Any]) -> dict[str, float]:
    from lightning_icml26.data.text import load_stdlib_bytes
    from lightning_icml26.distributed import sequence_shard_indices
    from lightning_icml26.ops import route_attention
    from lightning_icml26.ops.attention import LiveBytesTracker, UPipeAttention
    from lightning_icml26.ops.attention.context_parallel.upipe_hf import FusedHFAttentionForward

    seq = cfg["seq_len"]
    data = load_stdlib_bytes(max_bytes=2 * (seq + 1)).long()
    samples = [data[i * (seq + 1) : (i + 1) * (seq + 1)] for i in range(2)]
    net = _build(model, cfg)
    if method == "dp":  # each rank its own full sequence; attention stays local and dense
        route_attention(net, None, 1, attention="dense")
        ids, labels = samples[rank][:-1][None], samples[rank][1:][None]
        pos = torch.arange(seq)[None]
        tokens = world * seq
    else:  # one sequence split over the ranks
        group = dist.new_group(list(range(world)))
        route_attention(net, group, world, attention=method)
        index = sequence_shard_indices(seq, rank, world, "contiguous")
        ids, labels = samples[0][:-1][None][:, index], samples[0][1:][None][:, index]
        pos = index[None]
        tokens = seq
    # layers on the fused head-chunked operator (recorded, checked in the row): transformers attention layers get it
    # installed by the routing for "upipe"; UPipeAttention layers fuse their projections themselves
    fused = 0
    if method == "upipe":
        fused = sum(
            isinstance(m, UPipeAttention) or isinstance(m.__dict__.get("forward"), FusedHFAttentionForward)
            for m in net.modules()
        )
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
    _step(net, optimizer, ids, labels, pos)  # warm-up
    times = []
    for _ in range(cfg["steps"]):
        dist.barrier()
        start = time.perf_counter()
        _step(net, optimizer, ids, labels, pos)
        times.append(time.perf_counter() - start)
    dist.barrier()
    with LiveBytesTracker() as tracker:
        _step(net, optimizer, ids, labels, pos)
    return {"peak_mib": tracker.peak / 2**20, "tokens_per_s": tokens / statistics.median(times), "fused_layers": fused}


def _worker(rank: int, world: int, port: int, jobs: list[tuple[str, str]], cfg: dict[str, Any], queue: Any) -> None:
    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        results = {f"{m}/{k}": _measure(rank, world, m, k, cfg) for m, k in jobs}
        queue.put((rank, results))
    finally:
        dist.destroy_process_group()


def run_e2e(quick: bool = True) -> list[dict[str, Any]]:
    """Measure every (model, method) on 2 spawned gloo ranks; one row per model with UPipe / baseline ratios.

    Run by this script's ``main``; importable to reuse the rows elsewhere.
    """
    cfg = _config(quick)
    jobs = [(m, k) for m in MODELS for k in METHODS]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    procs = [ctx.Process(target=_worker, args=(r, 2, port, jobs, cfg, queue)) for r in range(2)]
    for proc in procs:
        proc.start()
    per_rank = dict(queue.get() for _ in procs)
    for proc in procs:
        proc.join()
    rows = []
    for model in MODELS:
        row: dict[str, Any] = {"model": model, "seq_len": cfg["seq_len"], "layers": cfg["layers"]}
        for method in METHODS:
            figures = [per_rank[r][f"{model}/{method}"] for r in (0, 1)]
            row[f"{method}_peak_MiB"] = max(f["peak_mib"] for f in figures)
            row[f"{method}_tok_s"] = min(f["tokens_per_s"] for f in figures)
        row["upipe_fused_layers"] = min(int(per_rank[r][f"{model}/upipe"]["fused_layers"]) for r in (0, 1))
        for base in ("dp", "ulysses"):
            row[f"mem_upipe/{base}"] = ratio(row["upipe_peak_MiB"], row[f"{base}_peak_MiB"])
            row[f"tok_s_upipe/{base}"] = ratio(row["upipe_tok_s"], row[f"{base}_tok_s"])
        rows.append(row)
    return rows


def build_targets(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Issue #15's targets on the HF Llama recipe model: UPipe / Ulysses peak <= 0.6x at throughput within 10 %.

    Also kept: UPipe's peak at most Ulysses' on every model, and the HF model running the fused operator in every
    layer (``hf_llama_fused_layers`` >= the layer count).
    """
    hf = next(row for row in rows if row["model"] == "hf_llama")
    mem = [row["mem_upipe/ulysses"] for row in rows]
    return {
        "hf_llama_peak_over_ulysses": target(hf["mem_upipe/ulysses"], "<=", 0.6),
        "hf_llama_tok_s_over_ulysses": target(hf["tok_s_upipe/ulysses"], ">=", 0.9),
        "hf_llama_fused_layers": target(float(hf["upipe_fused_layers"]), ">=", float(hf["layers"])),
        "peak_over_ulysses_max": target(worst(mem, "max"), "<=", 1.0),
    }


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    args = parser.parse_args()
    cfg = _config(args.quick)
    rows = run_e2e(args.quick)
    print(
        f"One training step, 2 gloo ranks, Llama-style model hidden={cfg['hidden']}, heads={cfg['heads']}/"
        f"{cfg['kv_heads']} KV, layers={cfg['layers']}, sequence {cfg['seq_len']} tokens; peak = max over ranks"
    )
    print(markdown_table(rows))
    targets = build_targets(rows)
    print_targets(targets)
    write_json(args.json, "upipe_e2e", {"config": cfg, "rows": rows, "targets": targets}, args)


if __name__ == "__main__":
    main()
