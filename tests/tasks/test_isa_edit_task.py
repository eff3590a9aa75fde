"""isa_edit_task on a tiny configuration: every phase runs, the losses are consistent, the file is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from lightning_icml26.data import make_edit_clips
from lightning_icml26.tasks import IsaEditConfig, isa_edit_task


def test_tiny_run(tmp_path: Path) -> None:
    config = IsaEditConfig(out_dir=str(tmp_path), frames=2, size=8, n_train=16, n_val=8, hidden=16, heads=2,
                           depth=1, batch_size=8, dense_epochs=2, finetune_epochs=1,
                           isa={"block_size": 4, "context_keep": 0.5})  # fmt: skip
    result = isa_edit_task(config)
    losses = result["val_loss"]
    assert set(losses) == {"dense", "isa_training_free", "isa_finetuned", "dense_continued", "copy_source"}
    assert all(v > 0 for v in losses.values())
    source, _, target = make_edit_clips(8, frames=2, size=8, seed=1)  # the validation split (seed + 1)
    assert losses["copy_source"] == torch.nn.functional.mse_loss(source, target).item()
    assert result["ratio_finetuned_to_dense"] == losses["isa_finetuned"] / losses["dense"]
    assert json.loads((tmp_path / "isa_edit.json").read_text())["val_loss"] == losses
    assert config.run()["val_loss"] == losses  # run() is the same task, seeded the same


def test_bad_size_is_refused() -> None:
    with pytest.raises(ValueError, match="size must be a positive multiple of 4"):
        IsaEditConfig(size=6)
