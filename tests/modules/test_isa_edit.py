"""InContextEditor: patchify round trip, dense/ISA cores, stop-and-resume equals an uninterrupted run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from lightning.pytorch import Callback, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint

from lightning_icml26.data import MovingShapesEditDataModule, make_edit_clips
from lightning_icml26.modules import InContextEditor
from lightning_icml26.modules.isa_edit import patchify, unpatchify
from lightning_icml26.ops.attention import ISAAttention, SDPAAttention

ARCH: dict[str, Any] = {"frames": 2, "size": 8, "patch": 4, "hidden": 16, "heads": 2, "depth": 1}
ISA = {"block_size": 4, "context_keep": 0.5}


def test_patchify_round_trip_and_token_order() -> None:
    clip = torch.randn(2, 3, 3, 8, 8)
    tokens = patchify(clip, 4)
    assert tokens.shape == (2, 12, 48)
    torch.testing.assert_close(unpatchify(tokens, 3, 3, 4), clip)
    # token 5 = frame 1, patch (0, 1): pixels rows 0-3, columns 4-7 of frame 1
    torch.testing.assert_close(tokens[:, 5].view(2, 3, 4, 4), clip[:, 1, :, 0:4, 4:8])


def test_edit_clips_differ_only_where_the_square_is_recoloured() -> None:
    s, c, t = make_edit_clips(6, frames=3, size=8, side=2, seed=1)
    changed = (s != t).any(2)  # (n, frames, h, w)
    shown = (c != 0).any(2)
    assert changed.any()
    assert bool((changed <= shown).all())  # every changed pixel is where the context shows the new colour
    with pytest.raises(ValueError, match="side"):
        make_edit_clips(2, size=4, side=4)


def test_isa_cores_and_gate_start_closed() -> None:
    torch.manual_seed(0)
    dense = InContextEditor(**ARCH)
    sparse = InContextEditor(**ARCH, isa=ISA)
    assert isinstance(dense.blocks[0].core, SDPAAttention)
    assert isinstance(sparse.blocks[0].core, ISAAttention)
    missing, unexpected = sparse.load_state_dict(dense.state_dict(), strict=False)
    assert not unexpected
    assert missing
    assert all(".gate." in m for m in missing)
    s, c, _ = make_edit_clips(2, frames=2, size=8, side=2)
    sparse_out, dense_out = sparse(s, c), dense(s, c)
    assert sparse_out.shape == dense_out.shape == s.shape
    assert (sparse_out - dense_out).abs().max() > 1e-6  # ISA drops half of the context here
    with pytest.raises(ValueError, match="patch"):
        InContextEditor(size=10, patch=4)


def _trainer(root: Path, epochs: int, save: bool) -> Trainer:
    callbacks: list[Callback] = [ModelCheckpoint(dirpath=root, save_last=True)] if save else []
    return Trainer(max_epochs=epochs, default_root_dir=root, logger=False, enable_checkpointing=save,
                   callbacks=callbacks, enable_progress_bar=False, enable_model_summary=False,
                   num_sanity_val_steps=0, deterministic=True)  # fmt: skip


def test_stop_and_resume_equals_uninterrupted(tmp_path: Path) -> None:
    def make() -> tuple[InContextEditor, MovingShapesEditDataModule]:
        torch.manual_seed(0)
        return InContextEditor(**ARCH, isa=ISA), MovingShapesEditDataModule(8, 4, frames=2, size=8, batch_size=4)

    full, dm = make()
    _trainer(tmp_path / "a", 3, False).fit(full, datamodule=dm)
    part, dm = make()
    _trainer(tmp_path / "b", 2, True).fit(part, datamodule=dm)
    resumed, dm = make()
    _trainer(tmp_path / "c", 3, False).fit(resumed, datamodule=dm, ckpt_path=str(tmp_path / "b" / "last.ckpt"))
    for (name, a), b in zip(full.state_dict().items(), resumed.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, msg=name)
    assert not torch.allclose(part.head.weight, full.head.weight)
