"""The ``fair_compas`` experiment: fairness frontiers of blind post-processing and the reductions approach.

It loads a tabular data set, fits the probability models, sweeps tolerances with
:func:`~lightning_icml26.algorithms.fairness_frontier` for each method, and writes ``frontier.png`` and
``frontier.json``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
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
from lightning_icml26.data import load_fair_dataset, split_indices
from lightning_icml26.modules import ClassifierModule

__all__ = ["fair_frontier_task", "fit_fair_classifier"]


@declare_requirements(
    [
        Requirement("pandas", "tabular", "the tabular data"),
        Requirement("matplotlib", "plots", "frontier.png"),
    ]
)
def fair_frontier_task(
    out_dir: str | Path,
    dataset: str = "compas",
    dataset_kwargs: dict[str, Any] | None = None,
    criterion: str = "dp",
    alphas: Sequence[float] = (0.0, 0.02, 0.05, 0.1, 0.2),
    methods: Sequence[str] = ("postprocess", "reduction"),
    hidden: Sequence[int] = (32,),
    steps: int = 300,
    reduction_iter: int = 15,
    reduction_oracle_steps: int = 50,
    callback_epochs: int = 20,
    callback_output: str = "mixture",
    max_rows: int | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Train, post-process / reduce, and sweep the frontier on a fairness data set (the ``fair_compas`` recipe).

    Splits 50/25/25 (train / calibration / test), standardises with training statistics, fits MLP
    probability models for ``P(Y | x)`` and ``p(a | x)`` (``p(a, y | x)`` for EO/EOpp) on the training split,
    fits :class:`FairPostProcessor` on the calibration split and :class:`ExponentiatedGradientReduction` on
    train + calibration, and evaluates on the test split. Method ``"reduction_callback"`` trains the same MLP
    as a :class:`~lightning_icml26.modules.ClassifierModule` with ``lightning.pytorch.Trainer`` and
    :class:`~lightning_icml26.callbacks.FairReductionCallback` on train + calibration (one EG round per
    epoch). Writes ``frontier.png`` and ``frontier.json``.

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
        max_rows: subsample the data set to this many rows (``None``: all).
        seed: split and model seed.

    Returns:
        Summary figures: unconstrained accuracy and gap, and per method and tolerance accuracy and gap.

    Example:
        >>> import tempfile
        >>> out = fair_frontier_task(tempfile.mkdtemp(), dataset="gaussian",
        ...     dataset_kwargs={"num_samples": 200}, alphas=[0.1], methods=["postprocess"], steps=5)
        >>> sorted(out)[:2]
        ['postprocess/alpha=0.1/accuracy', 'postprocess/alpha=0.1/gap']
    """
    criterion = check_criterion(criterion)
    known = ("postprocess", "reduction", "reduction_callback")
    unknown = set(methods) - set(known)
    if unknown:
        raise ValueError(f"methods must be among {known}, got {sorted(unknown)}")
    if callback_output not in ("mixture", "best"):
        raise ValueError(f"callback_output must be 'mixture' or 'best', got {callback_output!r}")
    data = load_fair_dataset(dataset, **dict(dataset_kwargs or {}))
    if max_rows is not None and max_rows < len(data.y):
        data = data.sample(max_rows, seed + 99)
    train, cal, test = (data.subset(i) for i in split_indices(len(data.y), (0.5, 0.25, 0.25), seed))
    mean, std = train.x.mean(0), train.x.std(0).clamp_min(1e-6)
    for split in (train, cal, test):
        split.x = (split.x - mean) / std
    num_classes, num_groups, d = data.num_classes, data.num_groups, data.x.shape[1]
    joint = criterion != "dp"
    y_model = fit_probability_model(train.x, train.y, num_classes, hidden, steps, lr=0.01, seed=seed)
    g_target = train.a * num_classes + train.y if joint else train.a
    g_model = fit_probability_model(
        train.x, g_target, num_groups * (num_classes if joint else 1), hidden, steps, lr=0.01, seed=seed + 1
    )

    def probs(x: Tensor) -> tuple[Tensor, Tensor]:
        with torch.no_grad():
            return y_model(x).softmax(1), g_model(x).softmax(1)

    curves: dict[str, list[dict[str, float]]] = {}
    unconstrained = fairness_frontier(
        lambda _: probs(test.x)[0].argmax(1), [0.0], test.y, test.a, num_groups, criterion
    )
    summary: dict[str, Any] = {
        "unconstrained/accuracy": unconstrained[0]["accuracy"],
        "unconstrained/gap": unconstrained[0]["gap"],
    }
    if "postprocess" in methods:
        py_c, pg_c = probs(cal.x)
        py_t, pg_t = probs(test.x)

        def post(alpha: float) -> Tensor:
            pp = FairPostProcessor(num_classes, num_groups, criterion, alpha, seed=seed).fit(py_c, pg_c, cal.a)
            return pp.predict_proba(py_t, pg_t, generator=torch.Generator().manual_seed(seed))

        curves["post-processing (blind)"] = fairness_frontier(post, alphas, test.y, test.a, num_groups, criterion)
    if "reduction" in methods:
        x_fit = torch.cat([train.x, cal.x])
        y_fit, a_fit = torch.cat([train.y, cal.y]), torch.cat([train.a, cal.a])

        def reduce(alpha: float) -> Tensor:
            red = ExponentiatedGradientReduction(
                lambda: make_mlp(d, num_classes, hidden),
                num_classes,
                num_groups,
                criterion,
                alpha,
                max_iter=reduction_iter,
                oracle_steps=reduction_oracle_steps,
                lr=0.02,
                seed=seed,
            ).fit(x_fit, y_fit, a_fit)
            return red.predict_proba(test.x)

        curves["reduction (EG)"] = fairness_frontier(reduce, alphas, test.y, test.a, num_groups, criterion)
    if "reduction_callback" in methods:
        x_fit = torch.cat([train.x, cal.x])
        y_fit, a_fit = torch.cat([train.y, cal.y]), torch.cat([train.a, cal.a])

        def reduce_lightning(alpha: float) -> Tensor:
            args = (num_classes, num_groups, criterion, alpha, hidden, callback_epochs, callback_output, seed)
            return fit_fair_classifier(x_fit, y_fit, a_fit, test.x, *args)

        curves["reduction (Lightning callback)"] = fairness_frontier(
            reduce_lightning, alphas, test.y, test.a, num_groups, criterion
        )
    curves["unconstrained"] = unconstrained
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plot_frontier(curves, out / "frontier.png", title=f"{dataset}: {criterion} frontier")
    (out / "frontier.json").write_text(json.dumps(curves, indent=2))
    for name, key in (
        ("post-processing (blind)", "postprocess"),
        ("reduction (EG)", "reduction"),
        ("reduction (Lightning callback)", "reduction_callback"),
    ):
        for row in curves.get(name, []):
            summary[f"{key}/alpha={row['alpha']:g}/accuracy"] = row["accuracy"]
            summary[f"{key}/alpha={row['alpha']:g}/gap"] = row["gap"]
    return dict(sorted(summary.items()))


