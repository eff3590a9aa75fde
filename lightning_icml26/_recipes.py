"""Find, compose, check, instantiate and run the Hydra recipes shipped in ``recipes/``.

A recipe is a top-level ``recipes/<name>.yaml`` with a one-line ``description``. It either trains
(``data``, ``model``, ``trainer``, optional ``callbacks`` and ``logger`` nodes, run through
``Trainer.fit`` and ``Trainer.test``) or names a ``task``: a ``_partial_: true`` callable that the
runner calls with no arguments and that returns a dict of summary figures.

Multi-process safety: the run directory is decided once, before anything is launched, from
``ICML26_RUN_DIR`` or a run id every rank shares (``ICML26_RUN_ID``, ``SLURM_JOB_ID``,
``TORCHELASTIC_RUN_ID``, the rendezvous address), and exported as ``ICML26_RUN_DIR`` so that processes
Lightning launches inherit it. Hydra's own run-directory machinery (``${now:}``, ``chdir``) is not
used. Only global rank zero writes the resolved config and the summary.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict

__all__ = [
    "RecipeError",
    "RecipeInfo",
    "BuiltRecipe",
    "build",
    "compose",
    "global_rank",
    "list_recipes",
    "recipes_dir",
    "resolve_run_dir",
    "run",
]

_MISSING = object()


class RecipeError(Exception):
    """A recipe problem reported to the user as one line (unknown recipe or key, wrong type, bad node)."""


@dataclass(frozen=True)
class RecipeInfo:
    """A recipe's name, its one-line description and its file."""

    name: str
    description: str
    path: Path


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


def recipes_dir() -> Path:
    """Folder of the shipped recipes (``recipes/`` at the repository root, packed into the wheel).

    Example:
        >>> (recipes_dir() / "quickstart.yaml").is_file()
        True
    """
    return Path(__file__).resolve().parent / "recipes"


def list_recipes() -> list[RecipeInfo]:
    """All shipped recipes, sorted by name.

    Example:
        >>> "quickstart" in [r.name for r in list_recipes()]
        True
    """
    infos = []
    for path in sorted(recipes_dir().glob("*.yaml")):
        raw = OmegaConf.load(path)
        description = str(raw.get("description", "")) if isinstance(raw, DictConfig) else ""
        infos.append(RecipeInfo(path.stem, description.strip(), path))
    return infos


def global_rank() -> int:
    """This process's global rank from the launcher's environment (0 when not launched).

    Example:
        >>> isinstance(global_rank(), int)
        True
    """
    for key in ("RANK", "SLURM_PROCID", "PMI_RANK", "OMPI_COMM_WORLD_RANK"):
        if key in os.environ:
            return int(os.environ[key])
    local = int(os.environ.get("LOCAL_RANK", "0"))
    node = int(os.environ.get("NODE_RANK", "0"))
    per_node = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    return node * per_node + local


def resolve_run_dir(recipe: str, output_root: str | Path = "outputs") -> Path:
    """The run directory every rank of one launch agrees on.

    Order: ``ICML26_RUN_DIR``; ``<output_root>/<recipe>/<id>`` with the id taken from ``ICML26_RUN_ID``,
    ``SLURM_JOB_ID``, ``TORCHELASTIC_RUN_ID`` (when not ``"none"``) or, under a multi-process launch, the
    rendezvous ``MASTER_ADDR``/``MASTER_PORT``; a timestamp only for a single process.

    Args:
        recipe: recipe name, the middle path component.
        output_root: parent of all runs.

    Example:
        >>> import os
        >>> saved = {k: os.environ.pop(k) for k in ("ICML26_RUN_DIR", "ICML26_RUN_ID") if k in os.environ}
        >>> os.environ["ICML26_RUN_ID"] = "doc"
        >>> str(resolve_run_dir("quickstart", "out"))
        'out/quickstart/doc'
        >>> del os.environ["ICML26_RUN_ID"]
        >>> os.environ.update(saved)
    """
    if os.environ.get("ICML26_RUN_DIR"):
        return Path(os.environ["ICML26_RUN_DIR"])
    run_id = os.environ.get("ICML26_RUN_ID") or os.environ.get("SLURM_JOB_ID")
    if not run_id and os.environ.get("TORCHELASTIC_RUN_ID", "none") != "none":
        run_id = os.environ["TORCHELASTIC_RUN_ID"]
    if not run_id and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        addr = os.environ.get("MASTER_ADDR", "local").replace(":", "_")
        run_id = f"ddp-{addr}-{os.environ.get('MASTER_PORT', '0')}"
    if not run_id:
        run_id = time.strftime("%Y-%m-%d_%H-%M-%S")
    return Path(output_root) / recipe / run_id


