"""The ``icml26`` console script: list, inspect, run and resume the shipped Hydra recipes.

Usage::

    icml26 list
    icml26 run RECIPE [key=value ...] [-m|--multirun] [--dry-run] [--output-root DIR]
    icml26 resume RUN_DIR [key=value ...] [--dry-run]

``run`` takes Hydra overrides (``trainer.max_epochs=3``, ``model/optimizer=l1_sgd``, ``+trainer.x=...``);
with ``-m`` each comma-separated value list is swept, one job and one folder per combination
(``icml26 run quickstart -m trainer.max_epochs=1,2``). ``--dry-run`` composes the recipe, instantiates every
object and prints the resolved config without training. ``resume`` continues a run in its own folder from
``checkpoints/last.ckpt`` and appends to its ``logs/metrics.csv``. A bad recipe name, an unknown key or a
value of the wrong type ends with one ``error:`` line (exit code 2); a failed run exits with 1, a run
stopped by Ctrl-C with 130 (after writing its ``summary.json`` and plots).

Multi-node: launch the same command with ``torchrun`` or ``srun`` (``python -m lightning_icml26.cli run
...``); Lightning's cluster environments pick up the ranks, and every rank writes into one run directory.

This module imports nothing heavy: ``icml26 list`` answers without importing Lightning or torch. ``run``
and ``resume`` reach the launcher (:mod:`lightning_icml26._launch`) through the package's lazy
sub-module loading (see :mod:`lightning_icml26`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import lightning_icml26
from lightning_icml26 import _catalog

if TYPE_CHECKING:
    from lightning_icml26 import _launch, _recipes  # noqa: F401  (loaded lazily at run time)

__all__ = ["main", "run_recipe"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="icml26", description="Run the lightning-icml26 Hydra recipes.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the recipes with a one-line description each")
    run = sub.add_parser("run", help="run a recipe with Hydra overrides")
    run.add_argument("target", metavar="recipe", help="recipe name (see 'icml26 list')")
    run.add_argument("-m", "--multirun", action="store_true", help="sweep comma-separated values, one job each")
    run.add_argument("--output-root", default="outputs", help="parent folder of run directories (default: outputs)")
    resume = sub.add_parser("resume", help="continue a run in its folder from checkpoints/last.ckpt")
    resume.add_argument("target", metavar="run_dir", help="the run's folder, e.g. outputs/quickstart/<id>")
    for command in (run, resume):
        command.add_argument("overrides", nargs="*", help="Hydra overrides such as trainer.max_epochs=3")
        command.add_argument("--dry-run", action="store_true", help="build every object, print the config, do not run")
        command.add_argument(
            "--traceback", action="store_true", help="print the full traceback of a failure (same as ICML26_DEBUG=1)"
        )
    return parser


def _print_list() -> None:
    recipes = _catalog.list_recipes()
    width = max((len(r.name) for r in recipes), default=0)
    try:
        for recipe in recipes:
            print(f"{recipe.name.ljust(width)}  {recipe.description}", flush=True)
    except BrokenPipeError:  # the reader left early (``icml26 list | head``): stop quietly, as shell tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``icml26`` script.

    Args:
        argv: the arguments (defaults to ``sys.argv[1:]``).

    Returns:
        The process exit code: 0 on success, 2 for a bad recipe, key or value, 1 for a failed run, 130 for
        a run stopped by Ctrl-C.

    Example:
        >>> main(["run", "no_such_recipe"])  # doctest: +ELLIPSIS
        2
    """
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    unknown = [arg for arg in extra if arg.startswith("-") and not arg.startswith("~")]
    if unknown or (extra and args.command == "list"):
        parser.error(f"unrecognized arguments: {' '.join(unknown or extra)}")
    if args.command == "list":
        _print_list()
        return 0
    if args.traceback:
        os.environ["ICML26_DEBUG"] = "1"
    return lightning_icml26._launch.run_command(
        args.command,
        args.target,
        [*args.overrides, *extra],  # overrides may come before or after the options
        multirun=getattr(args, "multirun", False),
        dry_run=args.dry_run,
        output_root=getattr(args, "output_root", "outputs"),
        program=sys.argv[0] if argv is None else "icml26",
    )


def run_recipe(recipe: str, overrides: Sequence[str] = (), run_dir: str | Path | None = None) -> dict[str, Any]:
    """Run a shipped recipe from Python, as ``icml26 run RECIPE OVERRIDES`` does, and return its summary.

    This is the path the benchmarks take: the same composition, checks, objects and ``summary.json`` as the
    command line, without a Hydra job around it (so no ``.hydra/`` folder and no multirun; call it once per
    cell of a sweep).

    Args:
        recipe: a name that ``icml26 list`` prints.
        overrides: Hydra overrides, as on the command line (``trainer.max_epochs=3``, ``model/optimizer=l1_sgd``).
        run_dir: the run folder; by default a new one under ``outputs/RECIPE/``.

    Returns:
        The summary written to ``RUN_DIR/summary.json``: ``status``, ``metrics`` (final scalar metrics, or a
        task's figures), ``run_dir`` and ``seconds``.

    Raises:
        lightning_icml26._recipes.RecipeError: an unknown recipe, key or value, or a missing optional package;
            nothing is written.

    Example:
        >>> import tempfile
        >>> summary = run_recipe("quickstart", ["trainer=smoke"], run_dir=tempfile.mkdtemp())
        >>> summary["status"], "val_acc" in summary["metrics"]
        ('finished', True)
    """
    recipes = lightning_icml26._recipes
    summary = recipes.run(recipes.compose(recipe, overrides, run_dir=run_dir))
    summary.pop("is_global_zero", None)
    return summary


if __name__ == "__main__":  # python -m lightning_icml26.cli (torchrun, srun)
    sys.exit(main())
