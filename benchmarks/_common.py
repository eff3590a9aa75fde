"""Helpers shared by the benchmark scripts: the command line, the markdown table, targets, the JSON record.

Every JSON record carries ``figures["targets"]``: ``{name: {"value": x, "target": "<= 0.35", "met": bool}}``
with the same names at ``--quick`` and full size, so one script can read met and missed targets from any
benchmark's output.
"""

from __future__ import annotations

import argparse
import json
import math
import operator
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

__all__ = [
    "benchmark_parser",
    "check_poolable",
    "check_targets",
    "markdown_table",
    "print_targets",
    "ratio",
    "target",
    "worst",
    "write_json",
]

_OPS = {"<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt}


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


def target(value: float, op: str, threshold: float, note: str | None = None) -> dict[str, Any]:
    """One entry of ``figures["targets"]``: the measured value, the target as text, and whether it is met.

    Args:
        value: the measured figure (``nan`` when it could not be measured: never met).
        op: one of ``"<="``, ``"<"``, ``">="``, ``">"``.
        threshold: the figure the value is compared with.
        note: an optional short text on what the value covers (kept under ``"note"``).

    Returns:
        ``{"value": value, "target": "<op> <threshold>", "met": bool}``, plus ``"note"`` when given.

    Example:
        >>> target(0.31, "<=", 0.25)
        {'value': 0.31, 'target': '<= 0.25', 'met': False}
        >>> target(2.0, ">=", 1, note="slowest regime")["note"]
        'slowest regime'
    """
    if op not in _OPS:
        raise ValueError(f"op must be one of {sorted(_OPS)}, got {op!r}")
    if note is not None and not isinstance(note, str):
        raise TypeError(f"note must be a str or None, got {type(note).__name__}")
    value = float(value)
    met = not math.isnan(value) and bool(_OPS[op](value, threshold))
    entry: dict[str, Any] = {"value": value, "target": f"{op} {threshold:g}", "met": met}
    if note is not None:
        entry["note"] = note
    return entry


def worst(values: Sequence[float], kind: str) -> float:
    """The smallest (``kind="min"``) or largest (``"max"``) value; ``nan`` when empty or when any value is ``nan``.

    Python's ``min``/``max`` skip or keep ``nan`` depending on its position; here an unmeasured figure always
    makes the worst case unmeasured, so the target built from it is missed.

    Example:
        >>> worst([0.5, 1.2], "min"), worst([1.0, float("nan")], "min")
        (0.5, nan)
    """
    if kind not in ("min", "max"):
        raise ValueError(f"kind must be 'min' or 'max', got {kind!r}")
    floats = [float(v) for v in values]
    if not floats or any(math.isnan(v) for v in floats):
        return float("nan")
    return min(floats) if kind == "min" else max(floats)


def check_targets(figures: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Return ``figures["targets"]`` after checking its shape; raise ``ValueError`` when it is missing or malformed."""
    targets = figures.get("targets")
    if not isinstance(targets, dict) or not targets:
        raise ValueError(f"figures must carry a non-empty 'targets' dict built with target(), got {targets!r}")
    for name, entry in targets.items():
        well_formed = isinstance(entry, dict) and set(entry) - {"note"} == {"value", "target", "met"}
        if not well_formed or not isinstance(entry["met"], bool) or not isinstance(entry.get("note", ""), str):
            raise ValueError(
                f"targets[{name!r}] must be {{'value', 'target', 'met'}} (and an optional str 'note') from target(), "
                f"got {entry!r}"
            )
    return targets


def print_targets(targets: dict[str, dict[str, Any]]) -> None:
    """Print one line per target: name, measured value, target, met or MISSED."""
    print("\nTargets:")
    for name, entry in targets.items():
        print(f"- {name}: {_fmt(entry['value'])} (target {entry['target']}): {'met' if entry['met'] else 'MISSED'}")


def write_json(path: Path | None, name: str, figures: dict[str, Any], args: argparse.Namespace) -> None:
    """Write ``figures`` with the command line, versions and machine to ``path`` (no-op when ``None``).

    ``figures`` must hold a ``targets`` block (see :func:`target`); it is checked even when ``path`` is
    ``None`` so that a ``--quick`` run without ``--json`` catches a benchmark that forgot it.
    """
    check_targets(figures)
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


def check_poolable(
    records: Sequence[tuple[str, dict[str, Any]]],
    benchmark: str,
    settings_key: str,
    seeds_key: str,
    ignore: Sequence[str] = (),
    unique_seeds: bool = True,
) -> dict[str, Any]:
    """Check that JSON records are runs of ``benchmark`` with the same settings and (by default) no seed twice.

    Args:
        records: ``(name, record)`` pairs as written by :func:`write_json`.
        benchmark: the benchmark every record must be of.
        settings_key: the key of ``figures`` holding the run's settings (``"settings"``, ``"config"``).
        seeds_key: the key of those settings listing the run's seeds (not compared).
        ignore: other settings that may differ between the runs (not compared).
        unique_seeds: refuse a seed listed by two records; ``False`` where a benchmark splits one seed's work
            between runs and checks its own cells (``arm_kv_budget``: one seed's kinds in two runs).

    Returns:
        The first record's settings without ``seeds_key`` and ``ignore``.

    Raises:
        ValueError: no record, a record of another benchmark, a setting that differs (naming both records and
            the setting), or (with ``unique_seeds``) a seed in two records (naming both).

    Example:
        >>> rec = lambda steps, seeds: {"benchmark": "b", "figures": {"config": {"steps": steps, "seeds": seeds}}}
        >>> check_poolable([("a", rec(8, [0])), ("b", rec(8, [1]))], "b", "config", "seeds")
        {'steps': 8}
        >>> check_poolable([("a", rec(8, [0])), ("b", rec(16, [1]))], "b", "config", "seeds")
        Traceback (most recent call last):
        ValueError: b was run with steps=16 but a with steps=8; only runs with the same settings can be pooled
    """
    if not records:
        raise ValueError(f"pooling {benchmark} runs needs at least one JSON record")
    reference: dict[str, Any] | None = None
    first = ""
    owner: dict[int, str] = {}
    for name, record in records:
        if record.get("benchmark") != benchmark:
            raise ValueError(f"{name} is a record of {record.get('benchmark')!r}, not of {benchmark}")
        full = record["figures"][settings_key]
        settings = {k: v for k, v in full.items() if k != seeds_key and k not in ignore}
        if reference is None:
            reference, first = settings, name
        for key in sorted(set(reference) | set(settings)):
            if reference.get(key) != settings.get(key):
                raise ValueError(
                    f"{name} was run with {key}={settings.get(key)!r} but {first} with {key}={reference.get(key)!r}; "
                    "only runs with the same settings can be pooled"
                )
        for seed in full[seeds_key] if unique_seeds else ():
            if seed in owner:
                raise ValueError(f"seed {seed} is in both {owner[seed]} and {name}; pool each seed once")
            owner[seed] = name
    assert reference is not None
    return reference
