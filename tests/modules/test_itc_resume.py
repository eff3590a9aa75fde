"""TokenWorldModel (ITC) on the grid world: stopping after 2 epochs and resuming to 3 equals an uninterrupted run.

The grid-world loader shuffles with an epoch-seeded sampler; with torch's global RNG the third epoch's batch
order of a resumed run differed and so did the weights (about 1e-3).
"""

from __future__ import annotations

from pathlib import Path

import torch
from lightning.pytorch import Callback, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint

from lightning_icml26.data import GridWorldDataModule
from lightning_icml26.modules.itc import TokenWorldModel


def _make() -> tuple[TokenWorldModel, GridWorldDataModule]:
    torch.manual_seed(0)
    model = TokenWorldModel(vocab_size=6, height=8, width=8, num_actions=5, d_model=16, num_heads=2, num_layers=1)
    dm = GridWorldDataModule(num_train_episodes=4, num_val_episodes=2, num_test_episodes=2, episode_length=6,
                             test_horizon=2, batch_size=4)  # fmt: skip
    return model, dm


def _trainer(root: Path, epochs: int, save: bool) -> Trainer:
    callbacks: list[Callback] = [ModelCheckpoint(dirpath=root, save_last=True)] if save else []
    return Trainer(max_epochs=epochs, default_root_dir=root, logger=False, enable_checkpointing=save,
                   callbacks=callbacks, enable_progress_bar=False, enable_model_summary=False,
                   num_sanity_val_steps=0, deterministic=True)  # fmt: skip


def test_stop_and_resume_equals_uninterrupted(tmp_path: Path) -> None:
    full, dm = _make()
    _trainer(tmp_path / "a", 3, False).fit(full, datamodule=dm)
    part, dm = _make()
    _trainer(tmp_path / "b", 2, True).fit(part, datamodule=dm)
    resumed, dm = _make()
    _trainer(tmp_path / "c", 3, False).fit(resumed, datamodule=dm, ckpt_path=str(tmp_path / "b" / "last.ckpt"))
    assert resumed.global_step == full.global_step > part.global_step
    for (name, a), b in zip(full.state_dict().items(), resumed.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=name)
    assert not torch.allclose(part.head.weight, full.head.weight)  # the third epoch did change the weights
