"""The heavy half of the ``icml26`` CLI: recipes launched as Hydra jobs through ``hydra.main``.

``icml26 run RECIPE [overrides] [-m]`` becomes one ``hydra.main`` call with the recipe as config name and
``pkg://lightning_icml26.recipes`` as config path, so Hydra's own machinery does the work: overrides and
their type checks against the structured schema, ``-m/--multirun`` sweeps (``a=1,2``, ``range``, ``glob``),
the basic launcher or any installed launcher/sweeper plugin (``hydra/launcher=...``), one output folder
per job and its ``.hydra/`` record (``overrides.yaml``, which ``icml26 resume`` reads back).

Two pieces of glue:

* ``hydra.main`` reads its arguments from ``sys.argv``, so ``sys.argv`` holds the Hydra arguments during
  the call. Inside each job it holds the job's own single-run command (``icml26 run RECIPE <the job's
  overrides>``): Lightning's DDP launcher starts the other local ranks by re-running ``sys.argv``, and they
  must run this job, not the whole sweep.
* ``HYDRA_FULL_ERROR=1`` is set during the call so that Hydra raises composition errors instead of
  printing them; the CLI prints each as one ``error:`` line. Errors inside a job are caught by the job
  function and reported after Hydra returns (Hydra would add its own line to stderr otherwise).

The run folder (``hydra.run.dir``, and ``hydra.sweep.dir`` for a multirun whose jobs go to ``<dir>/<n>``) is
decided before Hydra starts (:func:`~lightning_icml26._catalog.resolve_run_dir`), so every rank of a
``torchrun``/``srun`` launch writes into the same folder; ranks other than zero write no ``.hydra/``.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hydra
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException, OverrideParseException
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from lightning_icml26 import _recipes
from lightning_icml26._catalog import CONFIG_MODULE, global_rank, resolve_run_dir
from lightning_icml26._dry_run import rehearse
from lightning_icml26._outputs import atomic_write_text
from lightning_icml26._preemption import requeued
from lightning_icml26._rank_errors import is_rank_error, rank_error_line
from lightning_icml26._run_lock import RunFolderBusy, RunFolderLock, check_run_dir
from lightning_icml26.distributed.teardown import EXIT_WATCHDOG_SECONDS, end_process_group

__all__ = [
    "EXIT_WATCHDOG_SECONDS",
    "Launch",
    "end_process_group",
    "launch",
    "refused",
    "resume_overrides",
    "run_command",
]

# ICML26_DEBUG=1 (or ``icml26 --traceback``) prints the full traceback of a failed run before its error line.
DEBUG_ENV = "ICML26_DEBUG"

#: Exit code of a run stopped by Ctrl-C (128 + SIGINT, the shell's convention).
EXIT_INTERRUPTED = 130

#: Exit code of a run stopped by a preemption signal after writing its checkpoint (128 + SIGTERM).
EXIT_PREEMPTED = 143


@dataclass
class Launch:
    """One ``icml26 run`` / ``icml26 resume`` launch.

    Attributes:
        recipe: the recipe's name.
        overrides: Hydra overrides.
        run_dir: the launch's folder (a multirun's jobs go to ``run_dir/<job number>``).
        multirun: sweep the overrides (Hydra's ``--multirun``).
        dry_run: compose and build every object, print the config, train nothing.
        program: ``sys.argv[0]`` of the CLI, which Lightning re-runs for the other local ranks.
    """

    recipe: str
    overrides: list[str]
    run_dir: Path
    multirun: bool = False
    dry_run: bool = False
    program: str = "icml26"
    summaries: list[dict[str, Any]] = field(default_factory=list)
    failures: list[BaseException] = field(default_factory=list)
    refused_dirs: list[Path] = field(default_factory=list)
    launcher_pid: int = field(default_factory=os.getpid)


class JobFailed(Exception):
    """A sweep's job that ran in another process (a submitit worker) failed, with its one-line verdict.

    Hydra's sweeper re-raises it in the launching process, which then exits 1 (2 when the job's configuration
    was refused) instead of 0.

    Example:
        >>> import pickle
        >>> error = pickle.loads(pickle.dumps(JobFailed("model.lr: 'fast' does not fit", refused=True)))
        >>> error.line, error.refused
        ("model.lr: 'fast' does not fit", True)
    """

    def __init__(self, line: str, refused: bool) -> None:
        super().__init__(line)
        self.line = line
        self.refused = refused

    def __reduce__(self) -> tuple[type[JobFailed], tuple[str, bool]]:
        return (JobFailed, (self.line, self.refused))


def debug_requested() -> bool:
    """Whether ``ICML26_DEBUG`` asks for full tracebacks (set and not ``0``).

    Example:
        >>> import os
        >>> os.environ.pop("ICML26_DEBUG", None) and None
        >>> debug_requested()
        False
    """
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


def _quote(value: str | Path) -> str:
    text = str(value)
    return f"'{text}'" if "'" not in text else f'"{text}"'


def _keys(overrides: Sequence[str]) -> list[str]:
    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except OverrideParseException as error:
        raise _recipes.RecipeError(f"Error parsing override '{error.override}': {_recipes.one_line(error)}") from None
    return [override.key_or_group for override in parsed]


def resume_overrides(run_dir: Path, overrides: Sequence[str], ckpt: Path | None = None) -> tuple[str, list[str]]:
    """The recipe and the overrides that continue the run in ``run_dir`` from its ``last.ckpt``.

    The run's own overrides (``.hydra/overrides.yaml``) are kept unless a new override sets the same key;
    ``ckpt_path`` points at ``run_dir/checkpoints/last.ckpt`` (or ``ckpt``) unless the new overrides set it.

    Args:
        run_dir: a folder written by ``icml26 run``.
        overrides: new overrides, e.g. ``trainer.max_epochs=40``.
        ckpt: the checkpoint to continue from instead of ``last.ckpt``.

    Raises:
        RecipeError: no ``config.yaml`` or no ``checkpoints/last.ckpt`` in ``run_dir``.
    """
    config = run_dir / "config.yaml"
    if not config.is_file():
        raise _recipes.RecipeError(f"cannot resume '{run_dir}': no config.yaml there (not a run folder of icml26 run)")
    saved = OmegaConf.load(config)
    recipe = saved.get("recipe") if isinstance(saved, DictConfig) else None
    if not isinstance(recipe, str) or not recipe:
        raise _recipes.RecipeError(f"cannot resume '{run_dir}': its config.yaml names no recipe")
    given = "ckpt_path" in _keys(overrides)
    ckpt = ckpt or run_dir / "checkpoints" / "last.ckpt"
    if not given and not ckpt.exists() and not (ckpt.parent / f"{ckpt.stem}.prev{ckpt.suffix}").is_file():
        raise _recipes.RecipeError(f"cannot resume '{run_dir}': no checkpoints/last.ckpt (it stopped before one)")
    stored_path = run_dir / ".hydra" / "overrides.yaml"
    stored = OmegaConf.load(stored_path) if stored_path.is_file() else ListConfig([])
    if not isinstance(stored, ListConfig):
        raise _recipes.RecipeError(f"cannot resume '{run_dir}': {stored_path} is not a list of overrides")
    old = [str(item) for item in stored]
    replaced = {*_keys(overrides), "ckpt_path", "run_dir"}
    kept = [text for text, key in zip(old, _keys(old), strict=True) if key not in replaced]
    return recipe, [*kept, *overrides] if given else [*kept, *overrides, f"ckpt_path={_quote(ckpt.resolve())}"]


def _print_summary(summary: dict[str, Any]) -> None:
    state = "done" if summary["status"] == "finished" else summary["status"]
    print(f"\n== {summary['recipe']}: {state} in {summary['seconds']:.1f} s; outputs in {summary['run_dir']}")
    for key, value in sorted(summary["metrics"].items()):
        shown = f"{value:.4f}" if isinstance(value, float) else str(value)
        print(f"   {key:<28} {shown}")


def _job_dir(cfg: DictConfig) -> Path:
    try:
        return Path(str(cfg.run_dir))
    except OmegaConfBaseException:  # the folder Hydra made for this job
        return Path(HydraConfig.get().runtime.output_dir)


def _config_stamp(job_dir: Path) -> int | None:
    """When the run's ``config.yaml`` was last written (``None`` before the first run wrote one)."""
    path = job_dir / "config.yaml"
    return path.stat().st_mtime_ns if path.exists() else None


