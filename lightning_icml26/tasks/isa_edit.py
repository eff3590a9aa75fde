"""``isa_edit_toy``: train a small in-context editor with dense attention, then fine-tune it with ISA active."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch

from lightning_icml26.data.isa_moving_shapes import MovingShapesEditDataModule
from lightning_icml26.modules.isa_edit import InContextEditor
from lightning_icml26.tasks._config import TaskConfig

__all__ = ["IsaEditConfig", "isa_edit_task"]


def _trainer(epochs: int, out_dir: Path, name: str) -> pl.Trainer:
    return pl.Trainer(
        max_epochs=epochs, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
        default_root_dir=str(out_dir / name), deterministic=True,
    )  # fmt: skip


def _val_loss(trainer: pl.Trainer, model: pl.LightningModule, dm: pl.LightningDataModule) -> float:
    return float(trainer.validate(model, datamodule=dm, verbose=False)[0]["val_loss"])


@dataclass(frozen=True)
class IsaEditConfig(TaskConfig):
    """Settings of :func:`isa_edit_task` (the ``isa_edit_toy`` recipe); ``run()`` runs it.

    Args:
        out_dir: folder of the result file.
        frames: frames per clip.
        size: image size in pixels (patches of 4: 16 tokens per frame at 16 px).
        n_train: training clips.
        n_val: validation clips.
        hidden: model width.
        heads: attention heads.
        depth: transformer blocks.
        batch_size: batch size.
        dense_epochs: epochs of dense training.
        finetune_epochs: epochs of ISA fine-tuning (and of the continued dense run).
        lr: learning rate of dense training.
        finetune_lr: learning rate of both fine-tuning runs.
        isa: :class:`~lightning_icml26.ops.attention.ISAAttention` arguments; default one frame per block
            (``block_size = (size / 4)^2``) and the paper's ratios.
        seed: seed of data, initialisation and shuffling.

    Example:
        >>> IsaEditConfig(size=8).isa_kwargs()["block_size"]
        4
        >>> IsaEditConfig(size=10)
        Traceback (most recent call last):
        ...
        ValueError: size must be a positive multiple of 4 (patches of 4 px), got 10
    """

    out_dir: str | Path = "outputs/isa_edit_toy"
    frames: int = 8
    size: int = 16
    n_train: int = 256
    n_val: int = 64
    hidden: int = 64
    heads: int = 4
    depth: int = 2
    batch_size: int = 32
    dense_epochs: int = 30
    finetune_epochs: int = 10
    lr: float = 3e-3
    finetune_lr: float = 1e-3
    isa: dict[str, Any] | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size <= 0 or self.size % 4:
            raise ValueError(f"size must be a positive multiple of 4 (patches of 4 px), got {self.size!r}")

    def isa_kwargs(self) -> dict[str, Any]:
        """The ISA arguments: ``isa`` over the default of one frame per block."""
        return {"block_size": (self.size // 4) ** 2} | dict(self.isa or {})

    def run(self) -> dict[str, Any]:
        """Run :func:`isa_edit_task` with these settings."""
        return isa_edit_task(self)


def _isa_phases(config: IsaEditConfig, dense: InContextEditor, dm: MovingShapesEditDataModule) -> dict[str, float]:
    """Training-free ISA, ISA fine-tuning and continued dense training from the dense weights: val losses."""
    out, losses = Path(config.out_dir), {}
    arch = _arch(config)
    sparse = InContextEditor(**arch, lr=config.finetune_lr, isa=config.isa_kwargs())
    missing, unexpected = sparse.load_state_dict(dense.state_dict(), strict=False)
    if unexpected or any(".gate." not in name for name in missing):
        raise RuntimeError(f"dense and ISA models disagree beyond the gates: {missing}, {unexpected}")
    losses["isa_training_free"] = _val_loss(_trainer(1, out, "isa_eval"), sparse, dm)
    trainer = _trainer(config.finetune_epochs, out, "isa_finetune")
    trainer.fit(sparse, datamodule=dm)
    losses["isa_finetuned"] = _val_loss(trainer, sparse, dm)
    continued = InContextEditor(**arch, lr=config.finetune_lr)
    continued.load_state_dict(dense.state_dict())
    trainer = _trainer(config.finetune_epochs, out, "dense_continued")
    trainer.fit(continued, datamodule=dm)
    losses["dense_continued"] = _val_loss(trainer, continued, dm)
    return losses


def _arch(config: IsaEditConfig) -> dict[str, Any]:
    keys = ("frames", "size", "hidden", "heads", "depth")
    return {key: getattr(config, key) for key in keys}


def isa_edit_task(config: IsaEditConfig) -> dict[str, Any]:
    """Dense training, ISA without fine-tuning, then ISA fine-tuning (gate learned); validation losses compared.

    Phase 1 trains :class:`InContextEditor` with dense attention for ``dense_epochs``. Phase 2 copies its
    weights into the same model with ISA cores (gates start closed, so the coarse path adds nothing yet) and
    validates it as it is (training-free ISA). Phase 3 fine-tunes that ISA model, gates included, for
    ``finetune_epochs``. For a fair comparison the dense model is also trained ``finetune_epochs`` further at
    ``finetune_lr`` (``dense_continued``). Writes ``isa_edit.json`` in ``out_dir``.

    Args:
        config: the settings (:class:`IsaEditConfig`).

    Returns:
        ``{"val_loss": {"dense", "dense_continued", "isa_training_free", "isa_finetuned", "copy_source"},
        "ratio_finetuned_to_dense", "ratio_finetuned_to_dense_continued", "within_2_percent"}``.

    Example:
        >>> import tempfile
        >>> config = IsaEditConfig(tempfile.mkdtemp(), frames=2, size=8, n_train=8, n_val=4, hidden=8, heads=2,
        ...     depth=1, batch_size=4, dense_epochs=1, finetune_epochs=1, isa={"context_keep": 0.5})
        >>> result = isa_edit_task(config)  # prints the result as JSON
        {...}
        >>> sorted(result["val_loss"])
        ['copy_source', 'dense', 'dense_continued', 'isa_finetuned', 'isa_training_free']
    """
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pl.seed_everything(config.seed, workers=True)
    c = config
    dm = MovingShapesEditDataModule(c.n_train, c.n_val, c.frames, c.size, c.batch_size, seed=c.seed)
    dense = InContextEditor(**_arch(config), lr=config.lr)
    trainer = _trainer(config.dense_epochs, out, "dense")
    trainer.fit(dense, datamodule=dm)
    losses = {"dense": _val_loss(trainer, dense, dm), **_isa_phases(config, dense, dm)}
    dm.setup("validate")
    if dm.val_set is None:
        raise RuntimeError("the data module built no validation set")
    source, _, target = dm.val_set.tensors
    losses["copy_source"] = float(torch.nn.functional.mse_loss(source, target))  # the no-edit baseline
    ratio = losses["isa_finetuned"] / losses["dense"]
    result = {
        "val_loss": losses,
        "ratio_finetuned_to_dense": ratio,
        "ratio_finetuned_to_dense_continued": losses["isa_finetuned"] / losses["dense_continued"],
        "within_2_percent": bool(ratio <= 1.02),
        "isa": config.isa_kwargs(),
        "threads": torch.get_num_threads(),
    }
    (out / "isa_edit.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return result
