"""Where ASR-ICL's cost gap to Full-ZO comes from: first flip, refinement and the rest of the budget, per method.

Every label query of every method is logged (through ``SearchState.query``), so for each explained row we
know the query index and cost of the *first* flip and the cost of the returned recourse. Methods, on the
same rows (the first ``--rows`` rows predicted unfavourable, 32-shot contexts, budget 150):

* ``full_zo``: Full-ZO as benchmarked (RACOS over every actionable feature, then ASR-ICL's refinement with
  the last ``m + 5`` queries);
* ``full_zo_norefine``: RACOS over every actionable feature for the whole budget, no refinement;
* ``full_zo_first_refined``: Full-ZO stopped at its first flip, then the refinement ASR-ICL uses;
* ``asr_icl`` / ``asr_icl_norefine``: ASR-ICL with and without its refinement (stop at the first flip);
* ``asr_icl_budget``: ASR-ICL that keeps running subspace rounds until the budget is spent, then refines.

Besides the benchmark's cost (normalised L1 over continuous features + L0 over discrete ones) it prints
``l1_plus_l0``: normalised L1 over every feature plus the number of changed features, one reading under which
a 14-feature table gives costs on the paper's scale (its Full-ZO 12.88).

Per cell (data set, ICL predictor, context draw) it compares the methods (:func:`cell_ratios`) and, with
``--json PATH``, writes the diagnosis's findings as ``figures.targets`` (:func:`build_targets`), one per data
set, the worst over its cells where both methods returned at least one recourse (``nan`` and missed when
none did; the same keys at every size):

* ``paper_asr_icl_over_unrefined_full_zo_l1_plus_l0_<data>`` (``<= 0.3``): the paper's cost saving in
  miniature, ASR-ICL's cost over that of Full-ZO without refinement (RACOS alone), read as ``l1_plus_l0``,
  largest over the cells; the paper reports 3.83 / 12.88 = 0.30 (TabPFN on Australian credit);
* ``diag_asr_icl_over_refined_full_zo_cost_<data>`` (``>= 0.5``, tables of 7-10 features, below the paper's
  14): ours, against the benchmark's Full-ZO (with the same refinement as ASR-ICL) and its cost the paper's
  0.5x saving is absent, smallest over the cells;
* ``diag_unrefined_full_zo_changed_share_<data>`` (``>= 0.9``): ours, RACOS alone changes nearly every
  actionable feature (``changed_share``: changed over actionable features per recourse, mean over the rows,
  smallest over the cells).

Run: ``python -m benchmarks.asr_icl_diagnose [--quick] [--rows 12] [--seeds 1] [--json PATH]``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, worst, write_json
from lightning_icml26.algorithms.recourse import ASRICL, FullZO, SearchState, refine_flip, subspace_racos
from lightning_icml26.algorithms.recourse import base as recourse_base
from lightning_icml26.data.recourse_tables import load_recourse_table
from lightning_icml26.tasks.asr_icl import build_predictor, sample_context

DATASETS = ("compas", "pima", "german", "credit", "breast_cancer")
PREDICTORS = ("lsa", "kernel", "logistic")
PAPER_COST_RATIO = 0.30  # the paper's ASR-ICL / Full-ZO cost: 3.83 / 12.88 (TabPFN, Australian credit)
LOW_DIM_DATASETS = ("compas", "pima", "german", "credit")  # 7-10 features; the paper's Australian credit has 14


class _FirstFlip(Exception):
    pass


class _Logged(SearchState):
    """A search state that logs ``(flipped, cost, changed)`` of every query and can stop at the first flip."""

    log: list[list[tuple[bool, float, int]]] = []
    stop_at_flip = False

    def query(self, x_new: np.ndarray) -> tuple[bool, float]:
        flipped, cost = super().query(x_new)
        changed = int(np.sum(np.abs(self.spec.project(self.x, x_new) - self.x) > 1e-12))
        if not _Logged.log or _Logged.log[-1][0] is not self:  # type: ignore[comparison-overlap]
            _Logged.log.append([self])  # type: ignore[list-item]
        _Logged.log[-1].append((flipped, cost, changed))
        if flipped and _Logged.stop_at_flip:
            raise _FirstFlip
        return flipped, cost


class _FullZOFirstRefined(FullZO):
    def _search(self, state: SearchState, rng: np.random.Generator) -> None:
        _Logged.stop_at_flip = True
        try:
            subspace_racos(state, self.actionable(state.x), state.oracle.remaining, rng)
        except _FirstFlip:
            pass
        finally:
            _Logged.stop_at_flip = False
        refine_flip(state, 5)


def _methods(model: Any, spec: Any, seed: int) -> dict[str, Any]:
    return {
        "full_zo": FullZO(model, spec, budget=150, seed=seed),
        "full_zo_norefine": FullZO(model, spec, budget=150, seed=seed, refine=False),
        "full_zo_first_refined": _FullZOFirstRefined(model, spec, budget=150, seed=seed),
        "asr_icl": ASRICL(model, spec, budget=150, seed=seed),
        "asr_icl_norefine": ASRICL(model, spec, budget=150, seed=seed, refine=False),
        "asr_icl_budget": ASRICL(model, spec, budget=150, seed=seed, patience=1000),
    }


def run(dataset: str, predictor: str, rows: int, seed: int) -> list[dict[str, Any]]:
    """Per method: validity, mean first-flip query and cost, mean final cost, changed features, L1 + L0.

    ``changed_share`` is the mean over the rows with a recourse of its changed features over the row's
    actionable ones.
    """
    table = load_recourse_table(dataset)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(table.y))
    pool, test = order[: len(order) // 2], order[len(order) // 2 :]
    context = pool[sample_context(table.y[pool], 32, rng)]
    model = build_predictor(predictor, table.X[context], table.y[context], table.X[pool])
    X = table.X[test[model(table.X[test]) == 0][:rows]]
    spec = table.spec
    out = []
    for name, generator in _methods(model, spec, seed).items():
        _Logged.log = []
        recourse_base.SearchState = _Logged  # type: ignore[misc]
        try:
            result = generator.generate(X, 1)
        finally:
            recourse_base.SearchState = SearchState  # type: ignore[misc]
        first_q, first_cost, first_changed = [], [], []
        for entry in _Logged.log:
            queries = entry[1:]
            hit = next((i for i, q in enumerate(queries) if q[0]), None)
            if hit is not None:
                first_q.append(hit + 2)  # +1 for the row's own label, +1 for 0-based
                first_cost.append(queries[hit][1])
                first_changed.append(queries[hit][2])
        found = result.found
        delta = np.abs(result.counterfactuals - X)[found]
        changed = (delta > 1e-12).sum(1)
        l1_l0 = (delta / spec.ranges).sum(1) + changed
        actionable = np.array([generator.actionable(x).size for x in X])
        share = changed / np.maximum(actionable[found], 1)
        out.append({
            "data": dataset, "ICL": predictor, "seed": seed, "features": int(X.shape[1]), "method": name,
            "rows": len(X),
            "validity": float(found.mean()),
            "queries": float(result.queries.mean()),
            "first_flip_query": float(np.mean(first_q)) if first_q else float("nan"),
            "first_flip_cost": float(np.mean(first_cost)) if first_cost else float("nan"),
            "first_flip_changed": float(np.mean(first_changed)) if first_changed else float("nan"),
            "cost": float(result.cost[found].mean()) if found.any() else float("nan"),
            "changed": float(changed.mean()) if found.any() else float("nan"),
            "l1_plus_l0": float(l1_l0.mean()) if found.any() else float("nan"),
            "actionable": float(actionable.mean()),
            "changed_share": float(share.mean()) if found.any() else float("nan"),
        })  # fmt: skip
    return out


def cell_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per cell (data set, ICL predictor, seed): the ratios the targets read, ``nan`` where a method found nothing.

    Example:
        >>> rows = [
        ...     {"data": "d", "ICL": "lsa", "seed": 0, "features": 8, "method": "asr_icl", "cost": 0.4,
        ...      "l1_plus_l0": 1.5},
        ...     {"data": "d", "ICL": "lsa", "seed": 0, "features": 8, "method": "full_zo", "cost": 0.4},
        ...     {"data": "d", "ICL": "lsa", "seed": 0, "features": 8, "method": "full_zo_norefine",
        ...      "l1_plus_l0": 5.0, "changed_share": 1.0},
        ... ]
        >>> cell = cell_ratios(rows)[0]
        >>> [cell[k] for k in ("asr_icl_over_unrefined_l1_plus_l0", "asr_icl_over_refined_cost")]
        [0.3, 1.0]
    """
    nan = float("nan")
    cells: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = {}
    for row in rows:
        cells.setdefault((row["data"], row["ICL"], row["seed"], row["features"]), {})[row["method"]] = row
    out = []
    for (dataset, predictor, seed, features), methods in cells.items():
        asr, full = methods.get("asr_icl", {}), methods.get("full_zo", {})
        bare = methods.get("full_zo_norefine", {})
        out.append({
            "data": dataset, "ICL": predictor, "seed": seed, "features": features,
            "asr_icl_over_unrefined_l1_plus_l0": ratio(asr.get("l1_plus_l0", nan), bare.get("l1_plus_l0", nan)),
            "asr_icl_over_refined_cost": ratio(asr.get("cost", nan), full.get("cost", nan)),
            "unrefined_changed_share": float(bare.get("changed_share", nan)),
        })  # fmt: skip
    return out