def fit_fair_classifier(
    x: Tensor,
    y: Tensor,
    a: Tensor,
    x_test: Tensor,
    num_classes: int,
    num_groups: int,
    criterion: str,
    alpha: float,
    hidden: Sequence[int],
    epochs: int,
    output: str,
    seed: int,
) -> Tensor:
    """Train an MLP ``ClassifierModule`` with ``FairReductionCallback``; class distribution (or labels) on ``x_test``.

    Args:
        x: training features.
        y: training labels.
        a: training group ids.
        x_test: the features to predict.
        num_classes: number of classes.
        num_groups: number of groups.
        criterion: the fairness criterion (see ``FairReductionCallback``).
        alpha: its tolerance.
        hidden: hidden widths of the MLP.
        epochs: training epochs (batches of 256, Adam at 0.01).
        output: ``"mixture"`` for the randomised classifier's class distribution ``(n, K)``, else hard labels.
        seed: seeds the weights and the shuffling.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> x, y, a = torch.randn(64, 3, generator=g), torch.randint(0, 2, (64,)), torch.randint(0, 2, (64,))
        >>> dist = fit_fair_classifier(x, y, a, x[:5], 2, 2, "dp", 0.1, [8], 1, "mixture", 0)
        >>> tuple(dist.shape), bool(torch.allclose(dist.sum(1), torch.ones(5, dtype=dist.dtype)))
        ((5, 2), True)
    """
    seed_everything(seed, verbose=False)
    module = ClassifierModule(
        make_mlp(x.shape[1], num_classes, hidden),
        num_classes,
        optimizer=functools.partial(torch.optim.Adam, lr=0.01),
    )
    fair = FairReductionCallback(num_classes, num_groups, criterion, alpha, output="best")
    loader = DataLoader(
        TensorDataset(x, y, a), batch_size=256, shuffle=True, generator=torch.Generator().manual_seed(seed)
    )
    trainer = Trainer(
        max_epochs=epochs,
        callbacks=[fair],
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(module, loader)
    if output == "mixture":
        return fair.predict_mixture(module, x_test)
    with torch.no_grad():
        return module(x_test).argmax(1)
