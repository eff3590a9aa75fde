"""The ``fair_compas`` experiment: fairness frontiers of blind post-processing and the reductions approach.

:class:`FairFrontierConfig` holds the settings; :func:`fair_frontier_task` loads a tabular data set
(:func:`fair_splits`), fits the probability models, sweeps tolerances with
:func:`~lightning_icml26.algorithms.fairness_frontier` for each method, and writes ``frontier.png`` and
``frontier.json``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch import Trainer, seed_everything
from torch import Tensor
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26._requirements import Requirement, declare_requirements
from lightning_icml26.algorithms.fairness import (
    ExponentiatedGradientReduction,
    FairPostProcessor,
    check_criterion,
    fairness_frontier,
    fit_probability_model,
    make_mlp,
    plot_frontier,
)
from lightning_icml26.callbacks import FairReductionCallback
from lightning_icml26.data import FairTabularData, load_fair_dataset, split_indices
from lightning_icml26.modules import ClassifierModule
from lightning_icml26.tasks._config import TaskConfig

__all__ = ["FairClassifierSettings", "FairFrontierConfig", "fair_frontier_task", "fair_splits", "fit_fair_classifier"]

#: The methods of :class:`FairFrontierConfig` and their curve labels.
FAIR_METHODS = {
    "postprocess": "post-processing (blind)",
    "reduction": "reduction (EG)",
    "reduction_callback": "reduction (Lightning callback)",
}


@declare_requirements(
    [
        Requirement("pandas", "tabular", "the tabular data"),
        Requirement("matplotlib", "plots", "frontier.png"),
    ]
)
@dataclass(frozen=True)
class FairFrontierConfig(TaskConfig):
    """Settings of :func:`fair_frontier_task` (the ``fair_compas`` recipe); ``run()`` runs it.

    Args:
        out_dir: output folder.
        dataset: ``"compas"``, ``"adult"`` or ``"gaussian"``.
        dataset_kwargs: loader arguments.
        criterion: ``"dp"``, ``"eo"`` or ``"eopp"``.
        alphas: tolerances.
        methods: subset of ``("postprocess", "reduction", "reduction_callback")``.
        hidden: hidden widths of the MLPs.
        steps: Adam steps of the probability models.
        reduction_iter: EG iterations.
        reduction_oracle_steps: Adam steps per best response.
        callback_epochs: epochs (= EG rounds) of the ``"reduction_callback"`` training.
        callback_output: ``"mixture"`` (the callback's randomised LP mixture) or ``"best"`` (its best
            deterministic iterate).
        max_rows: subsample the data set to this many rows (``None``: all, in file order).
        sample_seed: seed of that subsample (``None``: ``seed + 99``).
        seed: split and model seed.

    Example:
        >>> FairFrontierConfig("out", criterion="eo").criterion
        'eo'
        >>> FairFrontierConfig("out", methods=["lp"])
        Traceback (most recent call last):
        ...
        ValueError: methods must be among ('postprocess', 'reduction', 'reduction_callback'), got ['lp']
    """

    out_dir: str | Path
    dataset: str = "compas"
    dataset_kwargs: dict[str, Any] | None = None
    criterion: str = "dp"
    alphas: Sequence[float] = (0.0, 0.02, 0.05, 0.1, 0.2)
    methods: Sequence[str] = ("postprocess", "reduction")
    hidden: Sequence[int] = (32,)
    steps: int = 300
    reduction_iter: int = 15
    reduction_oracle_steps: int = 50
    callback_epochs: int = 20
    callback_output: str = "mixture"
    max_rows: int | None = None
    sample_seed: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "criterion", check_criterion(self.criterion))
        unknown = sorted(set(self.methods) - set(FAIR_METHODS))
        if unknown:
            raise ValueError(f"methods must be among {tuple(FAIR_METHODS)}, got {unknown}")
        if self.callback_output not in ("mixture", "best"):
            raise ValueError(f"callback_output must be 'mixture' or 'best', got {self.callback_output!r}")
        for name in ("alphas", "methods", "hidden"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    def run(self) -> dict[str, Any]:
        """Run :func:`fair_frontier_task` with these settings."""
        return fair_frontier_task(self)


@dataclass(frozen=True)
class FairClassifierSettings:
    """Settings of :func:`fit_fair_classifier`: the problem, the tolerance and the training.

    Args:
        num_classes: number of classes.
        num_groups: number of groups.
        criterion: the fairness criterion (see ``FairReductionCallback``).
        alpha: its tolerance.
        hidden: hidden widths of the MLP.
        epochs: training epochs (batches of 256, Adam at 0.01).
        output: ``"mixture"`` for the randomised classifier's class distribution ``(n, K)``, ``"best"`` for the
            best deterministic iterate's hard labels.
        seed: seeds the weights and the shuffling.

    Example:
        >>> FairClassifierSettings(2, 2, "dp", 0.1).epochs
        20
    """

    num_classes: int
    num_groups: int
    criterion: str
    alpha: float
    hidden: Sequence[int] = (32,)
    epochs: int = 20
    output: str = "mixture"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.output not in ("mixture", "best"):
            raise ValueError(f"output must be 'mixture' or 'best', got {self.output!r}")


def fair_splits(config: FairFrontierConfig) -> tuple[FairTabularData, FairTabularData, FairTabularData]:
    """The task's train / calibration / test splits (50/25/25), standardised with training statistics.

    Example:
        >>> train, cal, test = fair_splits(FairFrontierConfig("out", "gaussian", {"num_samples": 200}))
        >>> len(train.y), len(cal.y), len(test.y), abs(float(train.x.mean())) < 1e-5
        (100, 50, 50, True)
    """
    data = load_fair_dataset(config.dataset, **dict(config.dataset_kwargs or {}))
    if config.max_rows is not None and config.max_rows <= len(data.y):  # all rows: shuffled by the same draw
        data = data.sample(config.max_rows, config.seed + 99 if config.sample_seed is None else config.sample_seed)
    train, cal, test = (data.subset(i) for i in split_indices(len(data.y), (0.5, 0.25, 0.25), config.seed))
    mean, std = train.x.mean(0), train.x.std(0).clamp_min(1e-6)
    for split in (train, cal, test):
        split.x = (split.x - mean) / std
    return train, cal, test


def _probability_models(
    config: FairFrontierConfig, train: FairTabularData
) -> Callable[[Tensor], tuple[Tensor, Tensor]]:
    """``x -> (P(Y | x), p(a | x))`` (``p(a, y | x)`` for EO/EOpp), MLPs fitted on the training split."""
    k, joint = train.num_classes, config.criterion != "dp"
    y_model = fit_probability_model(train.x, train.y, k, config.hidden, config.steps, lr=0.01, seed=config.seed)
    g_target = train.a * k + train.y if joint else train.a
    g_classes = train.num_groups * (k if joint else 1)
    g_model = fit_probability_model(
        train.x, g_target, g_classes, config.hidden, config.steps, lr=0.01, seed=config.seed + 1
    )

    def probs(x: Tensor) -> tuple[Tensor, Tensor]:
        with torch.no_grad():
            return y_model(x).softmax(1), g_model(x).softmax(1)

    return probs


def _method_predictor(
    config: FairFrontierConfig, method: str, splits: tuple[FairTabularData, ...], probs: Callable[..., Any]
) -> Callable[[float], Tensor]:
    """``alpha -> predictions on the test split`` of one method."""
    train, cal, test = splits
    k, g = train.num_classes, train.num_groups
    x_fit, y_fit, a_fit = (torch.cat([getattr(train, n), getattr(cal, n)]) for n in ("x", "y", "a"))
    if method == "postprocess":
        (py_c, pg_c), (py_t, pg_t) = probs(cal.x), probs(test.x)

        def post(alpha: float) -> Tensor:
            pp = FairPostProcessor(k, g, config.criterion, alpha, seed=config.seed).fit(py_c, pg_c, cal.a)
            return pp.predict_proba(py_t, pg_t, generator=torch.Generator().manual_seed(config.seed))

        return post
    if method == "reduction":

        def reduce(alpha: float) -> Tensor:
            red = ExponentiatedGradientReduction(
                lambda: make_mlp(train.x.shape[1], k, config.hidden), k, g, config.criterion, alpha,
                max_iter=config.reduction_iter, oracle_steps=config.reduction_oracle_steps, lr=0.02, seed=config.seed,
            ).fit(x_fit, y_fit, a_fit)  # fmt: skip
            return red.predict_proba(test.x)

        return reduce

    def reduce_lightning(alpha: float) -> Tensor:
        settings = FairClassifierSettings(
            k, g, config.criterion, alpha, config.hidden, config.callback_epochs, config.callback_output, config.seed
        )
        return fit_fair_classifier(x_fit, y_fit, a_fit, test.x, settings)

    return reduce_lightning


def fair_frontier_task(config: FairFrontierConfig) -> dict[str, Any]:
    """Train, post-process / reduce, and sweep the frontier on a fairness data set (the ``fair_compas`` recipe).

    Splits 50/25/25 (train / calibration / test, :func:`fair_splits`), fits MLP probability models for
    ``P(Y | x)`` and ``p(a | x)`` (``p(a, y | x)`` for EO/EOpp) on the training split, fits
    :class:`FairPostProcessor` on the calibration split and :class:`ExponentiatedGradientReduction` on
    train + calibration, and evaluates on the test split. Method ``"reduction_callback"`` trains the same MLP
    as a :class:`~lightning_icml26.modules.ClassifierModule` with ``lightning.pytorch.Trainer`` and
    :class:`~lightning_icml26.callbacks.FairReductionCallback` on train + calibration (one EG round per
    epoch, :func:`fit_fair_classifier`). Writes ``frontier.png`` and ``frontier.json``.

    Args:
        config: the settings.

    Returns:
        Summary figures: unconstrained accuracy and gap, and per method and tolerance accuracy and gap
        (``"<method>/alpha=<alpha>/accuracy"``, ``".../gap"``).

    Example:
        >>> import tempfile
        >>> out = fair_frontier_task(FairFrontierConfig(tempfile.mkdtemp(), dataset="gaussian",
        ...     dataset_kwargs={"num_samples": 200}, alphas=[0.1], methods=["postprocess"], steps=5))
        >>> sorted(out)[:2]
        ['postprocess/alpha=0.1/accuracy', 'postprocess/alpha=0.1/gap']
    """
    splits = fair_splits(config)
    train, _, test = splits
    probs = _probability_models(config, train)

    def sweep(method: Callable[[float], Tensor], alphas: Sequence[float]) -> list[dict[str, float]]:
        return fairness_frontier(method, alphas, test.y, test.a, train.num_groups, config.criterion)

    unconstrained = sweep(lambda _: probs(test.x)[0].argmax(1), [0.0])
    summary: dict[str, Any] = {
        "unconstrained/accuracy": unconstrained[0]["accuracy"],
        "unconstrained/gap": unconstrained[0]["gap"],
    }
    curves: dict[str, list[dict[str, float]]] = {}
    for method, label in FAIR_METHODS.items():
        if method in config.methods:
            curves[label] = sweep(_method_predictor(config, method, splits, probs), config.alphas)
            for row in curves[label]:
                summary[f"{method}/alpha={row['alpha']:g}/accuracy"] = row["accuracy"]
                summary[f"{method}/alpha={row['alpha']:g}/gap"] = row["gap"]
    curves["unconstrained"] = unconstrained
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plot_frontier(curves, out / "frontier.png", title=f"{config.dataset}: {config.criterion} frontier")
    (out / "frontier.json").write_text(json.dumps(curves, indent=2))
    return dict(sorted(summary.items()))


def fit_fair_classifier(x: Tensor, y: Tensor, a: Tensor, x_test: Tensor, settings: FairClassifierSettings) -> Tensor:
    """Train an MLP ``ClassifierModule`` with ``FairReductionCallback``; class distribution (or labels) on ``x_test``.

    Args:
        x: training features.
        y: training labels.
        a: training group ids.
        x_test: the features to predict.
        settings: the problem, tolerance and training (:class:`FairClassifierSettings`).

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> x, y, a = torch.randn(64, 3, generator=g), torch.randint(0, 2, (64,)), torch.randint(0, 2, (64,))
        >>> dist = fit_fair_classifier(x, y, a, x[:5], FairClassifierSettings(2, 2, "dp", 0.1, [8], epochs=1))
        >>> tuple(dist.shape), bool(torch.allclose(dist.sum(1), torch.ones(5, dtype=dist.dtype)))
        ((5, 2), True)
    """
    s = settings
    seed_everything(s.seed, verbose=False)
    module = ClassifierModule(
        make_mlp(x.shape[1], s.num_classes, s.hidden),
        s.num_classes,
        optimizer=functools.partial(torch.optim.Adam, lr=0.01),
    )
    fair = FairReductionCallback(s.num_classes, s.num_groups, s.criterion, s.alpha, output="best")
    loader = DataLoader(
        TensorDataset(x, y, a), batch_size=256, shuffle=True, generator=torch.Generator().manual_seed(s.seed)
    )
    trainer = Trainer(
        max_epochs=s.epochs, callbacks=[fair], accelerator="cpu", devices=1, logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
    )  # fmt: skip
    trainer.fit(module, loader)
    if s.output == "mixture":
        return fair.predict_mixture(module, x_test)
    with torch.no_grad():
        return module(x_test).argmax(1)
