"""Compose, instantiate and run the Hydra recipes of :mod:`lightning_icml26.recipes`.

A recipe either trains (``data``, ``model``, ``trainer``, ``callbacks`` and ``logger`` nodes, run through
``Trainer.fit`` and ``Trainer.test``) or names a ``task``: a ``_partial_: true`` callable that the runner
calls with no arguments and that returns a dict of summary figures. Recipes compose shared config groups
(``trainer/``, ``logger/``, ``callbacks/``, ``data/``, ``model/``, ``strategy/``, ``task/``) over the typed
schema of :mod:`lightning_icml26._schema`; Hydra and OmegaConf check every override against it.

The ``icml26`` CLI launches recipes through ``hydra.main`` (multirun, launchers, sweepers); :func:`compose`
is the same composition through Hydra's compose API, for scripts and tests. Only global rank zero writes
the resolved ``config.yaml`` and ``summary.json`` (both atomically). A resumed run (``ckpt_path`` set)
appends to its own ``metrics.csv`` (:class:`~lightning_icml26._outputs.CsvHistory`). A Ctrl-C during
``fit`` still writes ``summary.json`` (``"status": "interrupted"``) and the ``MetricsPlot`` figures.
"""

from __future__ import annotations

import functools
import inspect
import os
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
from hydra import compose as hydra_compose
from hydra import initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from hydra.utils import instantiate
from lightning.pytorch.loggers import CSVLogger
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from lightning_icml26 import _schema
from lightning_icml26._arguments import argument_problems, recipe_requirements
from lightning_icml26._catalog import (
    CONFIG_MODULE,
    RecipeInfo,
    global_rank,
    list_recipes,
    recipes_dir,
    resolve_run_dir,
)
from lightning_icml26._checkpoints import use_atomic_checkpoints
from lightning_icml26._outputs import CsvHistory, atomic_write_text, write_summary
from lightning_icml26._preemption import preempted_checkpoint, preemption_of, resumable_checkpoint, signals_forwarded
from lightning_icml26._requirements import Requirement
from lightning_icml26._resumable import RNGStateCheckpoint, make_resumable
from lightning_icml26.callbacks import MetricsPlot, NonFiniteLossError
from lightning_icml26.tasks import TaskConfig

__all__ = [
    "BuiltRecipe",
    "RecipeError",
    "RecipeInfo",
    "build",
    "compose",
    "apply_smoke",
    "error_line",
    "failure_status",
    "finalize",
    "global_rank",
    "list_recipes",
    "missing_requirements",
    "one_line",
    "recipes_dir",
    "resolve_run_dir",
    "run",
]

_schema.register_configs()


class RecipeError(Exception):
    """A recipe problem reported to the user as one line (unknown recipe, bad override, bad node)."""


@dataclass
class BuiltRecipe:
    """Every object a recipe instantiates, before anything runs."""

    config: DictConfig
    task: Callable[[], Any] | None = None
    datamodule: Any = None
    model: Any = None
    callbacks: list[Any] | None = None
    loggers: list[Any] | None = None
    trainer: Any = None


def one_line(error: BaseException) -> str:
    r"""The messages of ``error`` and of its causes, on one line (OmegaConf's detail lines joined by ``;``).

    Example:
        >>> try:
        ...     raise ValueError("outer") from KeyError("inner\n    full_key: a.b")
        ... except ValueError as caught:
        ...     one_line(caught)
        "outer: 'inner\\n    full_key: a.b'"
        >>> one_line(RuntimeError("first line\n    second"))
        'first line; second'
    """
    parts: list[str] = []
    current: BaseException | None = error
    while current is not None:
        lines = [line.strip().rstrip(".") for line in str(current).splitlines() if line.strip()]
        text = "; ".join(lines)
        if text and text not in parts:
            parts.append(text)
        current = current.__cause__
    return ": ".join(parts) or type(error).__name__


