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

    python benchmarks/asr_icl_diagnose.py --rows 12 --seeds 1
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import benchmark_parser, markdown_table
from lightning_icml26.algorithms.recourse import ASRICL, FullZO, SearchState, refine_flip, subspace_racos
from lightning_icml26.algorithms.recourse import base as recourse_base
from lightning_icml26.data.recourse_tables import load_recourse_table
from lightning_icml26.tasks.asr_icl import build_predictor, sample_context

DATASETS = ("compas", "pima", "german", "credit", "breast_cancer")
PREDICTORS = ("lsa", "kernel", "logistic")


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
    """Per method: validity, mean first-flip query and cost, mean final cost, changed features, L1 + L0."""
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
        out.append({
            "data": dataset, "ICL": predictor, "method": name, "rows": len(X),
            "validity": float(found.mean()),
            "queries": float(result.queries.mean()),
            "first_flip_query": float(np.mean(first_q)) if first_q else float("nan"),
            "first_flip_cost": float(np.mean(first_cost)) if first_cost else float("nan"),
            "first_flip_changed": float(np.mean(first_changed)) if first_changed else float("nan"),
            "cost": float(result.cost[found].mean()) if found.any() else float("nan"),
            "changed": float(changed.mean()) if found.any() else float("nan"),
            "l1_plus_l0": float(l1_l0.mean()) if found.any() else float("nan"),
            "actionable": float(np.mean([generator.actionable(x).size for x in X])),
        })  # fmt: skip
    return out


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=12)
    parser.add_argument("--seeds", type=int, default=1)
    args = parser.parse_args()
    rows = []
    for dataset in DATASETS:
        for predictor in PREDICTORS:
            for s in range(args.seeds):
                rows += run(dataset, predictor, 4 if args.quick else args.rows, args.seed + s)
    print(markdown_table(rows))


if __name__ == "__main__":
    main()