def _job(spec: Launch, cfg: DictConfig) -> None:
    stamp = _config_stamp(_job_dir(cfg))  # a resume's folder has one already
    saved_argv = sys.argv
    sys.argv = [spec.program, "run", spec.recipe, *HydraConfig.get().overrides.task]
    try:
        cfg = _recipes.finalize(cfg, HydraConfig.get().overrides.task)
        if spec.dry_run:
            steps = rehearse(_recipes.build(cfg))
            print(OmegaConf.to_yaml(cfg), end="")
            for step in steps:
                print(f"# {step}")
            print(f"# dry run of '{spec.recipe}': every object was built and rehearsed; nothing was trained")
            return
        if global_rank() == 0:
            print(f"== {spec.recipe}: run directory {cfg.run_dir}", flush=True)
        if spec.multirun and global_rank() == 0:  # a sweep's job: its own folder, locked here
            with RunFolderLock(cfg.run_dir):
                summary = _recipes.run(cfg)
        else:
            summary = _recipes.run(cfg)
        if summary.pop("is_global_zero"):
            _print_summary(summary)
        spec.summaries.append(summary)
    except Exception as error:
        if is_rank_error(error):  # one line, root cause first; the rank's traceback goes to the run folder
            if debug_requested():
                traceback.print_exception(error)
            error = _recipes.RecipeError(rank_error_line(error, cfg.get("run_dir"), *_rank_context(cfg)))
        spec.failures.append(error)
        job_dir = _job_dir(cfg)
        refused_here = refused(error) and _config_stamp(job_dir) == stamp  # refused before the run began
        if refused_here:
            spec.refused_dirs.append(job_dir)
        if os.getpid() != spec.launcher_pid:  # a worker process: tell the launching process through Hydra
            raise JobFailed(_recipes.error_line(error), refused=refused_here) from None
    finally:
        sys.argv = saved_argv


