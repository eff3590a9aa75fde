"""The forecast table (ForecastBench's shape) and the loader of a user's CSV or JSON forecast file.

The table is ``(question_id, resolution, p_human, p_model)`` (``p_llm`` is accepted as an alias of
``p_model``), optionally with numeric feature columns for a feature-dependent pooling weight. Nothing is
downloaded: ForecastBench files must be fetched by the user beforehand.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
from torch import Tensor

__all__ = ["ForecastTable", "Kind", "load_forecasts"]


Kind = Literal["probability", "real"]


_REQUIRED = ("question_id", "resolution", "p_human", "p_model")


@dataclass
class ForecastTable:
    """One row per question: the resolution, the human's and the model's forecasts, optional features.

    Attributes:
        question_id: ``N`` identifiers (strings; repeats allowed, e.g. several polls of one state).
        resolution: float64 outcomes ``(N,)`` (0/1 events, fractions, or reals for ``kind="real"``).
        p_human: float64 human forecasts ``(N,)``.
        p_model: float64 model forecasts ``(N,)``.
        features: float32 ``(N, D)`` (``D`` may be 0).
        feature_names: ``D`` names.
        kind: ``"probability"`` (everything in ``[0, 1]``, checked) or ``"real"``.
        name: a label for reports.
        extras: generator ground truth (e.g. the latent noise) keyed by name.

    Raises:
        ValueError: mismatched lengths, or forecasts / resolutions outside ``[0, 1]`` for ``"probability"``.
    """

    question_id: list[str]
    resolution: Tensor
    p_human: Tensor
    p_model: Tensor
    features: Tensor = field(default_factory=lambda: torch.zeros(0, 0))
    feature_names: list[str] = field(default_factory=list)
    kind: Kind = "probability"
    name: str = "forecasts"
    extras: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in ("probability", "real"):
            raise ValueError(f"kind must be 'probability' or 'real', got {self.kind!r}")
        self.resolution = torch.as_tensor(self.resolution, dtype=torch.float64).reshape(-1)
        self.p_human = torch.as_tensor(self.p_human, dtype=torch.float64).reshape(-1)
        self.p_model = torch.as_tensor(self.p_model, dtype=torch.float64).reshape(-1)
        n = len(self.question_id)
        lengths = {"question_id": n, "resolution": len(self.resolution), "p_human": len(self.p_human),
                   "p_model": len(self.p_model)}  # fmt: skip
        if self.features.numel() == 0 and self.features.shape[0] != n:
            self.features = torch.zeros(n, 0)
        lengths["features"] = self.features.shape[0]
        if len(set(lengths.values())) != 1:
            raise ValueError(f"all columns must have the same length, got {lengths}")
        if self.features.ndim != 2 or self.features.shape[1] != len(self.feature_names):
            raise ValueError(f"features must be (N, {len(self.feature_names)}) to match feature_names, got "
                             f"{tuple(self.features.shape)}")  # fmt: skip
        self.features = self.features.float()
        for column in ("resolution", "p_human", "p_model"):
            values = getattr(self, column)
            if torch.isnan(values).any():
                raise ValueError(f"{column} must not contain NaN (row {int(torch.isnan(values).nonzero()[0])})")
            if self.kind == "probability" and n:
                low, high = float(values.min()), float(values.max())
                if low < 0.0 or high > 1.0:
                    raise ValueError(f"{column} must be probabilities in [0, 1] (kind='probability'), got values "
                                     f"in [{low:.6g}, {high:.6g}]")  # fmt: skip

    def __len__(self) -> int:
        return len(self.question_id)

    def subset(self, index: Tensor | Sequence[int]) -> ForecastTable:
        """Rows ``index`` as a new table (extras are subset when they have one entry per row)."""
        index = torch.as_tensor(index, dtype=torch.long)
        n = len(self)
        extras = {k: v[index] if isinstance(v, Tensor) and v.shape[:1] == (n,) else v for k, v in self.extras.items()}
        return ForecastTable(
            [self.question_id[i] for i in index.tolist()],
            self.resolution[index],
            self.p_human[index],
            self.p_model[index],
            self.features[index],
            list(self.feature_names),
            self.kind,
            self.name,
            extras,
        )


def _columns_from_records(records: list[dict[str, Any]], path: Path) -> dict[str, list[Any]]:
    if not records:
        return {}
    if not all(isinstance(r, dict) for r in records):
        raise ValueError(f"{path}: a JSON list must hold one object per question")
    keys = list(records[0])
    return {k: [r.get(k) for r in records] for k in keys}


def load_forecasts(
    path: str | Path,
    feature_columns: Sequence[str] = (),
    kind: Kind = "probability",
    name: str | None = None,
) -> ForecastTable:
    """Read a ``(question_id, resolution, p_human, p_model)`` table from a CSV or JSON file.

    CSV: a header row with those columns (``p_llm`` is read as ``p_model``). JSON: a list of objects, an
    object of equal-length columns, or ``{"forecasts": [...]}``. Extra columns are ignored unless named in
    ``feature_columns``.

    Args:
        path: ``.csv`` or ``.json`` file.
        feature_columns: numeric columns to keep as features.
        kind: ``"probability"`` (values checked in ``[0, 1]``) or ``"real"``.
        name: label (defaults to the file name).

    Raises:
        FileNotFoundError: no such file.
        ValueError: unknown suffix, a missing column, a non-numeric value, mismatched lengths, or a
            probability outside ``[0, 1]``.

    Example:
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "f.csv"
        >>> _ = path.write_text("question_id,resolution,p_human,p_llm\\nq1,1,0.7,0.9\\nq2,0,0.4,0.2\\n")
        >>> table = load_forecasts(path)
        >>> table.question_id, table.p_model.tolist()
        (['q1', 'q2'], [0.9, 0.2])
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no forecast file at {path}")
    suffix = path.suffix.lower()
    columns: dict[str, list[Any]]
    if suffix == ".csv":
        with open(path, newline="") as handle:
            reader = csv.DictReader(handle)
            rows = list(reader)
            header = list(reader.fieldnames or [])
        columns = {k: [r.get(k) for r in rows] for k in header}
    elif suffix == ".json":
        raw = json.loads(path.read_text())
        if isinstance(raw, dict) and isinstance(raw.get("forecasts"), list):
            raw = raw["forecasts"]
        if isinstance(raw, list):
            columns = _columns_from_records(raw, path)
        elif isinstance(raw, dict):
            columns = {k: list(v) if isinstance(v, list) else v for k, v in raw.items()}
            bad = [k for k, v in columns.items() if not isinstance(v, list)]
            if bad:
                raise ValueError(f"{path}: a JSON object of columns must map every key to a list, got {bad}")
        else:
            raise ValueError(f"{path}: JSON must be a list of objects or an object of columns")
    else:
        raise ValueError(f"path must end in .csv or .json, got {path.name!r}")
    if "p_model" not in columns and "p_llm" in columns:
        columns["p_model"] = columns.pop("p_llm")
    missing = [c for c in (*_REQUIRED, *feature_columns) if c not in columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}; found {sorted(columns)}")
    lengths = {c: len(columns[c]) for c in (*_REQUIRED, *feature_columns)}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"{path}: columns have mismatched lengths {lengths}")

    def numbers(column: str) -> Tensor:
        out = []
        for i, value in enumerate(columns[column]):
            try:
                out.append(float(value))
            except (TypeError, ValueError):
                raise ValueError(f"{path}: column {column!r} row {i} is not a number: {value!r}") from None
        return torch.tensor(out, dtype=torch.float64)

    features = (
        torch.stack([numbers(c) for c in feature_columns], 1).float()
        if feature_columns
        else torch.zeros(lengths["question_id"], 0)
    )
    return ForecastTable(
        [str(q) for q in columns["question_id"]],
        numbers("resolution"),
        numbers("p_human"),
        numbers("p_model"),
        features,
        list(feature_columns),
        kind,
        name or path.stem,
    )
