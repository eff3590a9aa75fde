"""``isa_edit_toy``: train a small in-context editor with dense attention, then fine-tune it with ISA active."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch

from lightning_icml26.data.isa_moving_shapes import MovingShapesEditDataModule
from lightning_icml26.modules.isa_edit import InContextEditor

__all__ = ["isa_edit_task"]


def _trainer(epochs: int, out_dir: Path, name: str) -> pl.Trainer:
    return pl.Trainer(
        max_epochs=epochs, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
        default_root_dir=str(out_dir / name), deterministic=True,
    )  # fmt: skip


def _val_loss(trainer: pl.Trainer, model: pl.LightningModule, dm: pl.LightningDataModule) -> float:
    return float(trainer.validate(model, datamodule=dm, verbose=False)[0]["val_loss"])


def isa_edit_task(
    out_dir: str = "outputs/isa_edit_toy",
    frames: int = 8,
    size: int = 16,
    n_train: int = 256,
    n_val: int = 64,
    hidden: int = 64,
    heads: int = 4,
    depth: int = 2,
    batch_size: int = 32,
    dense_epochs: int = 30,
    finetune_epochs: int = 10,
    lr: float = 3e-3,
    finetune_lr: float = 1e-3,
    isa: dict[str, Any] | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Dense training, ISA without fine-tuning, then ISA fine-tuning (gate learned); validation losses compared.

    Phase 1 trains :class:`InContextEditor` with dense attention for ``dense_epochs``. Phase 2 copies its
    weights into the same model with ISA cores (gates start closed, so the coarse path adds nothing yet) and
    validates it as it is (training-free ISA). Phase 3 fine-tunes that ISA model, gates included, for
    ``finetune_epochs``. For a fair comparison the dense model is also trained ``finetune_epochs`` further at
    ``finetune_lr`` (``dense_continued``). Writes ``isa_edit.json`` in ``out_dir``.

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

    Returns:
        ``{"val_loss": {"dense", "dense_continued", "isa_training_free", "isa_finetuned", "copy_source"},
        "ratio_finetuned_to_dense",
        "ratio_finetuned_to_dense_continued", "within_2_percent"}``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    isa_kwargs = {"block_size": (size // 4) ** 2} | dict(isa or {})
    pl.seed_everything(seed, workers=True)
    dm = MovingShapesEditDataModule(n_train, n_val, frames, size, batch_size, seed=seed)
    arch: dict[str, Any] = {"frames": frames, "size": size, "hidden": hidden, "heads": heads, "depth": depth}
    dense = InContextEditor(**arch, lr=lr)
    trainer = _trainer(dense_epochs, out, "dense")
    trainer.fit(dense, datamodule=dm)
    losses = {"dense": _val_loss(trainer, dense, dm)}

    sparse = InContextEditor(**arch, lr=finetune_lr, isa=isa_kwargs)
    missing, unexpected = sparse.load_state_dict(dense.state_dict(), strict=False)
    if unexpected or any(".gate." not in name for name in missing):
        raise RuntimeError(f"dense and ISA models disagree beyond the gates: {missing}, {unexpected}")
    losses["isa_training_free"] = _val_loss(_trainer(1, out, "isa_eval"), sparse, dm)
    trainer = _trainer(finetune_epochs, out, "isa_finetune")
    trainer.fit(sparse, datamodule=dm)
    losses["isa_finetuned"] = _val_loss(trainer, sparse, dm)

    continued = InContextEditor(**arch, lr=finetune_lr)
    continued.load_state_dict(dense.state_dict())
    trainer = _trainer(finetune_epochs, out, "dense_continued")
    trainer.fit(continued, datamodule=dm)
    losses["dense_continued"] = _val_loss(trainer, continued, dm)

    dm.setup("validate")
    assert dm.val_set is not None
    source, _, target = dm.val_set.tensors
    losses["copy_source"] = float(torch.nn.functional.mse_loss(source, target))  # the no-edit baseline
    ratio = losses["isa_finetuned"] / losses["dense"]
    result = {
        "val_loss": losses,
        "ratio_finetuned_to_dense": ratio,
        "ratio_finetuned_to_dense_continued": losses["isa_finetuned"] / losses["dense_continued"],
        "within_2_percent": bool(ratio <= 1.02),
        "isa": isa_kwargs,
        "threads": torch.get_num_threads(),
    }
    (out / "isa_edit.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return result