def _override_key(override: str) -> tuple[str, str, bool]:
    """Split ``key=value`` into (key, value, plain) where plain means no ``+``/``++``/``~`` prefix."""
    prefix_free = override.lstrip("+~")
    key, _, value = prefix_free.partition("=")
    return key.strip(), value, prefix_free == override


def _type_name(value: Any) -> str:
    if isinstance(value, DictConfig | Mapping):
        return "mapping"
    if isinstance(value, ListConfig | list | tuple):
        return "list"
    return type(value).__name__


def _compatible(default: Any, value: Any) -> bool:
    if default is None or value is None:
        return True
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, int | float) and not isinstance(value, bool)
    if isinstance(default, DictConfig | Mapping):
        return isinstance(value, DictConfig | Mapping)
    if isinstance(default, ListConfig | list | tuple):
        return isinstance(value, ListConfig | list | tuple)
    if isinstance(default, str):
        return not isinstance(value, DictConfig | ListConfig | Mapping | list | tuple)
    return True


def _compose_raw(recipe: str, overrides: Sequence[str]) -> DictConfig:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(recipes_dir()), version_base="1.3"):
        return hydra_compose(config_name=recipe, overrides=list(overrides))


def compose(recipe: str, overrides: Sequence[str] = (), run_dir: str | Path | None = None) -> DictConfig:
    """Compose a recipe with Hydra overrides and check every override.

    Args:
        recipe: name of a shipped recipe (see :func:`list_recipes`).
        overrides: Hydra overrides, ``key=value`` (change), ``+key=value`` (add), ``~key`` (delete).
        run_dir: value for the ``run_dir`` key; defaults to :func:`resolve_run_dir`.

    Returns:
        The composed config, resolved.

    Raises:
        RecipeError: unknown recipe, unknown key, a value of the wrong type, or a bad override.

    Example:
        >>> cfg = compose("quickstart", ["trainer.max_epochs=2"], run_dir="/tmp/doc")
        >>> cfg.trainer.max_epochs, cfg.run_dir
        (2, '/tmp/doc')
        >>> compose("quickstart", ["trainer.max_epochs=two"], run_dir="/tmp/doc")
        Traceback (most recent call last):
        ...
        lightning_icml26._recipes.RecipeError: wrong type for 'trainer.max_epochs': expected int, got str 'two'
    """
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    names = [r.name for r in list_recipes()]
    if recipe not in names:
        raise RecipeError(f"unknown recipe '{recipe}'; choose one of: {', '.join(names)}")
    user_run_dir = [o for o in overrides if _override_key(o)[0] == "run_dir"]
    if run_dir is not None and not user_run_dir:
        overrides = [*overrides, f"run_dir={run_dir}"]
    try:
        defaults = _compose_raw(recipe, [f"run_dir={run_dir or 'unset'}"])
        cfg = _compose_raw(recipe, overrides)
    except HydraException as error:
        raise RecipeError(_explain_compose_error(recipe, overrides, defaults_ok=True, error=error)) from None
    except OmegaConfBaseException as error:
        raise RecipeError(f"bad config in recipe '{recipe}': {_first_line(error)}") from None
    for override in overrides:
        key, _, plain = _override_key(override)
        if not plain or key.startswith("hydra.") or key == "run_dir":
            continue
        default = OmegaConf.select(defaults, key, default=_MISSING, throw_on_missing=False)
        if default is _MISSING:
            continue
        value = OmegaConf.select(cfg, key, throw_on_missing=False)
        if not _compatible(default, value):
            shown = repr(OmegaConf.to_container(value) if isinstance(value, DictConfig | ListConfig) else value)
            raise RecipeError(
                f"wrong type for '{key}': expected {_type_name(default)}, got {_type_name(value)} {shown}"
            )
    if "run_dir" not in cfg or OmegaConf.is_missing(cfg, "run_dir"):
        raise RecipeError(f"recipe '{recipe}' has no run_dir; it must include the 'base: default' defaults")
    try:
        OmegaConf.resolve(cfg)
    except OmegaConfBaseException as error:
        raise RecipeError(f"cannot resolve recipe '{recipe}': {_first_line(error)}") from None
    with open_dict(cfg):
        cfg.recipe_name = recipe
    return cfg


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _explain_compose_error(recipe: str, overrides: Sequence[str], defaults_ok: bool, error: BaseException) -> str:
    text = str(error)
    for override in overrides:
        key, _, plain = _override_key(override)
        if f"'{override}'" in text or f"'{key}'" in text or key.split(".")[-1] in text:
            if "not in struct" in text or "Could not override" in text:
                return f"unknown key '{key}' in recipe '{recipe}' (to add a new key write +{key}=...)"
            if "Could not delete" in text or "Could not append" in text:
                return f"bad override '{override}' for recipe '{recipe}': {_first_line(error)}"
    return f"bad override for recipe '{recipe}': {_first_line(error)}"


