"""ISA's Triton path against FlashAttention (SDPA) on one CUDA device: latency at 16K to 64K tokens, bf16.

Argument parsing around :func:`lightning_icml26.acceptance.measure_isa_latency` (its docs say what is measured).
Targets: Triton forward <= 0.4 x SDPA at 64K tokens, H = 4; cosine >= 0.99. The JSON is partial until the end.

    python -m benchmarks.gpu.isa_latency                       # one CUDA GPU with triton, H = 4, < 6 min
    python -m benchmarks.gpu.isa_latency --heads 4 16          # also a wider head count, after the H = 4 rows
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from benchmarks._common import markdown_table, print_targets, write_json
from lightning_icml26.acceptance import IsaLatencySettings, isa_latency_table, measure_isa_latency
from lightning_icml26.optional import is_available

DEFAULT_JSON = Path(__file__).resolve().parents[1] / "results" / "isa_latency_cuda.json"
LISTS = {"lengths": int, "heads": int, "temperatures": float}


def parse_args(argv: Sequence[str] | None = None) -> tuple[argparse.Namespace, IsaLatencySettings]:
    """The command line: ``--json`` and one flag per field of :class:`IsaLatencySettings` (checked there)."""
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--json", type=Path, default=DEFAULT_JSON, metavar="PATH")
    for name, value in vars(IsaLatencySettings()).items():
        flag = "--" + name.replace("_", "-")
        nargs = "+" if name in LISTS else None
        p.add_argument(flag, type=LISTS.get(name, type(value)), nargs=nargs, default=value)
    args = p.parse_args(argv)
    try:
        settings = IsaLatencySettings(
            **{k: tuple(v) if k in LISTS else v for k, v in vars(args).items() if k != "json"}
        )
    except ValueError as err:
        p.error(str(err))
    return args, settings


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Check for CUDA and triton, then measure; return the figures (written to ``--json``)."""
    args, settings = parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("benchmarks/gpu/isa_latency.py needs a CUDA device, but torch.cuda.is_available() is False "
                         "here; on the CPU run benchmarks/isa_attention.py instead")  # fmt: skip
    if not is_available("triton"):
        raise SystemExit("benchmarks/gpu/isa_latency.py needs triton: pip install 'lightning-icml26[kernels]'")
    figures = measure_isa_latency(settings, "cuda", write=lambda f: write_json(args.json, "isa_latency_cuda", f, args))
    print(markdown_table(isa_latency_table(figures["rows"])))
    print_targets(figures["targets"])
    return figures


if __name__ == "__main__":
    main()