def root_cause(error: BaseException) -> BaseException:
    """The innermost exception of ``error``'s ``__cause__`` chain (Hydra wraps the real error in its own).

    Example:
        >>> try:
        ...     raise RuntimeError("wrapper") from ValueError("lr must be positive")
        ... except RuntimeError as caught:
        ...     root_cause(caught)
        ValueError('lr must be positive')
    """
    current = error
    while current.__cause__ is not None:
        current = current.__cause__
    return current


def describe_root_cause(error: BaseException) -> str:
    r"""``"<Type>: <message>"`` of the innermost cause, on one line (what a user needs to fix the input).

    Example:
        >>> try:
        ...     raise RuntimeError("Error in call to target 'X'") from ValueError("lr must be\n positive")
        ... except RuntimeError as caught:
        ...     describe_root_cause(caught)
        'ValueError: lr must be; positive'
    """
    cause = root_cause(error)
    return f"{type(cause).__name__}: {one_line(cause)}"


def check_recipe(recipe: str) -> None:
    """Raise :class:`RecipeError` naming the choices when ``recipe`` is not a shipped recipe.

    Example:
        >>> check_recipe("quickstart")
        >>> check_recipe("nope")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_icml26._recipes.RecipeError: unknown recipe 'nope'; choose one of: arbg_aldp, ...
    """
    names = [r.name for r in list_recipes()]
    if recipe not in names:
        raise RecipeError(f"unknown recipe '{recipe}'; choose one of: {', '.join(names)}")


def apply_smoke(cfg: DictConfig, overrides: Sequence[str] = ()) -> DictConfig:
    """Merge ``smoke_settings`` over a composed recipe when it runs as a smoke test (``trainer=smoke``).

    The settings come after everything the recipe set, so that a smoke test is two batches of one epoch
    whatever the recipe says; a recipe adds its own (its task's sizes, a callback's cadence). A value the
    command line sets explicitly (``trainer=smoke trainer.max_epochs=2``) still wins. Nothing changes when
    ``smoke`` is false.

    Raises:
        RecipeError: a smoke setting names a key the recipe does not have.

    Example:
        >>> cfg = compose("quickstart", ["trainer=smoke"], run_dir="/tmp/doc")
        >>> cfg.trainer.max_epochs, cfg.trainer.limit_train_batches, cfg.smoke
        (1, 2, True)
        >>> compose("quickstart", [], run_dir="/tmp/doc").trainer.max_epochs
        25
        >>> compose("quickstart", ["trainer=smoke", "trainer.max_epochs=2"], run_dir="/tmp/doc").trainer.max_epochs
        2
    """
    settings = cfg.get("smoke_settings")
    if not cfg.get("smoke") or settings is None:
        return cfg
    try:
        merged = OmegaConf.merge(cfg, {key: value for key, value in settings.items() if key != "smoke_settings"})
        assert isinstance(merged, DictConfig)
        for override in OverridesParser.create().parse_overrides(list(overrides)):
            key = override.key_or_group
            leaf = OmegaConf.select(settings, key, default=None)
            if override.is_delete() or leaf is None or isinstance(leaf, DictConfig | ListConfig):
                continue  # not a smoke setting (or a whole group): the composition already has it
            OmegaConf.update(merged, key, cfg_value(cfg, key), force_add=False)
    except OmegaConfBaseException as error:
        raise RecipeError(f"cannot apply the smoke settings of '{cfg.get('recipe', '?')}': {one_line(error)}") from None
    return merged


def cfg_value(cfg: DictConfig, key: str) -> Any:
    """The value at dotted ``key`` of ``cfg``, unresolved (an interpolation stays one)."""
    parent, _, leaf = key.rpartition(".")
    node = OmegaConf.select(cfg, parent) if parent else cfg
    child = node._get_node(leaf) if isinstance(node, DictConfig) else None
    return child._value() if child is not None else None


