"""What ``--dry-run`` does after building a recipe's objects: the steps a real run would take first.

A dry run builds the objects (:func:`lightning_icml26._recipes.build`) and then rehearses the start of
``Trainer.fit`` without training: the datamodule's ``prepare_data`` / ``setup`` and one batch of every loader,
the model's ``configure_optimizers`` (optimizers and schedulers, with the trainer attached as Lightning would
attach it). Anything that would fail in the first seconds of the real run fails here, with the same one-line
error. The strategy is built with the trainer but not launched (no processes are spawned).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import lightning.pytorch as pl
import torch

from lightning_icml26._recipes import BuiltRecipe, RecipeError, describe_root_cause

__all__ = ["rehearse"]


def _shape(batch: Any) -> str:
    if isinstance(batch, torch.Tensor):
        return f"{tuple(batch.shape)} {str(batch.dtype).removeprefix('torch.')}"
    if isinstance(batch, list | tuple):
        return "(" + ", ".join(_shape(item) for item in batch) + ")"
    if isinstance(batch, dict):
        return "{" + ", ".join(f"{k}: {_shape(v)}" for k, v in batch.items()) + "}"
    return type(batch).__name__


def _step(what: str, action: Any) -> Any:
    try:
        return action()
    except Exception as error:
        raise RecipeError(f"dry run: {what} failed: {describe_root_cause(error)}") from None


def _has_loader(datamodule: Any, name: str) -> bool:
    method = getattr(type(datamodule), name, None)
    return method is not None and method is not getattr(pl.LightningDataModule, name)


def _optimizers(configured: Any) -> tuple[list[Any], list[Any]]:
    if configured is None:
        return [], []
    if isinstance(configured, torch.optim.Optimizer):
        return [configured], []
    if isinstance(configured, dict):
        scheduler = configured.get("lr_scheduler")
        if isinstance(scheduler, dict):
            scheduler = scheduler.get("scheduler")
        return [configured["optimizer"]], [scheduler] if scheduler is not None else []
    if isinstance(configured, Iterable):
        optimizers: list[Any] = []
        schedulers: list[Any] = []
        for item in configured:
            more_opt, more_sched = _optimizers(item) if not isinstance(item, list) else (item, [])
            optimizers += more_opt
            schedulers += more_sched
        return optimizers, schedulers
    return [configured], []


def rehearse(built: BuiltRecipe) -> list[str]:
    """Run the first steps of a real run on the built objects and describe each; nothing is trained.

    Args:
        built: the objects of a composed recipe.

    Returns:
        One line per rehearsed step, for the dry run's report.

    Raises:
        RecipeError: naming the step that fails and the root cause.
    """
    if built.task is not None:
        return [f"task: {getattr(built.task, 'func', built.task)!r} (built; a task recipe runs nothing more)"]
    report = []
    datamodule, model, trainer = built.datamodule, built.model, built.trainer
    _step("datamodule.prepare_data()", datamodule.prepare_data)
    _step("datamodule.setup('fit')", lambda: datamodule.setup("fit"))
    for name in ("train_dataloader", "val_dataloader", "test_dataloader"):
        if name == "train_dataloader" or _has_loader(datamodule, name):
            batch = _step(
                f"the first batch of datamodule.{name}()", lambda n=name: next(iter(getattr(datamodule, n)()))
            )
            report.append(f"data: {name} -> first batch {_shape(batch)}")
    model.trainer = trainer
    try:
        configured = _step("model.configure_optimizers()", model.configure_optimizers)
    finally:
        model.trainer = None
    optimizers, schedulers = _optimizers(configured)
    names = ", ".join(type(o).__name__ for o in optimizers) or "none"
    report.append(f"model: {type(model).__name__}, configure_optimizers -> optimizers [{names}]")
    if schedulers:
        report.append(f"model: schedulers [{', '.join(type(s).__name__ for s in schedulers)}]")
    callbacks = ", ".join(type(c).__name__ for c in built.callbacks or []) or "none"
    report.append(f"callbacks: {callbacks}")
    report.append(f"strategy: {type(trainer.strategy).__name__} (built, not launched)")
    return report
