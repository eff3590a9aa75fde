"""``asr_icl_task``: label-only recourse for an in-context-learning classifier, ASR-ICL against its baselines.

:class:`AsrIclConfig` holds the settings; :func:`compare_recourse` is the experiment (one table, one ICL
predictor, one context draw); the recipe ``asr_icl_compas`` and ``benchmarks/asr_icl.py`` run it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from lightning_icml26.algorithms.recourse import (
    ASRICL,
    ContextLogisticICL,
    DiceRandom,
    FullZO,
    GrowingSpheres,
    KernelICL,
    LinearAttentionICL,
    Wachter,
)
from lightning_icml26.data.recourse_tables import RecourseTable, load_recourse_table
from lightning_icml26.metrics import QueryCount, RecourseCost, RecourseSparsity, RecourseValidity
from lightning_icml26.tasks._config import TaskConfig

__all__ = [
    "METHODS",
    "PREDICTORS",
    "AsrIclConfig",
    "asr_icl_task",
    "build_predictor",
    "compare_recourse",
    "sample_context",
]

PREDICTORS = ("lsa", "kernel", "logistic")
METHODS = ("asr_icl", "asr_icl_norefine", "full_zo", "full_zo_norefine", "dice_random", "growing_spheres", "wachter")


def sample_context(y: np.ndarray, n_context: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``n_context`` rows with every class present (one row of each first, the rest at random)."""
    classes = np.unique(y)
    if n_context < classes.size:
        raise ValueError(f"n_context must be >= the number of classes ({classes.size}), got {n_context}")
    first = np.array([rng.choice(np.flatnonzero(y == c)) for c in classes])
    rest = rng.choice(np.setdiff1d(np.arange(y.size), first), n_context - classes.size, replace=False)
    return np.concatenate([first, rest])


def build_predictor(
    kind: str, X_context: np.ndarray, y_context: np.ndarray, X_pool: np.ndarray
) -> LinearAttentionICL | KernelICL | ContextLogisticICL:
    """An ICL predictor on the context; the linear-attention ``Gamma`` is the pool's second moment."""
    if kind == "lsa":
        return LinearAttentionICL(X_context, y_context, gamma=X_pool.T @ X_pool / len(X_pool))
    if kind == "kernel":
        return KernelICL(X_context, y_context)
    if kind == "logistic":
        return ContextLogisticICL(X_context, y_context)
    raise ValueError(f"predictor must be one of {PREDICTORS}, got {kind!r}")


def _generator(method: str, predictor: Any, table: RecourseTable, budget: int, seed: int) -> Any:
    spec = table.spec
    if method == "asr_icl":
        return ASRICL(predictor, spec, budget=budget, seed=seed)
    if method == "asr_icl_norefine":
        return ASRICL(predictor, spec, budget=budget, seed=seed, refine=False)
    if method == "full_zo":
        return FullZO(predictor, spec, budget=budget, seed=seed)
    if method == "full_zo_norefine":
        return FullZO(predictor, spec, budget=budget, seed=seed, refine=False)
    if method == "dice_random":
        return DiceRandom(predictor, spec, budget=budget, seed=seed)
    if method == "growing_spheres":
        return GrowingSpheres(predictor, spec, budget=budget, seed=seed)
    if method == "wachter":
        return Wachter(predictor, spec)
    raise ValueError(f"method must be one of {METHODS}, got {method!r}")


@dataclass(frozen=True)
class AsrIclConfig(TaskConfig):
    """Settings of :func:`asr_icl_task` (the ``asr_icl_compas`` recipe); ``run()`` runs it.

    Args:
        out_dir: where ``asr_icl.json`` is written (nothing written when ``None``).
        dataset: a table of :data:`~lightning_icml26.data.recourse_tables.RECOURSE_TABLES`.
        predictor: ``"lsa"``, ``"kernel"`` or ``"logistic"``.
        n_context: context rows ``M``.
        n_rows: rows explained.
        budget: label queries per row.
        methods: methods of :data:`METHODS`.
        seed: seed (split, context, searches).

    Example:
        >>> AsrIclConfig(predictor="lsa", methods=["wachter"]).methods
        ('wachter',)
        >>> AsrIclConfig(predictor="tabpfn")
        Traceback (most recent call last):
        ...
        ValueError: predictor must be one of ('lsa', 'kernel', 'logistic'), got 'tabpfn'
    """

    out_dir: str | Path | None = None
    dataset: str = "compas"
    predictor: str = "kernel"
    n_context: int = 32
    n_rows: int = 20
    budget: int = 150
    methods: Sequence[str] = METHODS
    seed: int = 0

    def __post_init__(self) -> None:
        if self.predictor not in PREDICTORS:
            raise ValueError(f"predictor must be one of {PREDICTORS}, got {self.predictor!r}")
        unknown = [m for m in self.methods if m not in METHODS]
        if unknown or not self.methods:
            raise ValueError(f"methods must be a non-empty list of {METHODS}, got {list(self.methods)!r}")
        object.__setattr__(self, "methods", tuple(self.methods))

    def run(self) -> dict[str, float]:
        """Run :func:`asr_icl_task` with these settings."""
        return asr_icl_task(self)