def finalize(cfg: DictConfig, overrides: Sequence[str] = ()) -> DictConfig:
    """Apply the smoke settings (:func:`apply_smoke`) and resolve every interpolation of a composed recipe.

    Errors become :class:`RecipeError`.

    Example:
        >>> from omegaconf import OmegaConf
        >>> finalize(OmegaConf.create({"a": 1, "b": "${a}"})).b
        1
    """
    try:
        cfg = apply_smoke(cfg, overrides)
        OmegaConf.resolve(cfg)
    except OmegaConfBaseException as error:
        raise RecipeError(f"cannot resolve recipe '{cfg.get('recipe', '?')}': {one_line(error)}") from None
    return cfg


def compose(recipe: str, overrides: Sequence[str] = (), run_dir: str | Path | None = None) -> DictConfig:
    """Compose a recipe with Hydra overrides through Hydra's compose API (no Hydra job, no output folder).

    Args:
        recipe: name of a shipped recipe (see :func:`list_recipes`).
        overrides: Hydra overrides, ``key=value`` (change), ``+key=value`` (add), ``~key`` (delete),
            ``group=option`` (choose a config group option, e.g. ``model/optimizer=l1_sgd``).
        run_dir: value of ``run_dir`` unless an override sets it; defaults to :func:`resolve_run_dir`.

    Returns:
        The composed config, resolved.

    Raises:
        RecipeError: unknown recipe, unknown key, a value of the wrong type, or a bad override.

    Example:
        >>> cfg = compose("quickstart", ["trainer.max_epochs=2"], run_dir="/tmp/doc")
        >>> cfg.trainer.max_epochs, cfg.run_dir, cfg.recipe
        (2, '/tmp/doc', 'quickstart')
        >>> compose("quickstart", ["trainer.max_epochs=two"], run_dir="/tmp/doc")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_icml26._recipes.RecipeError: Error merging override trainer.max_epochs=two: Value 'two' ...
    """
    check_recipe(recipe)
    given = {override.lstrip("+~").partition("=")[0] for override in overrides}
    extra = [f"recipe={recipe}"]
    if "run_dir" not in given:
        extra.append(f"run_dir='{run_dir if run_dir is not None else resolve_run_dir(recipe)}'")
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3"):
            cfg = hydra_compose(config_name=recipe, overrides=[*overrides, *extra])
    except (HydraException, OmegaConfBaseException) as error:
        raise RecipeError(one_line(error)) from None
    finally:
        GlobalHydra.instance().clear()
    return finalize(cfg, overrides)


def _instantiate(node: Any, where: str) -> Any:
    try:
        obj = instantiate(node, _convert_="partial")
    except Exception as error:
        target = node.get("_target_", "?") if isinstance(node, DictConfig) else "?"
        raise RecipeError(f"cannot build '{where}' ({target}): {describe_root_cause(error)}") from None
    if isinstance(obj, functools.partial):
        _check_partial(obj, where)
    return obj


def _check_partial(obj: functools.partial, where: str) -> None:
    try:
        signature = inspect.signature(obj.func)
    except (TypeError, ValueError):
        return
    try:
        signature.bind_partial(*obj.args, **obj.keywords)
    except TypeError as error:
        raise RecipeError(f"cannot build '{where}' ({obj.func.__qualname__}): TypeError: {error}") from None


def _named_nodes(cfg: DictConfig, key: str) -> dict[str, Any]:
    node = cfg.get(key)
    if node is None:
        return {}
    if not isinstance(node, DictConfig):
        kind = "list" if isinstance(node, ListConfig) else type(node).__name__
        raise RecipeError(f"'{key}' must be a mapping of name to object, got {kind}")
    return {str(name): value for name, value in node.items() if value is not None}


#: The object nodes in the order they are checked: the trainer last, since it holds the strategy node again.
_CHECKED_NODES = ("task", "data", "model", "callbacks", "logger", "strategy", "trainer")


