"""Files the recipe runner writes: atomic replacement, and ``metrics.csv`` history kept across a resume.

Lightning's ``CSVLogger`` deletes an existing ``metrics.csv`` when it opens its folder again, so a run
resumed in its own folder would lose the epochs before the checkpoint. :class:`CsvHistory` moves the old
file aside before ``fit`` (``metrics.before_resume.csv``) and, once ``fit`` ends (finished, interrupted or
failed), writes the old rows that precede the first newly logged step followed by the new rows, under the
union of both headers. A merge left unfinished by a killed process is completed by the next resume.

Every run folder ends with a verdict: :func:`write_summary` writes ``summary.json`` with a ``status`` from
:data:`RUN_STATUSES` (and, for ``failed`` / ``diverged``, the ``error`` line the CLI printed).
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "RUN_STATUSES",
    "CsvHistory",
    "atomic_write_text",
    "merge_metric_rows",
    "read_metric_rows",
    "write_summary",
]

#: The verdicts a run folder's ``summary.json`` may carry: it ran to the end; Ctrl-C; the cluster stopped it
#: (it can be requeued); the loss or the parameters went non-finite; anything else that ended it early.
RUN_STATUSES = ("finished", "interrupted", "preempted", "diverged", "failed")

Row = dict[str, str]


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and ``os.replace``.

    A reader sees the old file or the new one, never a half-written one.

    Example:
        >>> import tempfile, pathlib
        >>> target = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
        >>> atomic_write_text(target, "one")
        >>> atomic_write_text(target, "two")
        >>> target.read_text(), sorted(p.name for p in target.parent.iterdir())
        ('two', ['a.txt'])
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        mask = os.umask(0)  # mkstemp makes 0600 files; a plain open() would honour the umask
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_metric_rows(path: str | Path) -> tuple[list[str], list[Row]]:
    """Header and rows of a metrics CSV (an empty header and no rows when the file is missing).

    Example:
        >>> read_metric_rows("/no/such/metrics.csv")
        ([], [])
    """
    path = Path(path)
    if not path.is_file():
        return [], []
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
        return list(reader.fieldnames or []), rows


def _step(row: Row) -> float:
    try:
        return float(row.get("step") or "nan")
    except ValueError:
        return float("nan")


def merge_metric_rows(old: tuple[list[str], list[Row]], new: tuple[list[str], list[Row]]) -> str:
    """CSV text of the old rows before the first new step, then the new rows, under the union header.

    Old rows at or after the first step the resumed run logged were written after the checkpoint it
    resumed from, and are replaced by the new run's rows for those steps.

    Args:
        old: header and rows written before the resume.
        new: header and rows written by the resumed run.

    Example:
        >>> old = (["epoch", "step", "loss"], [{"epoch": "0", "step": "1", "loss": "2"},
        ...                                    {"epoch": "1", "step": "3", "loss": "1"}])
        >>> new = (["acc", "epoch", "step"], [{"acc": "0.9", "epoch": "1", "step": "3"}])
        >>> print(merge_metric_rows(old, new).strip())
        epoch,step,loss,acc
        0,1,2,
        1,3,,0.9
    """
    old_header, old_rows = old
    new_header, new_rows = new
    header = list(old_header) + [key for key in new_header if key not in old_header]
    first_new = min((_step(row) for row in new_rows), default=float("inf"))
    kept = [row for row in old_rows if not _step(row) >= first_new]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    writer.writerows(kept + new_rows)
    return buffer.getvalue()


class CsvHistory:
    r"""Keep the rows of a ``metrics.csv`` across a resumed ``fit`` that rewrites it.

    Args:
        path: the logger's ``metrics.csv``.

    Example:
        >>> import tempfile, pathlib
        >>> csv_path = pathlib.Path(tempfile.mkdtemp()) / "metrics.csv"
        >>> _ = csv_path.write_text("epoch,step,loss\n0,1,2.0\n")
        >>> history = CsvHistory(csv_path)
        >>> history.set_aside()   # before fit: Lightning would delete the file
        >>> _ = csv_path.write_text("epoch,step,loss\n1,3,1.0\n")  # what the resumed fit logs
        >>> history.restore()     # after fit
        >>> print(csv_path.read_text().strip())
        epoch,step,loss
        0,1,2.0
        1,3,1.0
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.backup = self.path.with_name(f"{self.path.stem}.before_resume{self.path.suffix}")

    def set_aside(self) -> None:
        """Move the current file aside (merging first what an unfinished earlier resume left)."""
        if self.backup.is_file():
            if self.path.is_file():
                atomic_write_text(
                    self.backup, merge_metric_rows(read_metric_rows(self.backup), read_metric_rows(self.path))
                )
                self.path.unlink()
        elif self.path.is_file():
            os.replace(self.path, self.backup)

    def restore(self) -> None:
        """Write the merged history atomically to :attr:`path` and drop the set-aside copy."""
        if not self.backup.is_file():
            return
        atomic_write_text(self.path, merge_metric_rows(read_metric_rows(self.backup), read_metric_rows(self.path)))
        self.backup.unlink()


def write_summary(
    run_dir: str | Path,
    *,
    recipe: str,
    status: str,
    seconds: float,
    metrics: Mapping[str, Any] | None = None,
    error: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Write the run's verdict, ``run_dir/summary.json``, atomically, and return what was written.

    Args:
        run_dir: the run's folder.
        recipe: the recipe's name.
        status: one of :data:`RUN_STATUSES`.
        seconds: how long the run took.
        metrics: the final scalar figures (empty when the run ended before any).
        error: the one-line message the CLI printed after ``error:``; required for ``failed`` and
            ``diverged``, refused for the other statuses.
        **extra: more keys (e.g. ``checkpoint``: the checkpoint a preempted run continues from).

    Returns:
        The summary.

    Raises:
        ValueError: an unknown ``status``, or ``error`` missing for a failure (or given for a success).

    Example:
        >>> import tempfile, pathlib, json
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = write_summary(folder, recipe="quickstart", status="failed", seconds=1.5, error="ValueError: bad")
        >>> saved = json.loads((folder / "summary.json").read_text())
        >>> saved["status"], saved["error"], saved["metrics"]
        ('failed', 'ValueError: bad', {})
        >>> write_summary(folder, recipe="quickstart", status="done", seconds=0.0)
        Traceback (most recent call last):
        ...
        ValueError: status='done' is not a run status; choose one of: finished, interrupted, preempted, diverged, failed
    """
    if status not in RUN_STATUSES:
        raise ValueError(f"status={status!r} is not a run status; choose one of: {', '.join(RUN_STATUSES)}")
    failing = status in ("failed", "diverged")
    if failing and not error:
        raise ValueError(f"status={status!r} needs the error line (error=...), got {error!r}")
    if not failing and error is not None:
        raise ValueError(f"error={error!r} is only for a failed or diverged run, not status={status!r}")
    summary: dict[str, Any] = {
        "recipe": recipe,
        "status": status,
        "run_dir": str(run_dir),
        "seconds": seconds,
        "metrics": dict(metrics or {}),
    }
    if error is not None:
        summary["error"] = error
    summary.update(extra)
    atomic_write_text(Path(run_dir) / "summary.json", json.dumps(summary, indent=2, default=str) + "\n")
    return summary
