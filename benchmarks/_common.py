"""Helpers shared by the benchmark scripts: the command line, the markdown table, the JSON record."""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

__all__ = ["benchmark_parser", "markdown_table", "ratio", "write_json"]


def benchmark_parser(description: str) -> argparse.ArgumentParser:
    """An argument parser with the flags every benchmark takes: ``--quick`` and ``--json PATH``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="small size, under a minute on two CPU cores")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="write the figures as JSON")
    parser.add_argument("--seed", type=int, default=0)
    return parser


def ratio(ours: float, baseline: float) -> float:
    """``ours / baseline`` (``nan`` when the baseline is zero)."""
    return float("nan") if baseline == 0 else ours / baseline


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if value != value:  # nan
            return "nan"
        return f"{value:.4g}"
    return str(value)


def markdown_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """Render rows (dicts) as a markdown table; columns default to the keys of the first row."""
    if not rows:
        return "(no rows)"
    columns = list(columns or rows[0].keys())
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(_fmt(row.get(c, "")) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def write_json(path: Path | None, name: str, figures: dict[str, Any], args: argparse.Namespace) -> None:
    """Write ``figures`` with the command line, versions and machine to ``path`` (no-op when ``None``)."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "benchmark": name,
        "command": " ".join(sys.argv),
        "args": {k: str(v) for k, v in vars(args).items()},
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": {"platform": platform.platform(), "torch": torch.__version__, "threads": torch.get_num_threads()},
        "figures": figures,
    }
    path.write_text(json.dumps(record, indent=2, default=str))
