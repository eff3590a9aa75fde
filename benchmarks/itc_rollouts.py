"""ITC vs plain sampling vs argmax: long imagined rollouts of one trained token world model (a diagnostic).

One run of the ``itc_gridworld`` recipe (and, with ``--envs minigrid``, of ``itc_minigrid``) per environment: a
:class:`~lightning_icml26.modules.TokenWorldModel` trained with Lightning on generated grid-world episodes
(persistent random-walking objects) or MiniGrid Dynamic-Obstacles symbolic frames; its test step rolls the model
out ``--horizon`` steps from real context frames of held-out episodes under the true actions, once per decoder:

* ``sample``: plain sampling at temperature 1 (Gumbel-max), the baseline;
* ``argmax``: the most probable token per cell;
* ``itc``: ITC copy-or-generate decoding with the recipe's settings (grid world: the paper's Craftax alpha 0.6,
  tau 0.3; MiniGrid: MinAtar's alpha 0.2, tau 0.05) and ``--solver`` (default the exact assignment).

``sample`` and ``itc`` share the same Gumbel noise at every step (paired comparison). Each rollout is scored against
the true frames (:class:`~lightning_icml26.metrics.RolloutConsistency`): duplication, disappearance and
transmutation rates per true object, and token accuracy, at horizon 1, at the last horizon and averaged.

The target (issue #11): ITC at most half the persistence errors (duplication + disappearance + transmutation)
of plain sampling at the last horizon, without lower token accuracy at horizon 1. Its figures are not quoted.

    python -m benchmarks.itc_rollouts --quick
    python -m benchmarks.itc_rollouts --envs gridworld minigrid --json outputs/itc_rollouts.json
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, worst, write_json
from lightning_icml26.cli import run_recipe

DECODERS = ("itc", "sample", "argmax")
FIGURES = ("duplication_rate", "disappearance_rate", "transmutation_rate", "persistence_error_rate", "token_accuracy")
FULL = {
    "gridworld": ["data.num_train_episodes=1024", "data.episode_length=24", "data.num_objects=4", "data.context=1",
                  "data.num_test_episodes=128", "model.d_model=64", "trainer.max_epochs=15"],
    "minigrid": ["data.num_train_episodes=256", "data.context=1", "data.num_test_episodes=64", "model.d_model=64",
                 "trainer.max_epochs=15"],
}  # fmt: skip
QUICK = ["data.num_train_episodes=128", "data.num_test_episodes=16", "model.d_model=32", "trainer.max_epochs=2",
         "trainer.limit_train_batches=75"]  # fmt: skip


def run_env(env: str, args: Any, run_dir: Path) -> dict[str, float]:
    """One recipe run; its final metrics (``test_<decoder>_<figure>_{h1,last,mean}``, ``val_*``, ...)."""
    overrides = [*(QUICK if args.quick else FULL[env]), f"data.test_horizon={args.horizon}",
                 f"model.itc.solver={args.solver}", f"seed={args.seed}", *args.set]  # fmt: skip
    summary = run_recipe(f"itc_{env}", overrides, run_dir=run_dir / env)
    return {k: float(v) for k, v in summary["metrics"].items() if isinstance(v, int | float)}


def rows_of(env: str, metrics: dict[str, float]) -> list[dict[str, Any]]:
    """Per decoder and horizon (1, last, mean): the figures and the persistence ratio to ``sample``."""
    rows = []
    for when in ("h1", "last", "mean"):
        for decoder in DECODERS:
            row: dict[str, Any] = {"env": env, "h": when, "decoder": decoder}
            for key in FIGURES:
                row[key.replace("_rate", "")] = metrics[f"test_{decoder}_{key}_{when}"]
            row["persist / sample"] = ratio(
                row["persistence_error"], metrics[f"test_sample_persistence_error_rate_{when}"]
            )
            rows.append(row)
    return rows


def build_targets(by_env: dict[str, dict[str, float]]) -> dict[str, Any]:
    """``persistence_ratio_max`` (ITC / sampling at the last horizon, worst env, <= 0.5) and
    ``token_acc_h1_gap_min`` (ITC minus sampling token accuracy at horizon 1, worst env, >= 0)."""
    persist = [ratio(m["test_itc_persistence_error_rate_last"], m["test_sample_persistence_error_rate_last"])
               for m in by_env.values()]  # fmt: skip
    gap = [m["test_itc_token_accuracy_h1"] - m["test_sample_token_accuracy_h1"] for m in by_env.values()]
    return {
        "persistence_ratio_max": target(worst(persist, "max"), "<=", 0.5),
        "token_acc_h1_gap_min": target(worst(gap, "min"), ">=", 0.0),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the recipes, print the tables and targets, write the JSON; return the figures."""
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=["gridworld"], choices=["gridworld", "minigrid"])
    parser.add_argument("--horizon", type=int, default=None, help="rollout steps (default 50; 20 with --quick)")
    parser.add_argument("--solver", default="hungarian", choices=["hungarian", "sinkhorn"])
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="more recipe overrides")
    args = parser.parse_args(argv)
    args.horizon = args.horizon or (20 if args.quick else 50)
    with tempfile.TemporaryDirectory() as tmp:
        by_env = {env: run_env(env, args, Path(tmp)) for env in args.envs}
    rows = [row for env, metrics in by_env.items() for row in rows_of(env, metrics)]
    print(f"\n## Imagined rollouts, horizon {args.horizon} (rates per true object; token accuracy per cell)\n")
    print(markdown_table(rows))
    training = [{"env": env, **{k: m[k] for k in ("val_loss", "val_token_acc", "test_token_acc") if k in m}}
                for env, m in by_env.items()]  # fmt: skip
    print("\n## World models (one-step teacher-forced figures)\n")
    print(markdown_table(training))
    targets = build_targets(by_env)
    figures = {"metrics": by_env, "rows": rows, "training": training, "targets": targets}
    print_targets(targets)
    write_json(args.json, "itc_rollouts", figures, args)
    return figures


if __name__ == "__main__":
    main()
