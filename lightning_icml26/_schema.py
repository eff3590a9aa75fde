"""Structured configs (dataclasses) of the blocks every recipe shares, registered in Hydra's ConfigStore.

Hydra and OmegaConf check overrides against these types while composing: ``trainer.max_epochs=ten`` fails
because :class:`TrainerConfig` declares ``max_epochs`` an optional integer, and ``trainer.no_such_key=1``
fails because the node is closed to keys it does not declare. The recipe files (``recipes/*.yaml``)
extend the schema through their defaults list (``_base.yaml`` starts with ``- recipe_schema``).

:class:`TrainerConfig` lists every argument of ``lightning.pytorch.Trainer`` except ``callbacks`` and
``logger`` (the runner builds those from the ``callbacks`` and ``logger`` nodes), with Lightning's own
defaults; fields whose Lightning type is a union OmegaConf cannot express (``devices``, ``precision``,
``limit_*_batches``, ...) are typed ``Any`` and left for Lightning to check. The module imports neither
Lightning nor anything heavy: listing recipes stays fast.

Example:
    >>> from omegaconf import OmegaConf
    >>> cfg = OmegaConf.structured(TrainerConfig)
    >>> cfg.max_epochs = 3
    >>> cfg.max_epochs = "three"
    Traceback (most recent call last):
    ...
    omegaconf.errors.ValidationError: Value 'three' of type 'str' could not be converted to Integer
    ...
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from hydra.core.config_store import ConfigStore

__all__ = ["RecipeConfig", "TrainerConfig", "register_configs"]

# OmegaConf reads these annotations at run time and does not accept PEP 604 unions (``int | None``) on
# Python 3.10, so the dataclasses below use ``Optional``.


@dataclass
class TrainerConfig:
    """Every ``lightning.pytorch.Trainer`` argument a recipe may set (Lightning's defaults)."""

    _target_: str = "lightning.pytorch.Trainer"
    accelerator: Any = "auto"
    strategy: Any = "auto"
    devices: Any = "auto"
    num_nodes: int = 1
    precision: Any = None
    fast_dev_run: Any = False
    max_epochs: Optional[int] = None  # noqa: UP045
    min_epochs: Optional[int] = None  # noqa: UP045
    max_steps: int = -1
    min_steps: Optional[int] = None  # noqa: UP045
    max_time: Any = None
    limit_train_batches: Any = None
    limit_val_batches: Any = None
    limit_test_batches: Any = None
    limit_predict_batches: Any = None
    overfit_batches: Any = 0.0
    val_check_interval: Any = None
    check_val_every_n_epoch: Optional[int] = 1  # noqa: UP045
    num_sanity_val_steps: Optional[int] = None  # noqa: UP045
    log_every_n_steps: Optional[int] = None  # noqa: UP045
    enable_checkpointing: Optional[bool] = None  # noqa: UP045
    enable_progress_bar: Optional[bool] = None  # noqa: UP045
    enable_model_summary: Optional[bool] = None  # noqa: UP045
    accumulate_grad_batches: int = 1
    gradient_clip_val: Optional[float] = None  # noqa: UP045
    gradient_clip_algorithm: Optional[str] = None  # noqa: UP045
    deterministic: Any = None
    benchmark: Optional[bool] = None  # noqa: UP045
    inference_mode: bool = True
    use_distributed_sampler: bool = True
    profiler: Any = None
    detect_anomaly: bool = False
    barebones: bool = False
    plugins: Any = None
    sync_batchnorm: bool = False
    reload_dataloaders_every_n_epochs: int = 0
    default_root_dir: Optional[str] = None  # noqa: UP045
    enable_autolog_hparams: bool = True
    model_registry: Optional[str] = None  # noqa: UP045


@dataclass
class RecipeConfig:
    """The top level of every recipe: run settings, the trainer, and the object nodes.

    Attributes:
        description: one line shown by ``icml26 list``.
        recipe: the recipe's name (Hydra's config name when launched by the CLI).
        seed: passed to ``seed_everything`` before anything is built.
        run_dir: the run's folder: Hydra's output directory of the job (one per job in a multirun).
        ckpt_path: checkpoint to resume ``Trainer.fit`` from (``icml26 resume`` sets it).
        test_after_fit: run ``Trainer.test`` after fitting when the datamodule has a test loader.
        trainer: the ``Trainer`` arguments (:class:`TrainerConfig`).
        data: the LightningDataModule node.
        model: the LightningModule node.
        callbacks: name -> callback node (``null`` disables one).
        logger: name -> logger node.
        strategy: an optional strategy node (the ``strategy`` group wires it into ``trainer.strategy``).
        task: instead of data/model/trainer, a ``_partial_`` callable returning a dict of figures.
        smoke: set by ``trainer=smoke``: the run is a smoke test, ``smoke_settings`` are merged over the recipe.
        smoke_settings: what a smoke test changes, merged over the composed recipe (after the recipe's own
            values, so that they win): ``trainer/smoke.yaml`` gives the two-batch trainer, and a recipe adds
            its own (a task's sizes, a callback's cadence).
    """

    description: str = ""
    recipe: str = "${hydra:job.config_name}"
    seed: int = 0
    run_dir: str = "${hydra:runtime.output_dir}"
    ckpt_path: Optional[str] = None  # noqa: UP045
    test_after_fit: bool = True
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    data: Any = None
    model: Any = None
    callbacks: dict[str, Any] = field(default_factory=dict)
    logger: dict[str, Any] = field(default_factory=dict)
    strategy: Any = None
    task: Any = None
    smoke: bool = False
    smoke_settings: Any = None


def register_configs() -> None:
    """Register :class:`RecipeConfig` as ``recipe_schema`` in Hydra's ConfigStore (idempotent).

    Example:
        >>> register_configs()
        >>> "recipe_schema.yaml" in ConfigStore.instance().list("")
        True
    """
    ConfigStore.instance().store(name="recipe_schema", node=RecipeConfig)


register_configs()