def _figures(model: Any, table: RecourseTable, X: np.ndarray, result: Any, seconds: float) -> dict[str, float]:
    """Validity, costs, sparsity, queries and time of one method's recourses for the rows ``X``."""
    ranges = torch.as_tensor(table.spec.ranges)
    discrete = torch.as_tensor(table.spec.discrete)
    labels = torch.as_tensor(model(result.counterfactuals))
    valid = (labels == 1) & torch.as_tensor(result.found)
    validity, cost = RecourseValidity(), RecourseCost(ranges=ranges, discrete=discrete)
    sparsity, queries = RecourseSparsity(), QueryCount()
    validity.update(torch.where(valid, labels, torch.full_like(labels, -1)), torch.ones_like(labels))
    cost.update(torch.as_tensor(X), torch.as_tensor(result.counterfactuals), valid)
    sparsity.update(torch.as_tensor(X), torch.as_tensor(result.counterfactuals), valid)
    queries.update(torch.as_tensor(result.queries))
    delta = np.abs(result.counterfactuals - X)[valid.numpy()]
    dense = (delta / table.spec.ranges).sum(1) + (delta > 1e-12).sum(1)
    return {
        "validity": float(validity.compute()),
        "cost": float(cost.compute()),
        "dense_cost": float(dense.mean()) if dense.size else 0.0,
        "sparsity": float(sparsity.compute()),
        "queries": float(queries.compute()),
        "seconds": seconds,
        "rows": float(len(X)),
    }


def compare_recourse(table: RecourseTable, config: AsrIclConfig) -> dict[str, dict[str, float]]:
    """Run every method on the same rows of one table for one ICL predictor and one context draw.

    The table is split in half (seeded): the context and ``Gamma`` come from the first half, the rows to
    explain are the first ``n_rows`` rows of the second half that the predictor labels ``0`` (the unfavourable
    class); the target is class ``1``. ``config.dataset`` and ``config.out_dir`` are not used.

    Returns:
        ``{method: {"validity", "cost", "dense_cost", "sparsity", "queries", "seconds", "rows"}}`` (costs and
        sparsity over the valid recourses; ``dense_cost`` is the normalised L1 over every feature plus the
        number of changed features, an L0 on continuous features too, which the spec's cost leaves out).

    Example:
        >>> from lightning_icml26.data.recourse_tables import make_credit
        >>> config = AsrIclConfig(predictor="logistic", n_rows=3, methods=("asr_icl", "full_zo"))
        >>> out = compare_recourse(make_credit(n=400), config)
        >>> out["asr_icl"]["queries"] < out["full_zo"]["queries"]
        True
    """
    rng = np.random.default_rng(config.seed)
    order = rng.permutation(len(table.y))
    pool, test = order[: len(order) // 2], order[len(order) // 2 :]
    context = pool[sample_context(table.y[pool], config.n_context, rng)]
    model = build_predictor(config.predictor, table.X[context], table.y[context], table.X[pool])
    rejected = test[model(table.X[test]) == 0][: config.n_rows]
    if rejected.size == 0:
        raise ValueError(
            f"the {config.predictor} predictor labels no test row of {table.name!r} as 0; nothing to explain"
        )
    X = table.X[rejected]
    out: dict[str, dict[str, float]] = {}
    for method in config.methods:
        start = time.perf_counter()
        result = _generator(method, model, table, config.budget, config.seed).generate(X, 1)
        out[method] = _figures(model, table, X, result, time.perf_counter() - start)
    return out


def asr_icl_task(config: AsrIclConfig) -> dict[str, float]:
    """Recourse for ``n_rows`` rejected rows of ``dataset`` under an ICL predictor: every method, same rows.

    Args:
        config: the settings (:class:`AsrIclConfig`).

    Returns:
        Flat ``{"<method>/<figure>": value}`` floats (the figures of :func:`compare_recourse`).

    Example:
        >>> out = asr_icl_task(AsrIclConfig(dataset="credit", predictor="logistic", n_rows=2, methods=["asr_icl"]))
        >>> out["asr_icl/validity"]
        1.0
    """
    results = compare_recourse(load_recourse_table(config.dataset), config)
    flat = {f"{method}/{key}": value for method, figures in results.items() for key, value in figures.items()}
    if config.out_dir is not None:
        path = Path(config.out_dir)
        path.mkdir(parents=True, exist_ok=True)
        (path / "asr_icl.json").write_text(json.dumps(flat, indent=2))
    return flat