def _rank_context(cfg: DictConfig) -> tuple[float | None, int | None]:
    """The collective timeout (seconds) and the number of ranks a recipe asks for, where it says."""
    strategy = cfg.get("strategy")
    timeout = strategy.get("timeout") if isinstance(strategy, DictConfig) else None
    trainer = cfg.get("trainer")
    devices = trainer.get("devices") if isinstance(trainer, DictConfig) else None
    nodes = trainer.get("num_nodes", 1) if isinstance(trainer, DictConfig) else 1
    world = devices * nodes if isinstance(devices, int) and isinstance(nodes, int) else None
    return (float(timeout) if isinstance(timeout, int | float) else None), world


_EXTRA_HINT = re.compile(r"pip install 'lightning-icml26\[[\w,.-]+\]'")


def refused(error: BaseException) -> bool:
    """Whether ``error`` means the configuration is refused (exit 2) rather than a run that failed (exit 1).

    Refused: a :class:`~lightning_icml26._recipes.RecipeError` (a key, a value or an object the recipe cannot
    build), or a missing optional package, whose message names the extra to install.

    Example:
        >>> refused(_recipes.RecipeError("model.lr: 'fast' does not fit")), refused(RuntimeError("CUDA error"))
        (True, False)
        >>> refused(ImportError("... install it with: pip install 'lightning-icml26[plots]'"))
        True
    """
    cause = _recipes.root_cause(error)
    if isinstance(error, _recipes.RecipeError) or isinstance(cause, _recipes.RecipeError):
        return True
    return isinstance(cause, ImportError) and _EXTRA_HINT.search(str(cause)) is not None


def _run_dir(spec: Launch) -> Path:
    """The folder Hydra writes the launch into: ``run_dir=...`` when the overrides set it."""
    given = dict(zip(_keys(spec.overrides), spec.overrides, strict=True))
    if "run_dir" not in given:
        return spec.run_dir
    if spec.multirun:
        raise _recipes.RecipeError("run_dir cannot be set in a multirun (each job has its own); use --output-root")
    return Path(str(OverridesParser.create().parse_override(given["run_dir"]).value()))


def _remove_refused(spec: Launch, created: list[Path], dry: bool) -> None:
    """Leave no folder behind for a refused configuration (nor any a dry run made), only what existed before."""
    for folder in [*spec.refused_dirs, *(created[:1] if dry else [])]:
        if folder.is_dir() and any(folder == made or made in folder.parents for made in created):
            shutil.rmtree(folder, ignore_errors=True)
    for folder in created:  # deepest first: the run folder, then the parents this launch made
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


def _hydra_arguments(spec: Launch) -> list[str]:
    given = set(_keys(spec.overrides))
    run_dir = _run_dir(spec)
    arguments = [*spec.overrides, f"hydra.run.dir={_quote(run_dir)}", f"hydra.sweep.dir={_quote(run_dir)}"]
    if os.environ.get("ICML26_RUN_DIR") and "run_dir" not in given:
        arguments.append(f"run_dir={_quote(os.environ['ICML26_RUN_DIR'])}")  # a rank Lightning started
    if global_rank() != 0 or spec.dry_run:
        arguments.append("hydra.output_subdir=null")
    return [*arguments, "--multirun"] if spec.multirun else arguments


def _hydra_record(spec: Launch) -> dict[Path, str]:
    """The files of an existing run folder's ``.hydra/`` record (a resume's folder), to put back on refusal."""
    try:
        record = _run_dir(spec) / ".hydra"
    except _recipes.RecipeError:
        return {}
    return {path: path.read_text() for path in record.glob("*.yaml")} if record.is_dir() else {}