def check_arguments(cfg: DictConfig) -> None:
    """Raise :class:`RecipeError` for the first key or value an object node's target would refuse.

    Example:
        >>> check_arguments(compose("quickstart", ["+model.hidden=3"], run_dir="/tmp/doc_check"))
        Traceback (most recent call last):
        ...
        lightning_icml26._recipes.RecipeError: model.hidden: 'hidden' is not an argument of ...
    """
    keys = ("task",) if cfg.get("task") is not None else _CHECKED_NODES[1:]
    for key in keys:
        node = cfg.get(key)
        problems = argument_problems(node, key) if node is not None else []
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise RecipeError(problems[0] + more)


def missing_requirements(cfg: DictConfig) -> list[Requirement]:
    """The optional packages the recipe's objects declare and this environment lacks (each once).

    Example:
        >>> missing_requirements(compose("quickstart", [], run_dir="/tmp/doc_check"))
        []
    """
    keys = ("task",) if cfg.get("task") is not None else _CHECKED_NODES[1:]
    missing: list[Requirement] = []
    for key in keys:
        node = cfg.get(key)
        for _, requirement in recipe_requirements(node, key) if node is not None else []:
            if not requirement.is_met() and requirement.module not in [m.module for m in missing]:
                missing.append(requirement)
    return missing


def check_requirements(cfg: DictConfig) -> None:
    """Raise :class:`RecipeError` naming the extra of the first optional package the recipe needs and lacks.

    Every ``_target_`` of the recipe is asked what it will need (plots drawn after training included), so
    that a missing package is found before the first step, not after training.
    """
    keys = ("task",) if cfg.get("task") is not None else _CHECKED_NODES[1:]
    for key in keys:
        node = cfg.get(key)
        for where, requirement in recipe_requirements(node, key) if node is not None else []:
            if not requirement.is_met():
                raise RecipeError(requirement.message(where))


def build(cfg: DictConfig) -> BuiltRecipe:
    """Instantiate every object of a composed recipe (nothing is trained or called).

    Args:
        cfg: a config from :func:`compose`.

    Returns:
        The objects, ready to run.

    Before building, every key and plain value of the object nodes is checked against its target's
    signature (:func:`~lightning_icml26._arguments.argument_problems`), so that a value of the wrong type
    is refused here, naming its key, rather than at its first use during the run; and every optional
    package the objects declare they will need is looked for (:func:`check_requirements`).

    Raises:
        RecipeError: naming the first key or node that is refused.

    Example:
        >>> built = build(compose("quickstart", ["trainer.max_epochs=1"], run_dir="/tmp/doc_build"))
        >>> type(built.model).__name__, type(built.trainer).__name__
        ('ClassifierModule', 'Trainer')
        >>> build(compose("quickstart", ["model.optimizer.lr=fast"], run_dir="/tmp/doc_build"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        lightning_icml26._recipes.RecipeError: model.optimizer.lr: 'fast' does not fit torch.optim.AdamW's argument ...
    """
    check_arguments(cfg)
    check_requirements(cfg)
    if cfg.get("task") is not None:
        task = _instantiate(cfg.task, "task")
        if isinstance(task, TaskConfig):
            return BuiltRecipe(config=cfg, task=task.run)
        if not callable(task):
            raise RecipeError(
                f"'task' must build a TaskConfig or a callable (use _partial_: true), got {type(task).__name__}"
            )
        return BuiltRecipe(config=cfg, task=task)
    for key in ("data", "model", "trainer"):
        if cfg.get(key) is None:
            raise RecipeError(f"recipe has neither 'task' nor '{key}'")
    datamodule = _instantiate(cfg.data, "data")
    model = _instantiate(cfg.model, "model")
    callbacks = [_instantiate(node, f"callbacks.{name}") for name, node in _named_nodes(cfg, "callbacks").items()]
    loggers = [_instantiate(node, f"logger.{name}") for name, node in _named_nodes(cfg, "logger").items()]
    trainer_node = OmegaConf.masked_copy(cfg, ["trainer"]).trainer
    try:
        trainer = instantiate(trainer_node, callbacks=callbacks, logger=loggers or False, _convert_="partial")
    except Exception as error:
        raise RecipeError(f"cannot build 'trainer': {describe_root_cause(error)}") from None
    use_atomic_checkpoints(trainer)
    return BuiltRecipe(cfg, None, datamodule, model, callbacks, loggers, trainer)


