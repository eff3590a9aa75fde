"""UPipe vs Ulysses vs plain SDPA on one CUDA GPU: peak memory and longest sequence at a Llama-3-8B layer shape.

``benchmarks/upipe_memory.py`` on a device: ``lightning_icml26.strategies.upipe_memory.upipe_memory_figures`` runs
one rank's work (all-to-all on a ``fake`` group of ``P`` ranks; plain SDPA: the whole sequence on one GPU) and
reads ``torch.cuda.max_memory_allocated``. Scopes ``attn`` and ``model`` (4 layers as the paper runs both arms:
checkpointing, tiled MLP, inputs offloaded to pinned host memory). ``--max-minutes`` caps the wall clock and
writes what was measured (``"partial": true``).

    python -m benchmarks.gpu.upipe_memory_cuda --json benchmarks/results/upipe_memory_cuda.json   # one H200, < 8 min
    python -m benchmarks.gpu.upipe_memory_cuda --device meta --hidden 64 --heads 8 --kv-heads 2 --head-dim 16
"""

from __future__ import annotations

import time
from typing import Any

import torch

from benchmarks._common import benchmark_parser, markdown_table, print_targets, write_json
from benchmarks.upipe_memory import add_shape_arguments, cuda_targets, shape_arguments, table
from lightning_icml26.strategies import upipe_memory_figures


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; return the JSON figures (also written to ``--json``). Bad flags: ``SystemExit``."""
    p = benchmark_parser((__doc__ or "").splitlines()[0])
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu", "meta"))
    p.add_argument("--scope", default="attn,model", help="comma-separated: attn, model")
    p.add_argument("--max-minutes", type=float, default=7.0, help="wall-clock cap; partial JSON after it")
    add_shape_arguments(p)
    args = p.parse_args(argv)
    shape, scopes, start = shape_arguments(p, args), args.scope.split(","), time.perf_counter()
    if any(s not in ("attn", "model") for s in scopes) or not args.max_minutes > 0:
        p.error(f"--scope must be names among attn, model and --max-minutes positive, got {args.scope!r}, "
                f"{args.max_minutes}")  # fmt: skip
    if args.device == "cuda" and not torch.cuda.is_available():
        p.exit(2, "upipe_memory_cuda.py needs a CUDA GPU (torch.cuda.is_available() is False); on CPU the figures"
               " come from benchmarks/upipe_memory.py (bytes on meta tensors)\n")  # fmt: skip
    figs = upipe_memory_figures(shape, scopes, args.worlds, methods=("ulysses", "upipe", "sdpa"), seq=args.seq,
                                device=args.device, search_scopes=scopes, keep_partial=True,
                                deadline=time.monotonic() + 60 * args.max_minutes)  # fmt: skip
    stopped = figs.pop("stopped", None)
    print(markdown_table(table(figs, 2.0**30, "GiB")) + (f"\n\nStopped early: {stopped}" if stopped else ""))
    targets = cuda_targets(figs, args.worlds)
    print_targets(targets)
    memory = {s: {str(w): r for w, r in pw.items()} for s, pw in figs.items()} | (
        {"stopped": stopped} if stopped else {}
    )
    device = torch.cuda.get_device_name() if args.device == "cuda" else args.device
    record = {"memory": memory, "partial": stopped is not None, "wall_s": time.perf_counter() - start}
    write_json(args.json, "upipe_memory_cuda", record | {"device": device, "targets": targets}, args)
    return record | {"device": device, "targets": targets}


if __name__ == "__main__":
    main()
