"""FedRoundCallback: FedAvg with one client is centralised SGD; stop-and-resume equals an uninterrupted run."""

from __future__ import annotations

import copy
from functools import partial
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from lightning.pytorch import Trainer
from lightning.pytorch.callbacks import ModelCheckpoint

from lightning_icml26.callbacks import FedRoundCallback
from lightning_icml26.data import DirichletPartitionDataModule
from lightning_icml26.modules.fedusd import AggregationFreeServer, ConvNet, FedAvgClient, SyntheticSetDistiller


def _trainer(epochs: int, checkpoint_dir: Path | None = None, callbacks: list | None = None) -> Trainer:
    cbs = list(callbacks or [])
    if checkpoint_dir is not None:
        cbs.append(ModelCheckpoint(dirpath=checkpoint_dir, filename="last"))
    return Trainer(
        max_epochs=epochs,
        logger=False,
        enable_checkpointing=checkpoint_dir is not None,
        callbacks=cbs,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        limit_val_batches=1,
    )


def test_fedavg_with_one_client_equals_centralised_sgd() -> None:
    dm = DirichletPartitionDataModule("digits", num_clients=1, alpha=0.5, num_train=120, server_steps=1)
    dm.setup()
    torch.manual_seed(0)
    server = AggregationFreeServer(ConvNet(1, 10, 8), steps_per_round=1)
    reference = copy.deepcopy(server.net)
    client = partial(FedAvgClient, local_epochs=3, batch_size=10_000, lr=0.05, momentum=0.9)
    _trainer(2, callbacks=[FedRoundCallback(client)]).fit(server, datamodule=dm)
    # the same 6 full-batch SGD steps (2 rounds x 3 local epochs); momentum restarts with each round
    x, y = dm.client_data(0)
    for _ in range(2):
        opt = torch.optim.SGD(reference.parameters(), lr=0.05, momentum=0.9)
        for _ in range(3):
            opt.zero_grad()
            F.cross_entropy(reference(x), y).backward()
            opt.step()
    for (name, p), q in zip(server.net.named_parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(p, q, msg=name)


def _run(tmp: Path, epochs: int, resume_from: Path | None, checkpoint: Path | None) -> tuple:
    dm = DirichletPartitionDataModule(
        "digits", num_clients=3, alpha=0.5, num_train=150, min_client_size=10, server_steps=3
    )
    torch.manual_seed(0)
    server = AggregationFreeServer(ConvNet(1, 10, 8), steps_per_round=3, pool_batch_size=8, seed=1)
    cb = FedRoundCallback(partial(SyntheticSetDistiller, ipc=2, real_batch=4), distill_steps=2, window=2, seed=2)
    trainer = _trainer(epochs, checkpoint, [cb])
    trainer.fit(server, datamodule=dm, ckpt_path=str(resume_from) if resume_from else None)
    return server, cb


def test_stop_and_resume_equals_uninterrupted(tmp_path: Path) -> None:
    full, full_cb = _run(tmp_path, 3, None, None)
    stopped, _ = _run(tmp_path, 2, None, tmp_path / "ckpt")
    assert not torch.allclose(stopped.net.classifier.weight, full.net.classifier.weight)
    resumed, resumed_cb = _run(tmp_path, 3, tmp_path / "ckpt" / "last.ckpt", None)
    for p, q in zip(resumed.net.parameters(), full.net.parameters(), strict=True):
        torch.testing.assert_close(p, q)
    assert resumed_cb.round == full_cb.round == 3
    assert resumed_cb.history == full_cb.history
    assert len(full_cb.sets) == 2  # the window keeps the last two rounds
    torch.testing.assert_close(resumed.pool_images, full.pool_images)
    # bytes: every client sends ipc images per class it distils, float32
    for entry in full_cb.history:
        assert all(b % (2 * 64 * 4) == 0 and b > 0 for b in entry["bytes"])


def test_callback_errors() -> None:
    with pytest.raises(TypeError, match="client must be a callable"):
        FedRoundCallback(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="participation must be in"):
        FedRoundCallback(FedAvgClient, participation=0.0)
    with pytest.raises(ValueError, match="window must be"):
        FedRoundCallback(FedAvgClient, window=0)