def _has_test_loader(datamodule: Any) -> bool:
    method = getattr(type(datamodule), "test_dataloader", None)
    return method is not None and method is not pl.LightningDataModule.test_dataloader


def _scalars(metrics: Mapping[str, Any]) -> dict[str, float]:
    out = {}
    for key, value in metrics.items():
        try:
            out[str(key)] = float(value)
        except (TypeError, ValueError):
            continue
    return out


def run(cfg: DictConfig) -> dict[str, Any]:
    """Run a composed recipe end to end and return its summary.

    Every object is built (and the configuration checked) before anything is written: a refused
    configuration raises :class:`RecipeError` and leaves the run folder untouched. Then rank zero writes
    ``config.yaml`` (resolved) and, however the run ends, ``summary.json`` into ``cfg.run_dir``, atomically
    (:func:`~lightning_icml26._outputs.write_summary`). The summary's ``status`` is ``"finished"``,
    ``"interrupted"`` after a Ctrl-C (then the test stage is skipped and the plots are written from the
    epochs seen), ``"diverged"`` after a non-finite loss or ``"failed"`` after any other error, which is
    re-raised; the last two carry the ``error`` line.

    Args:
        cfg: a config from :func:`compose` (or the resolved config of a Hydra job).

    Returns:
        The summary: status, final scalar metrics (or the task's figures), the run directory, the time
        taken, and ``is_global_zero``.
    """
    run_dir = Path(cfg.run_dir)
    # Processes that Lightning launches during fit inherit the same directory; the variable is put back
    # afterwards so that a later run in this process resolves its own directory.
    previous = os.environ.get("ICML26_RUN_DIR")
    os.environ["ICML26_RUN_DIR"] = str(run_dir)
    try:
        return _run_in(cfg, run_dir)
    finally:
        if previous is None:
            os.environ.pop("ICML26_RUN_DIR", None)
        else:
            os.environ["ICML26_RUN_DIR"] = previous


@contextmanager
def _kept_sigint() -> Iterator[None]:
    """Put back the SIGINT handler that Lightning replaces with 'ignore' when it handles a Ctrl-C."""
    in_main = threading.current_thread() is threading.main_thread()
    handler = signal.getsignal(signal.SIGINT) if in_main else None
    try:
        yield
    finally:
        if in_main and handler is not None:
            signal.signal(signal.SIGINT, handler)


def _resumable(cfg: DictConfig, built: BuiltRecipe, run_dir: Path) -> str | None:
    """The checkpoint to resume from (one that loads); loader position and random states go into checkpoints."""
    make_resumable(built.datamodule)
    if not any(isinstance(c, RNGStateCheckpoint) for c in built.trainer.callbacks):
        built.trainer.callbacks.append(RNGStateCheckpoint())
    return resumable_checkpoint(cfg.get("ckpt_path"), run_dir)


