"""The acceptance run: checks first, then headline rows, within a wall-clock budget, with partial JSON as it goes."""

from __future__ import annotations

import math
import operator
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from lightning_icml26.acceptance.checks import ACCEPTANCE_CHECKS, AcceptanceCheck, CheckResult, dtype_name

__all__ = [
    "AcceptanceRow",
    "Budget",
    "acceptance_plan",
    "acceptance_targets",
    "run_acceptance",
    "run_check",
    "target_entry",
]

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    "<": operator.lt,
    ">=": operator.ge,
    ">": operator.gt,
}


def target_entry(value: float, op: str, threshold: float) -> dict[str, Any]:
    """``{"value", "target", "met"}``, the benchmarks' target format; an unmeasured (``nan``) value is never met.

    Example:
        >>> target_entry(0.3, "<=", 0.4)
        {'value': 0.3, 'target': '<= 0.4', 'met': True}
    """
    if op not in _OPS:
        raise ValueError(f"op must be one of {sorted(_OPS)}, got {op!r}")
    value = float(value)
    return {
        "value": value,
        "target": f"{op} {threshold:g}",
        "met": not math.isnan(value) and _OPS[op](value, threshold),
    }


@dataclass
class Budget:
    """Wall-clock budget of a run: seconds left, and whether a stage of ``need`` seconds still fits.

    Example:
        >>> b = Budget(60.0, clock=lambda: 0.0)
        >>> b.left(), b.fits(30.0), b.fits(90.0)
        (60.0, True, False)
    """

    seconds: float
    clock: Callable[[], float] = time.monotonic
    start: float = field(default=-1.0)

    def __post_init__(self) -> None:
        if not self.seconds > 0:
            raise ValueError(f"the time budget must be positive, got seconds={self.seconds!r}")
        if self.start < 0:
            self.start = self.clock()

    def left(self) -> float:
        """Seconds left (never below 0)."""
        return max(0.0, self.seconds - (self.clock() - self.start))

    def used(self) -> float:
        """Seconds used so far."""
        return self.seconds - self.left()

    def fits(self, need: float) -> bool:
        """Whether ``need`` seconds fit in what is left."""
        return need <= self.left()


@dataclass(frozen=True)
class AcceptanceRow:
    """A headline row: ``fn(minutes)`` measures it within ``minutes`` and returns a record with targets.

    The record is a benchmark JSON (``{"figures": {"targets": ...}}``), its ``figures``, or a dict with
    ``"targets"``; ``headline`` lists ``(target name, op, threshold)`` read from it.

    Example:
        >>> row = AcceptanceRow("toy", lambda m: {"targets": {"x": {"value": 1.0}}}, (("x", ">=", 0.5),), 1.0)
        >>> acceptance_targets([], [row], {}, {"toy": row.fn(1.0)})["toy.x"]["met"]
        True
    """

    name: str
    fn: Callable[[float], Mapping[str, Any]]
    headline: tuple[tuple[str, str, float], ...]
    min_minutes: float

    def __post_init__(self) -> None:
        if not self.min_minutes > 0:
            raise ValueError(f"min_minutes must be positive, got {self.min_minutes!r}")


def acceptance_plan(
    minutes: float, checks: Sequence[AcceptanceCheck] = ACCEPTANCE_CHECKS, rows: Sequence[AcceptanceRow] = ()
) -> list[dict[str, Any]]:
    """The stages in run order with their time share: checks first, then each row with the seconds left for it.

    Example:
        >>> [r["stage"] for r in acceptance_plan(10.0)][:2]
        ['check_upipe_fused_float32', 'check_upipe_fused_bfloat16']
    """
    if not minutes > 0:
        raise ValueError(f"minutes must be positive, got {minutes!r}")
    plan: list[dict[str, Any]] = [
        {"stage": f"check_{key}", "seconds": c.estimate_s} for c in checks for key in c.result_keys()
    ]
    left = minutes * 60 - sum(r["seconds"] for r in plan)
    for i, row in enumerate(rows):
        share = max(row.min_minutes * 60, left / (len(rows) - i)) if left > 0 else 0.0
        plan.append({"stage": row.name, "seconds": min(share, max(left, 0.0))})
        left -= share
    return plan


def _targets_of(record: Any) -> Mapping[str, Any]:
    """The ``targets`` of a benchmark record, of its ``figures``, or ``{}``."""
    if not isinstance(record, Mapping):
        return {}
    found = record.get("targets")
    if isinstance(found, Mapping):
        return found
    return _targets_of(record.get("figures"))


