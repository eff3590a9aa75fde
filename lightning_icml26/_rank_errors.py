"""Errors from the ranks of a distributed run, as one readable line; the full traceback goes to a log file.

A rank spawned by Lightning that fails reaches the ``icml26`` process as torch's ``ProcessRaisedException``
whose message is the rank's whole traceback, or as ``ProcessExitedException`` when it was killed. A rank
whose peer stopped answering fails in a collective when the process group's timeout runs out.
:func:`rank_error_line` turns each into one line, root cause first (at most about 200 characters), and
writes the full text to ``<run_dir>/logs/rank<k>.traceback.log``.
"""

from __future__ import annotations

import re
import signal
import traceback
from pathlib import Path

from torch.multiprocessing import ProcessExitedException, ProcessRaisedException

__all__ = ["MAX_LINE", "is_rank_error", "rank_error_line"]

#: The longest cause text kept on the error line.
MAX_LINE = 200

_TIMEOUT = re.compile(r"timed out|timeout|deadline exceeded", re.IGNORECASE)


def _cause_of(text: str) -> str:
    """The last ``Type: message`` line of a traceback text."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        if re.match(r"^[\w.]+(Error|Exception|Exit|Interrupt|Warning)\b", line):
            return line
    return lines[-1] if lines else "unknown error"


def _short(text: str, limit: int = MAX_LINE) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _peers(rank: int, world_size: int | None) -> str:
    if world_size == 2:
        return f"rank {1 - rank}"
    return "another rank"


def is_rank_error(error: BaseException) -> bool:
    """Whether ``error`` came from a rank (a spawned process that raised or died, or a collective that timed out).

    Example:
        >>> is_rank_error(ValueError("lr"))
        False
    """
    return isinstance(error, ProcessRaisedException | ProcessExitedException) or bool(
        type(error).__name__ == "DistBackendError" or _TIMEOUT.search(str(error)) and "gloo" in str(error).lower()
    )


def rank_error_line(
    error: BaseException,
    run_dir: str | Path | None = None,
    timeout_s: float | None = None,
    world_size: int | None = None,
) -> str:
    r"""One line for an error from a rank (root cause first); the full text goes to ``run_dir/logs``.

    Args:
        error: the exception the launching process caught.
        run_dir: the run folder (no log file when ``None``).
        timeout_s: the collective timeout, named when a rank timed out.
        world_size: the number of ranks (names the silent peer of a 2-rank run).

    Example:
        >>> from torch.multiprocessing import ProcessRaisedException
        >>> tb = chr(10).join(["Traceback (most recent call last):", '  File "x.py", line 1', "ValueError: bad lr"])
        >>> rank_error_line(ProcessRaisedException(tb, 1, 4242))
        'rank 1: ValueError: bad lr'
    """
    rank = getattr(error, "error_index", 0)
    full = str(error) if isinstance(error, ProcessRaisedException) else "".join(traceback.format_exception(error))
    log = None
    if run_dir is not None:
        log = Path(run_dir) / "logs" / f"rank{rank}.traceback.log"
        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text(full)
        except OSError:
            log = None
    where = f" (traceback: {log})" if log is not None else ""
    if isinstance(error, ProcessExitedException):
        code = error.exit_code
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        return f"rank {rank} ended with {how}{where}"
    cause = _cause_of(full) if isinstance(error, ProcessRaisedException) else f"{type(error).__name__}: {error}"
    if _TIMEOUT.search(cause):
        limit = f" after {timeout_s:g} s" if timeout_s is not None else ""
        return (
            f"rank {rank} timed out{limit} in a collective: no answer from {_peers(rank, world_size)}"
            f" (raise strategy.timeout if it is only slow){where}"
        )
    return f"rank {rank}: {_short(cause)}{where}"