def launch(spec: Launch) -> int:
    """Run (or dry-run) a recipe through ``hydra.main``; print errors as one line each.

    Args:
        spec: what to launch.

    Returns:
        The exit code: 0 when every job finished; 2 when the configuration is refused (a bad recipe, key,
        value or object, a missing optional package), with or without ``--dry-run``, and then no run folder
        is left behind, and an existing folder (``icml26 resume``) keeps its ``.hydra/`` record as it was;
        1 when a job failed during its run; 130 when a job was interrupted.
    """
    record = _hydra_record(spec)
    code = _launch_with_hydra(spec)
    if code == 2:  # Hydra rewrote the record before the job refused the configuration: put the old one back
        for path, content in record.items():
            atomic_write_text(path, content)
    return code


def _launch_with_hydra(spec: Launch) -> int:
    previous_error_mode = os.environ.get("HYDRA_FULL_ERROR")
    saved_argv = sys.argv
    created: list[Path] = []
    lock: RunFolderLock | None = None
    try:
        spec.run_dir = run_dir = _run_dir(spec)
        check_run_dir(run_dir)
        # folders this launch may create (Hydra makes the run folder): a refused configuration leaves none
        created = [p for p in (run_dir, *list(run_dir.parents)[:2]) if not p.exists()]
        arguments = _hydra_arguments(spec)
        if not (spec.dry_run or spec.multirun) and global_rank() == 0:  # one run per folder
            lock = RunFolderLock(spec.run_dir).acquire()
        os.environ["HYDRA_FULL_ERROR"] = "1"
        sys.argv = [spec.program, *arguments]
        GlobalHydra.instance().clear()
        entry = hydra.main(config_path=f"pkg://{CONFIG_MODULE}", config_name=spec.recipe, version_base="1.3")
        entry(lambda cfg: _job(spec, cfg))()
    except JobFailed as failed:  # a job of a sweep that ran in another process (submitit)
        print(f"error: {failed.line}", file=sys.stderr)
        return 2 if failed.refused else 1
    except (HydraException, OmegaConfBaseException, _recipes.RecipeError, RunFolderBusy, NotADirectoryError) as error:
        print(f"error: {_recipes.one_line(error)}", file=sys.stderr)
        return 2
    finally:
        if lock is not None:
            lock.release()
        sys.argv = saved_argv
        GlobalHydra.instance().clear()
        if previous_error_mode is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = previous_error_mode
        end_process_group()
        _remove_refused(spec, created, dry=spec.dry_run)
    for failure in spec.failures:
        if isinstance(failure, RunFolderBusy):
            print(f"error: {failure}", file=sys.stderr)
            continue
        if debug_requested() and not isinstance(failure, _recipes.RecipeError):
            traceback.print_exception(failure)
        print(f"error: {_recipes.error_line(failure)}", file=sys.stderr)
    if spec.failures:
        refused_count = len(spec.refused_dirs) + sum(isinstance(f, RunFolderBusy) for f in spec.failures)
        return 2 if spec.dry_run or refused_count >= len(spec.failures) else 1
    if any(summary["status"] == "interrupted" for summary in spec.summaries):
        return EXIT_INTERRUPTED
    if any(summary["status"] == "preempted" for summary in spec.summaries):
        return EXIT_PREEMPTED
    return 0


def run_command(
    command: str,
    target: str,
    overrides: Sequence[str],
    *,
    multirun: bool = False,
    dry_run: bool = False,
    output_root: str = "outputs",
    program: str = "icml26",
) -> int:
    """Carry out ``icml26 run`` (``target`` is a recipe) or ``icml26 resume`` (``target`` is a run folder).

    Returns:
        The process exit code (see :func:`launch`).
    """
    try:
        if command == "resume":
            run_dir = Path(target)
            if multirun:
                raise _recipes.RecipeError("resume continues one run; -m/--multirun does not apply")
            recipe, overrides = resume_overrides(run_dir, overrides)
        else:
            _recipes.check_recipe(target)
            recipe, run_dir = target, resolve_run_dir(target, output_root)
            restart = None if multirun or "ckpt_path" in _keys(overrides) else requeued(run_dir)
            if restart is not None:  # a scheduler's restart of this run: continue it from its newest checkpoint
                if global_rank() == 0:
                    print(f"== {recipe}: restarted; resuming {run_dir} from {restart}", flush=True)
                recipe, overrides = resume_overrides(run_dir, overrides, restart)
    except (HydraException, _recipes.RecipeError) as error:
        print(f"error: {_recipes.one_line(error)}", file=sys.stderr)
        return 2
    spec = Launch(recipe, list(overrides), run_dir, multirun=multirun, dry_run=dry_run, program=program)
    return launch(spec)
