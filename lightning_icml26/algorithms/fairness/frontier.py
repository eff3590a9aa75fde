"""Accuracy against fairness gap over a sweep of tolerances, with a PNG plot, and the ``fair_compas`` task."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from lightning_icml26._optional import require_pyplot
from lightning_icml26.algorithms.fairness._common import (
    check_alpha,
    check_count,
    check_criterion,
    check_labels,
    expected_gap,
    one_hot,
    to_numpy,
)

__all__ = ["fair_frontier_task", "fairness_frontier", "plot_frontier"]


def fairness_frontier(
    method: Callable[[float], Any],
    alphas: Sequence[float],
    y: Any,
    groups: Any,
    num_groups: int,
    criterion: str = "dp",
    plot_path: str | Path | None = None,
    label: str = "method",
) -> list[dict[str, float]]:
    """Evaluate ``method(alpha)`` at each tolerance: accuracy and achieved gap on held-out data.

    Args:
        method: maps a tolerance to predictions on the evaluation rows: labels ``(n,)`` or a class
            distribution ``(n, K)`` of a randomised classifier (rates are then expectations).
        alphas: tolerances, each in ``[0, 1]``.
        y: evaluation labels ``(n,)``.
        groups: evaluation group ids ``(n,)`` (used only to measure the gap).
        num_groups: number of groups.
        criterion: ``"dp"``, ``"eo"`` or ``"eopp"`` (largest pairwise gap over the cells).
        plot_path: where to write a PNG of accuracy against gap (``None``: no plot).
        label: legend label of the curve.

    Returns:
        One ``dict(alpha, accuracy, gap)`` per tolerance.

    Example:
        >>> y = torch.tensor([0, 1, 1, 0]); a = torch.tensor([0, 0, 1, 1])
        >>> fairness_frontier(lambda alpha: y, [0.0], y, a, num_groups=2)
        [{'alpha': 0.0, 'accuracy': 1.0, 'gap': 0.0}]
    """
    criterion = check_criterion(criterion)
    check_count("num_groups", num_groups)
    yy = check_labels("y", to_numpy("y", y), np.iinfo(np.int64).max)
    aa = check_labels("groups", to_numpy("groups", groups), num_groups, yy.shape[0])
    rows = []
    for alpha in alphas:
        alpha = check_alpha(alpha)
        pred = to_numpy("predictions", method(alpha))
        dist = pred.astype(np.float64) if pred.ndim == 2 else one_hot(pred.astype(np.int64), int(yy.max()) + 1)
        if dist.shape[0] != yy.shape[0]:
            raise ValueError(f"method({alpha}) returned {dist.shape[0]} predictions for {yy.shape[0]} rows")
        if dist.shape[1] <= yy.max():
            dist = np.pad(dist, ((0, 0), (0, int(yy.max()) + 1 - dist.shape[1])))
        accuracy = float(dist[np.arange(yy.shape[0]), yy].mean())
        rows.append({"alpha": alpha, "accuracy": accuracy, "gap": expected_gap(dist, yy, aa, num_groups, criterion)})
    if plot_path is not None:
        plot_frontier({label: rows}, plot_path)
    return rows


def plot_frontier(curves: dict[str, list[dict[str, float]]], path: str | Path, title: str = "") -> Path:
    """Write a PNG of accuracy (y) against achieved gap (x), one curve per method.

    Args:
        curves: label -> rows with ``gap`` and ``accuracy`` (and ``alpha``, drawn as the ``x = alpha`` guide).
        path: PNG file.
        title: figure title.

    Returns:
        The path written.

    Example:
        >>> import tempfile, os
        >>> out = plot_frontier({"m": [{"alpha": 0.1, "gap": 0.1, "accuracy": 0.7}]},
        ...                     os.path.join(tempfile.mkdtemp(), "f.png"))
        >>> out.is_file()
        True
    """
    plt = require_pyplot()

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(5, 4))
    for name, rows in curves.items():
        ax.plot([r["gap"] for r in rows], [r["accuracy"] for r in rows], marker="o", label=name)
    ax.set_xlabel("achieved fairness gap (held-out)")
    ax.set_ylabel("accuracy (held-out)")
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


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
    from lightning_icml26.algorithms.fairness.models import fit_probability_model, make_mlp
    from lightning_icml26.algorithms.fairness.postprocess import FairPostProcessor
    from lightning_icml26.algorithms.fairness.reduction import ExponentiatedGradientReduction
    from lightning_icml26.data.tabular import load_fair_dataset, split_indices

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
            return _fit_with_callback(x_fit, y_fit, a_fit, test.x, *args)

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


def _fit_with_callback(
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
    """Train an MLP ClassifierModule with FairReductionCallback; class distribution (or labels) on ``x_test``."""
    import functools

    from lightning.pytorch import Trainer, seed_everything
    from torch.utils.data import DataLoader, TensorDataset

    from lightning_icml26.algorithms.fairness.models import make_mlp
    from lightning_icml26.callbacks.fair_reduction import FairReductionCallback
    from lightning_icml26.modules.classifier import ClassifierModule

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