def acceptance_targets(
    checks: Sequence[AcceptanceCheck],
    rows: Sequence[AcceptanceRow],
    check_results: Mapping[str, Mapping[str, Any]],
    row_results: Mapping[str, Any],
) -> dict[str, dict[str, Any]]:
    """``check_<name>_<dtype>`` and ``<row>.<target>`` for every check and headline target (``nan`` if not run).

    Example:
        >>> t = acceptance_targets(ACCEPTANCE_CHECKS, [], {"sdpa_float32": {"error": 2e-6, "tolerance": 1e-3}}, {})
        >>> t["check_sdpa_float32"]["met"], t["check_sdpa_bfloat16"]["met"]
        (True, False)
    """
    targets: dict[str, dict[str, Any]] = {}
    for c in checks:
        for dtype, key in zip(c.dtypes, c.result_keys(), strict=True):
            got = check_results.get(key, {})
            targets[f"check_{key}"] = target_entry(got.get("error", math.nan), "<=", c.tolerance(dtype))
    for row in rows:
        measured = _targets_of(row_results.get(row.name))
        for name, op, threshold in row.headline:
            value = measured.get(name, {}).get("value")
            targets[f"{row.name}.{name}"] = target_entry(math.nan if value is None else value, op, threshold)
    return targets


def run_check(check: AcceptanceCheck, device: torch.device, dtype: torch.dtype) -> CheckResult:
    """``check.fn(device, dtype)``; a path that raises gives a failed result with the exception, not an error.

    Example:
        >>> run_check(ACCEPTANCE_CHECKS[1], torch.device("meta"), torch.float32).passed
        False
    """
    start = time.perf_counter()
    try:
        return check.fn(device, dtype)
    except Exception as exc:  # a failing path is a result: recorded, and the run goes on
        return CheckResult(
            check.name,
            dtype_name(dtype),
            math.nan,
            0.0,
            seconds=time.perf_counter() - start,
            exception=f"{exc!r}"[:500] + "\n" + traceback.format_exc()[-1500:],
        )


def run_acceptance(
    device: torch.device | None,
    budget: Budget,
    *,
    checks: Sequence[AcceptanceCheck] = ACCEPTANCE_CHECKS,
    rows: Sequence[AcceptanceRow] = (),
    write: Callable[[dict[str, Any]], None] = lambda figures: None,
) -> dict[str, Any]:
    """Run the checks then the rows on ``device`` within ``budget``; ``device=None`` plans only (a dry run).

    A stage that does not fit in the time left is skipped and named in ``figures["skipped"]``. ``write`` gets the
    figures before anything runs and after every stage, with ``"complete": False`` until the end, so a run cut
    short keeps what it measured.

    Example:
        >>> figures = run_acceptance(None, Budget(60.0))
        >>> figures["complete"], figures["dry_run"], len(figures["skipped"])
        (True, True, 8)
    """
    figures: dict[str, Any] = {
        "complete": False,
        "device": None if device is None else _device_name(device),
        "dry_run": device is None,
        "plan": acceptance_plan(budget.seconds / 60, checks, rows),
        "checks": {},
        "measures": {},
        "skipped": [],
    }

    def flush() -> None:
        figures["targets"] = acceptance_targets(checks, rows, figures["checks"], figures["measures"])
        figures["seconds_used"] = budget.used()
        write(figures)

    flush()
    for c in checks:
        for dtype in c.dtypes:
            if device is None or not budget.fits(c.estimate_s):
                figures["skipped"].append(f"{c.name}_{dtype_name(dtype)}")
                continue
            result = run_check(c, device, dtype)
            figures["checks"][result.key] = result.as_dict()
            flush()
    for i, row in enumerate(rows):
        if device is None or not budget.fits(row.min_minutes * 60):
            figures["skipped"].append(row.name)
            continue
        minutes = min(max(budget.left() / 60 / (len(rows) - i), row.min_minutes), budget.left() / 60)
        figures["measures"][row.name] = _measure(row, minutes)
        flush()
    figures["complete"] = True
    flush()
    return figures


def _measure(row: AcceptanceRow, minutes: float) -> dict[str, Any]:
    start = time.perf_counter()
    try:
        out: dict[str, Any] = {"targets": dict(_targets_of(row.fn(minutes)))}
    except (Exception, SystemExit) as exc:  # a row that fails or exits is recorded; the next one still runs
        out = {"targets": {}, "exception": f"{exc!r}"[:500], "traceback": traceback.format_exc()[-2000:]}
    out.update(minutes_given=minutes, seconds=time.perf_counter() - start)
    return out


def _device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else str(device)