def _worst_per_dataset(cells: list[dict[str, Any]], dataset: str, key: str, kind: str) -> float:
    """The worst measured ``key`` over the cells of ``dataset`` (cells where it is ``nan`` are left out)."""
    values = [float(c[key]) for c in cells if c["data"] == dataset and not math.isnan(c[key])]
    return worst(values, kind)


def build_targets(cells: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The findings as targets per data set, worst over its cells where measured (none: ``nan``, missed).

    Example:
        >>> cells = [{"data": "pima", "features": 7, "asr_icl_over_unrefined_l1_plus_l0": 0.25,
        ...           "asr_icl_over_refined_cost": 1.1, "unrefined_changed_share": 1.0}]
        >>> targets = build_targets(cells)
        >>> [name for name, entry in targets.items() if entry["met"]]  # doctest: +NORMALIZE_WHITESPACE
        ['paper_asr_icl_over_unrefined_full_zo_l1_plus_l0_pima', 'diag_asr_icl_over_refined_full_zo_cost_pima',
         'diag_unrefined_full_zo_changed_share_pima']
        >>> targets["paper_asr_icl_over_unrefined_full_zo_l1_plus_l0_compas"]  # not run: missed
        {'value': nan, 'target': '<= 0.3', 'met': False}
    """
    targets: dict[str, dict[str, Any]] = {}
    for dataset in DATASETS:
        value = _worst_per_dataset(cells, dataset, "asr_icl_over_unrefined_l1_plus_l0", "max")
        targets[f"paper_asr_icl_over_unrefined_full_zo_l1_plus_l0_{dataset}"] = target(value, "<=", PAPER_COST_RATIO)
    for dataset in LOW_DIM_DATASETS:
        value = _worst_per_dataset(cells, dataset, "asr_icl_over_refined_cost", "min")
        targets[f"diag_asr_icl_over_refined_full_zo_cost_{dataset}"] = target(value, ">=", 0.5)
    for dataset in DATASETS:
        value = _worst_per_dataset(cells, dataset, "unrefined_changed_share", "min")
        targets[f"diag_unrefined_full_zo_changed_share_{dataset}"] = target(value, ">=", 0.9)
    return targets


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=12, help="rows explained per cell (--quick: 4)")
    parser.add_argument("--seeds", type=int, default=1, help="context draws per data set and predictor")
    args = parser.parse_args()
    rows = []
    for dataset in DATASETS:
        for predictor in PREDICTORS:
            for s in range(args.seeds):
                rows += run(dataset, predictor, 4 if args.quick else args.rows, args.seed + s)
    print(markdown_table(rows))
    cells = cell_ratios(rows)
    print("\n" + markdown_table(cells))
    figures: dict[str, Any] = {"rows": rows, "cells": cells, "targets": build_targets(cells)}
    print_targets(figures["targets"])
    write_json(args.json, "asr_icl_diagnose", figures, args)


if __name__ == "__main__":
    main()
