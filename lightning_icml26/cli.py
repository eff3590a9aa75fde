"""The ``icml26`` console script: list, inspect and run the shipped Hydra recipes.

Usage::

    icml26 list
    icml26 run RECIPE [key=value ...] [--dry-run]

``run`` takes Hydra overrides (``trainer.max_epochs=3``, ``+trainer.profiler=simple``). ``--dry-run``
composes the recipe, instantiates every object and prints the resolved config without training. A bad
recipe name, an unknown key or a value of the wrong type ends with one ``error:`` line (exit code 2);
a failure while building an object names the node (exit code 1).

Multi-node: launch the same command with ``torchrun`` or ``srun`` (``python -m lightning_icml26.cli run
...``); Lightning's cluster environments pick up the ranks, and every rank writes into one run directory.
"""

from __future__ import annotations

import argparse
import faulthandler
import sys
from collections.abc import Sequence

import torch.distributed as dist
from omegaconf import OmegaConf

from lightning_icml26 import _recipes

__all__ = ["end_process_group", "main"]

#: Seconds a process may spend after training before it is considered hung at exit; it then prints every
#: thread's stack (``faulthandler``) and exits non-zero instead of hanging silently.
EXIT_WATCHDOG_SECONDS = 120.0


def end_process_group(watchdog_seconds: float = EXIT_WATCHDOG_SECONDS) -> None:
    """End a distributed run cleanly: a barrier, then ``destroy_process_group()``.

    Without this, a rank whose peers already left can linger in a collective or in the store's
    shutdown, and a ``torchrun`` job does not exit after training ends. A watchdog armed first turns a
    hang here into a stack dump and a non-zero exit.

    Args:
        watchdog_seconds: seconds before a hung teardown dumps the stacks and exits (``<= 0`` disables).

    Example:
        >>> end_process_group()  # no process group: nothing to do
    """
    if not (dist.is_available() and dist.is_initialized()):
        return
    if watchdog_seconds > 0:
        faulthandler.dump_traceback_later(watchdog_seconds, exit=True)
    try:
        dist.barrier()
    finally:
        dist.destroy_process_group()
        faulthandler.cancel_dump_traceback_later()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="icml26", description="Run the lightning-icml26 Hydra recipes.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the recipes with a one-line description each")
    run = sub.add_parser("run", help="run a recipe with Hydra overrides")
    run.add_argument("recipe", help="recipe name (see 'icml26 list')")
    run.add_argument("overrides", nargs="*", help="Hydra overrides such as trainer.max_epochs=3")
    run.add_argument("--dry-run", action="store_true", help="compose and instantiate, print the config, do not run")
    run.add_argument("--output-root", default="outputs", help="parent folder of run directories (default: outputs)")
    return parser


def _print_list() -> None:
    recipes = _recipes.list_recipes()
    width = max((len(r.name) for r in recipes), default=0)
    for recipe in recipes:
        print(f"{recipe.name.ljust(width)}  {recipe.description}")


def _print_summary(summary: dict) -> None:
    print(f"\n== {summary['recipe']}: done in {summary['seconds']:.1f} s; outputs in {summary['run_dir']}")
    for key, value in sorted(summary["metrics"].items()):
        shown = f"{value:.4f}" if isinstance(value, float) else str(value)
        print(f"   {key:<28} {shown}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``icml26`` script.

    Args:
        argv: the arguments (defaults to ``sys.argv[1:]``).

    Returns:
        The process exit code: 0 on success, 2 for a bad recipe, key or value, 1 for a failed build.

    Example:
        >>> main(["run", "no_such_recipe"])  # doctest: +ELLIPSIS
        2
    """
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    unknown = [arg for arg in extra if arg.startswith("-")]
    if unknown or (extra and args.command != "run"):
        parser.error(f"unrecognized arguments: {' '.join(unknown or extra)}")
    if args.command == "run":
        args.overrides = [*args.overrides, *extra]  # overrides may come before or after the options
    if args.command == "list":
        _print_list()
        return 0
    try:
        run_dir = _recipes.resolve_run_dir(args.recipe, args.output_root)
        cfg = _recipes.compose(args.recipe, args.overrides, run_dir=run_dir)
        if args.dry_run:
            _recipes.build(cfg)
            print(OmegaConf.to_yaml(cfg), end="")
            print(f"# dry run of '{args.recipe}': every object was built; nothing was trained")
            return 0
    except _recipes.RecipeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        summary = _recipes.run(cfg)
    except _recipes.RecipeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    finally:
        end_process_group()
    if summary.pop("is_global_zero"):
        _print_summary(summary)
    return 0


if __name__ == "__main__":  # python -m lightning_icml26.cli (torchrun, srun)
    sys.exit(main())