def _fit_and_test(cfg: DictConfig, built: BuiltRecipe, run_dir: Path) -> tuple[str, dict[str, float]]:
    trainer = built.trainer
    resuming = cfg.get("ckpt_path") is not None
    ckpt_path = _resumable(cfg, built, run_dir)
    writes = resuming and global_rank() == 0  # the CSV logger writes on global rank zero only
    loggers = trainer.loggers if writes else []
    histories = [CsvHistory(Path(lg.log_dir) / "metrics.csv") for lg in loggers if isinstance(lg, CSVLogger)]
    for history in histories:
        history.set_aside()
    status = "finished"
    try:
        with _kept_sigint(), warnings.catch_warnings(), signals_forwarded(trainer) as received:
            if writes:  # CSVLogger warns that it deletes the old metrics.csv; the history was set aside above
                warnings.filterwarnings("ignore", message="Experiment logs directory .* exists and is not empty")
            trainer.fit(built.model, datamodule=built.datamodule, ckpt_path=ckpt_path)
        if preemption_of(trainer, received) is not None:
            status = "preempted"
    except SystemExit:
        # Lightning handles a KeyboardInterrupt in fit: hooks, teardown, then sys.exit(1).
        if not trainer.interrupted:
            raise
        status = "interrupted"
    finally:
        for history in histories:
            history.restore()
    figures = _scalars(trainer.callback_metrics)
    if status == "interrupted":
        for callback in trainer.callbacks:
            if isinstance(callback, MetricsPlot):  # fit ended before on_fit_end: draw the epochs seen
                callback.on_fit_end(trainer, built.model)
    elif status == "finished" and cfg.get("test_after_fit", True) and _has_test_loader(built.datamodule):
        # a preempted run is tested by the requeued job that finishes it, on the final weights
        try:
            with _kept_sigint():
                trainer.test(built.model, datamodule=built.datamodule, verbose=False)
        except SystemExit:
            if not trainer.interrupted:
                raise
            return "interrupted", figures
        figures.update(_scalars(trainer.callback_metrics))
    return status, figures


def error_line(error: BaseException) -> str:
    """The one line the CLI prints after ``error:`` for ``error`` (and ``summary.json`` keeps as ``error``).

    Example:
        >>> error_line(RecipeError("model.lr: 'fast' does not fit"))
        "model.lr: 'fast' does not fit"
        >>> try:
        ...     raise RuntimeError("Error in call to target 'X'") from ValueError("lr must be positive")
        ... except RuntimeError as caught:
        ...     error_line(caught)
        'ValueError: lr must be positive'
    """
    return str(error) if isinstance(error, RecipeError) else describe_root_cause(error)


def failure_status(error: BaseException) -> str:
    """``"diverged"`` when the run stopped on a non-finite loss, ``"failed"`` otherwise.

    Example:
        >>> from lightning_icml26.callbacks import NonFiniteLossError
        >>> failure_status(NonFiniteLossError("training loss is nan")), failure_status(OSError("disk full"))
        ('diverged', 'failed')
    """
    return "diverged" if isinstance(root_cause(error), NonFiniteLossError) else "failed"


def _run_in(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    pl.seed_everything(int(cfg.get("seed", 0)), workers=True, verbose=False)
    start = time.perf_counter()
    built = build(cfg)  # a refused configuration stops here: nothing is written into the run folder
    is_zero = global_rank() == 0 if built.trainer is None else built.trainer.is_global_zero
    if is_zero:
        atomic_write_text(run_dir / "config.yaml", OmegaConf.to_yaml(cfg))
    recipe = str(cfg.get("recipe", ""))
    try:
        if built.task is not None:
            try:
                result = built.task()
            except KeyboardInterrupt:  # a task has no Lightning loop to catch Ctrl-C: the verdict is written here
                result, status = {}, "interrupted"
            else:
                status = "finished"
            figures = dict(result) if isinstance(result, Mapping) else {"result": result}
        else:
            status, figures = _fit_and_test(cfg, built, run_dir)
    except BaseException as error:
        if is_zero and isinstance(error, Exception):
            write_summary(
                run_dir,
                recipe=recipe,
                status=failure_status(error),
                seconds=time.perf_counter() - start,
                metrics=_scalars(built.trainer.callback_metrics) if built.trainer is not None else {},
                error=error_line(error),
            )
        raise
    seconds = time.perf_counter() - start
    extra: dict[str, Any] = {}
    if status == "preempted":  # where the requeued job continues from
        extra["checkpoint"] = str(preempted_checkpoint(built.trainer, run_dir))
    if is_zero:
        summary = write_summary(run_dir, recipe=recipe, status=status, seconds=seconds, metrics=figures, **extra)
    else:
        summary = {"recipe": recipe, "status": status, "run_dir": str(run_dir), "seconds": seconds, "metrics": figures}
        summary.update(extra)
    summary["is_global_zero"] = is_zero
    return summary
