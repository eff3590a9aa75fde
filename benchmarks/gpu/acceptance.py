"""One GPU acceptance run, sized for 10 minutes on one H100: check every CUDA path, then the headline rows.

Stage 1 (about a minute): every check of :data:`lightning_icml26.acceptance.ACCEPTANCE_CHECKS` on CUDA, forward
and backward against its reference, float32 and bf16 where the path offers it (UPipe's fused operator with SDPA's
flash / memory-efficient kernels, SDPA, FSDP2 on one device, ISA's Triton path, ARM).

Stage 2, headline rows in order of importance, each given its share of the time left (``--minutes`` in all):
UPipe against Ulysses (peak memory and longest sequence at the Llama-8B layer shape,
``benchmarks/gpu/upipe_memory_cuda.py``), ISA against SDPA's flash backend at 32K and 64K tokens
(:func:`lightning_icml26.acceptance.measure_isa_latency`), then a short ITC MinAtar row
(``benchmarks/gpu/itc_minatar_cuda.py``) and a short ArBG row (the ``arbg_aldp`` recipe on the GPU). A stage
that does not fit in the time left is skipped and named in the JSON.

The JSON (``--json``) is rewritten after every stage with ``"complete": false`` until the end. ``figures.targets``
has the same names in every run (``nan``, i.e. missed, for what did not run): ``check_<name>_<dtype>`` (relative
error at most the tolerance) and ``<row>.<target>``. ``--dry-run`` plans and writes the JSON without a GPU.

    python -m benchmarks.gpu.acceptance --json benchmarks/results/gpu_acceptance.json     # make gpu-check
    python -m benchmarks.gpu.acceptance --dry-run
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from benchmarks._common import markdown_table, print_targets, write_json
from lightning_icml26.acceptance import AcceptanceRow, Budget, IsaLatencySettings, measure_isa_latency, run_acceptance
from lightning_icml26.cli import run_recipe

DEFAULT_JSON = Path("benchmarks/results/gpu_acceptance.json")


def _script_row(module: str, argv: Sequence[str]) -> Mapping[str, Any]:
    """``benchmarks.gpu.<module>.main(argv)``: the record of a GPU script owned by its method."""
    return __import__(f"benchmarks.gpu.{module}", fromlist=["main"]).main(list(argv))  # type: ignore[no-any-return]


def _arbg_row(minutes: float, run_dir: Path) -> Mapping[str, Any]:
    """The ``arbg_aldp`` recipe on one GPU, stopped after ``minutes`` of training (a short row, not the paper's)."""
    train = max(0.5, minutes - 1.0)
    overrides = ["trainer.accelerator=gpu", "trainer.devices=1", f"+trainer.max_time={{minutes: {train:.2f}}}"]
    metrics = run_recipe("arbg_aldp", overrides, run_dir=run_dir)["metrics"]
    names = {"ess_min": "eval/ess", "e_w2_max": "eval/energy_w2"}
    return {"targets": {k: {"value": metrics.get(v, float("nan"))} for k, v in names.items()}}


def rows(out: Path) -> tuple[AcceptanceRow, ...]:
    """The headline rows in order of importance; each writes its own JSON beside ``out``."""

    def path(name: str) -> str:
        return str(out.with_name(f"{out.stem}_{name}.json"))

    def isa(minutes: float) -> Mapping[str, Any]:
        settings = IsaLatencySettings(lengths=(16384, 32768), max_minutes=minutes)
        return measure_isa_latency(
            settings, "cuda", write=lambda f: write_json(Path(path("isa")), "isa_latency_cuda", f, argparse.Namespace())
        )

    return (
        AcceptanceRow(
            "upipe_memory",
            lambda m: _script_row("upipe_memory_cuda", ["--max-minutes", f"{m:.2f}", "--json", path("upipe")]),
            (("cuda_attn_peak_P2", "<=", 0.35), ("cuda_attn_max_seq_P2", ">=", 1.8),
             ("cuda_model_ckpt_max_seq_P2", ">=", 1.25)),
            min_minutes=2.0,
        ),
        AcceptanceRow("isa_latency", isa, (("isa_triton_latency_ratio_64k", "<=", 0.4),
                                           ("isa_triton_cosine_min", ">=", 0.99)), min_minutes=1.5),
        AcceptanceRow(
            "itc_short",
            lambda m: _script_row("itc_minatar_cuda", ["--games", "breakout", "--wm-minutes", "0.5", "--agent-seconds",
                                                       f"{max(5.0, 60 * (m - 1.0)) / 2:.1f}", "--set", "seeds=1",
                                                       "--json", path("itc")]),
            (),
            min_minutes=1.5,
        ),
        AcceptanceRow("arbg_short", lambda m: _arbg_row(m, Path(tempfile.mkdtemp())),
                      (("ess_min", ">=", 0.01), ("e_w2_max", "<=", 1.0)), min_minutes=1.5),
    )  # fmt: skip


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line: ``--minutes``, ``--json``, ``--dry-run``."""
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--minutes", type=float, default=10.0, help="wall-clock budget of the whole run")
    p.add_argument("--json", type=Path, default=DEFAULT_JSON, metavar="PATH")
    p.add_argument("--dry-run", action="store_true", help="plan and write the JSON; no GPU needed")
    args = p.parse_args(argv)
    if not args.minutes > 0:
        p.error(f"--minutes must be positive, got {args.minutes}")
    return args


def main(argv: Sequence[str] | None = None, budget: Budget | None = None) -> dict[str, Any]:
    """Run the checks and rows (or the dry run); return the figures, also written to ``--json``."""
    args = parse_args(argv)
    if not args.dry_run and not torch.cuda.is_available():
        raise SystemExit("benchmarks/gpu/acceptance.py needs a CUDA device (use --dry-run to see the plan)")
    device = None if args.dry_run else torch.device("cuda")

    def write(figures: dict[str, Any]) -> None:
        write_json(args.json, "gpu_acceptance", json.loads(json.dumps(figures, default=str)), args)

    figures = run_acceptance(device, budget or Budget(args.minutes * 60), rows=rows(args.json), write=write)
    print(markdown_table(figures["plan"]))
    print_targets(figures["targets"])
    return figures


if __name__ == "__main__":
    main()
