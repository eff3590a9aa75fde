"""LCPBSCM (inspired by LC-PB-SCM) against the PGFSkeleton precursor and PC with a G-test on PB-SCM count data.

Two experiments, every method on the same generated data in one process (docs/lc-pb-scm.md):

* local (``lightning_icml26.tasks.lcpbscm_local_task``): every 3-variable pattern (triangles and unshielded
  triples; each adjacent pair ``->``, ``<-`` or a latent ``<->``), alpha ~ U(0.2, 1), mu ~ U(1, 3),
  ``--local-seeds`` draws each. A fit is right when LCPBSCM's class for the triple equals the pattern's class of
  monomial equivalence (computed by sympy).
* graphs (``lcpbscm_graphs_task``): random PB-SCMs (about 1.5 edges per observed node) with 0..3 latent
  confounders of two observed children each, latent columns dropped. Skeleton F1, orientation accuracy, SHD,
  latent-pair F1 and time per method, pooled over seeds; per-seed spread in brackets.

``LCPBSCM-exact`` answers every PGF test exactly from the planted graph (``LCPBSCM.fit_oracle``): the ceiling of
the estimator's logic, a diagnostic, not a competitor. PC is causal-learn's ``pc`` with ``gsq`` at level 0.05 on
counts clipped at 4 (``lightning_icml26.tasks.pc_gsq``). Nothing is tuned: every method runs with its defaults.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, write_json
from lightning_icml26.tasks import LCPBSCM_METHODS, LcpbscmGraphsConfig, LcpbscmLocalConfig


def build_targets(local: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Targets at the largest n: local class accuracy, SHD ratio and latent-pair F1 with latents, skeleton gap."""
    n_max = max(r["n"] for r in rows)
    top = [r for r in rows if r["n"] == n_max]

    def mean(method: str, key: str, latent: bool) -> float:
        vals = [r[key] for r in top if r["method"] == method and (r["latents"] > 0) == latent]
        vals = [v for v in vals if v == v]
        return float(np.mean(vals)) if vals else float("nan")

    best_baseline = min(mean("PC-G", "SHD", True), mean("PGFSkeleton", "SHD", True))
    return {
        "local_class_accuracy": target(local["accuracy"], ">=", 0.95),
        "shd_over_best_baseline_latent": target(ratio(mean("LCPBSCM", "SHD", True), best_baseline), "<=", 0.7),
        "latent_pair_f1": target(mean("LCPBSCM", "latent-pair F1", True), ">=", 0.7),
        "skeleton_f1_gap_no_latent": target(
            mean("PGFSkeleton", "skeleton F1", False) - mean("LCPBSCM", "skeleton F1", False), "<=", 0.05
        ),
    }


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=None, help="random graphs per setting")
    parser.add_argument("--local-seeds", type=int, default=None, help="parameter draws per 3-variable pattern")
    args = parser.parse_args()
    torch.set_num_threads(1)
    start = time.perf_counter()
    if args.quick:
        sizes, latents, ns, local_n = [6], [0, 2], [10_000], 10_000
        seeds, local_seeds = args.seeds or 3, args.local_seeds or 1
    else:
        sizes, latents, ns, local_n = [6, 8], [0, 3], [1_000, 10_000, 100_000], 100_000
        seeds, local_seeds = args.seeds or 20, args.local_seeds or 3
    local = LcpbscmLocalConfig(local_n, local_seeds, args.seed).run()
    print(f"\nLocal 3-variable patterns at n = {local_n} ({time.perf_counter() - start:.0f} s):\n")
    print(markdown_table([local]))
    cells = {"observed": sizes, "latents": latents, "n": ns, "seeds": seeds, "local_n": local_n}
    rows: list[dict[str, Any]] = []
    for n in ns:
        for p in sizes:
            for n_latent in latents:
                rows += LcpbscmGraphsConfig(p, n_latent, n, seeds, args.seed).run()["rows"]
                print(f"done p={p} latents={n_latent} n={n} ({time.perf_counter() - start:.0f} s)", flush=True)
                partial = {"local": local, "rows": rows, "cells": {**cells, "done": len(rows) // len(LCPBSCM_METHODS)}}
                write_json(
                    args.json, "lc_pb_scm", {**partial, "complete": False, "targets": build_targets(local, rows)}, args
                )
    for row in rows:
        base = next(r for r in rows if r["method"] == "PC-G" and all(r[k] == row[k] for k in ("p", "latents", "n")))
        row["SHD / PC"] = ratio(row["SHD"], base["SHD"])
    print(f"\nRandom graphs, {seeds} seeds per setting (pooled metrics; SHD mean and sd over seeds):\n")
    print(markdown_table(rows))
    print(f"\n{time.perf_counter() - start:.0f} s in all")
    targets = build_targets(local, rows)
    print_targets(targets)
    figures = {"local": local, "rows": rows, "cells": {**cells, "local_draws": local_seeds}, "complete": True}
    figures["targets"] = targets
    write_json(args.json, "lc_pb_scm", figures, args)


if __name__ == "__main__":
    main()