def _instantiate(node: Any, where: str) -> Any:
    from hydra.utils import instantiate

    try:
        obj = instantiate(node, _convert_="partial")
    except Exception as error:
        cause: BaseException = error
        while cause.__cause__ is not None:
            cause = cause.__cause__
        target = node.get("_target_", "?") if isinstance(node, DictConfig) else "?"
        raise RecipeError(f"cannot build '{where}' ({target}): {type(cause).__name__}: {_first_line(cause)}") from None
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
        raise RecipeError(f"'{key}' must be a mapping of name to object, got {_type_name(node)}")
    return {str(name): value for name, value in node.items() if value is not None}


def build(cfg: DictConfig) -> BuiltRecipe:
    """Instantiate every object of a composed recipe (nothing is trained or called).

    Args:
        cfg: a config from :func:`compose`.

    Returns:
        The objects, ready to run.

    Raises:
        RecipeError: naming the first node that cannot be built.

    Example:
        >>> built = build(compose("quickstart", ["trainer.max_epochs=1"], run_dir="/tmp/doc_build"))
        >>> type(built.model).__name__, type(built.trainer).__name__
        ('ClassifierModule', 'Trainer')
    """
    if cfg.get("task") is not None:
        task = _instantiate(cfg.task, "task")
        if not callable(task):
            raise RecipeError(f"'task' must build a callable (use _partial_: true), got {type(task).__name__}")
        return BuiltRecipe(config=cfg, task=task)
    for key in ("data", "model", "trainer"):
        if cfg.get(key) is None:
            raise RecipeError(f"recipe has neither 'task' nor '{key}'")
    datamodule = _instantiate(cfg.data, "data")
    model = _instantiate(cfg.model, "model")
    callbacks = [_instantiate(node, f"callbacks.{name}") for name, node in _named_nodes(cfg, "callbacks").items()]
    loggers = [_instantiate(node, f"logger.{name}") for name, node in _named_nodes(cfg, "logger").items()]
    trainer_node = OmegaConf.masked_copy(cfg, ["trainer"]).trainer
    from hydra.utils import instantiate

    try:
        trainer = instantiate(trainer_node, callbacks=callbacks, logger=loggers or False, _convert_="partial")
    except Exception as error:
        raise RecipeError(f"cannot build 'trainer': {type(error).__name__}: {_first_line(error)}") from None
    return BuiltRecipe(cfg, None, datamodule, model, callbacks, loggers, trainer)


def _has_test_loader(datamodule: Any) -> bool:
    from lightning.pytorch import LightningDataModule

    method = getattr(type(datamodule), "test_dataloader", None)
    return method is not None and method is not LightningDataModule.test_dataloader


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

    Rank zero writes ``config.yaml`` (resolved) and ``summary.json`` into ``cfg.run_dir``.

    Args:
        cfg: a config from :func:`compose`.

    Returns:
        The summary: final scalar metrics (or the task's figures), the run directory and the time taken.
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


def _run_in(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    import lightning.pytorch as pl

    if global_rank() == 0:
        run_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(cfg, run_dir / "config.yaml")
    pl.seed_everything(int(cfg.get("seed", 0)), workers=True, verbose=False)
    start = time.perf_counter()
    built = build(cfg)
    if built.task is not None:
        result = built.task()
        figures = dict(result) if isinstance(result, Mapping) else {"result": result}
        is_zero = global_rank() == 0
    else:
        trainer = built.trainer
        trainer.fit(built.model, datamodule=built.datamodule, ckpt_path=cfg.get("ckpt_path"))
        figures = _scalars(trainer.callback_metrics)
        if cfg.get("test_after_fit", True) and _has_test_loader(built.datamodule):
            trainer.test(built.model, datamodule=built.datamodule, verbose=False)
            figures.update(_scalars(trainer.callback_metrics))
        is_zero = trainer.is_global_zero
    summary = {"recipe": cfg.get("recipe_name", ""), "run_dir": str(run_dir), "seconds": time.perf_counter() - start}
    summary["metrics"] = figures
    if is_zero:
        run_dir.mkdir(parents=True, exist_ok=True)
        with open(run_dir / "summary.json", "w") as handle:
            json.dump(summary, handle, indent=2, default=str)
    summary["is_global_zero"] = is_zero
    return summary
