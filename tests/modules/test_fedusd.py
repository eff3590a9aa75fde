"""FedUSD modules: distiller gradients and errors, augmentation, teacher resampling, server, resume."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from lightning.pytorch import Callback, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint

from lightning_icml26.modules.fedusd import (
    LOSSES,
    AggregationFreeServer,
    ConvNet,
    FedAvgClient,
    SyntheticSetDistiller,
    average_state_dicts,
    perturbed_copy,
    reinitialised_copy,
    siamese_augment,
    soft_cross_entropy,
)


def _client(n_per_class: int = 6, classes: tuple[int, ...] = (1, 4)) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    y = torch.tensor(classes).repeat_interleave(n_per_class)
    x = torch.randn(len(y), 1, 8, 8, generator=gen) + y.view(-1, 1, 1, 1).float() * 0.3
    return x, y


@pytest.mark.parametrize("loss", LOSSES)
def test_gradients_reach_the_pixels(loss: str) -> None:
    torch.manual_seed(0)
    x, y = _client()
    soft = torch.full((10, 10), 0.1)
    d = SyntheticSetDistiller(ConvNet(1, 10, 8), x, y, ipc=3, loss=loss, real_batch=4, global_soft_labels=soft, k=2)
    assert d.classes == [1, 4]
    assert torch.equal(d.synthetic_labels, torch.tensor([1, 1, 1, 4, 4, 4]))
    before = d.synthetic.detach().clone()
    value = d.matching_loss(*d.sample_real_batch())
    value.backward()
    assert d.synthetic.grad is not None
    assert float(d.synthetic.grad.abs().sum()) > 0
    assert all(p.grad is None for p in d.teacher.parameters())
    out = d.run(steps=2)
    assert not torch.equal(out["images"], before)
    assert out["num_bytes"] == 6 * 64 * 4


def test_real_init_takes_client_images_and_noise_init_matches_scale() -> None:
    x, y = _client()
    d = SyntheticSetDistiller(ConvNet(1, 10, 8), x, y, ipc=2)
    rows = {tuple(r.flatten().tolist()) for r in x}
    assert all(tuple(s.flatten().tolist()) in rows for s in d.synthetic.detach())
    n = SyntheticSetDistiller(ConvNet(1, 10, 8), x, y, ipc=2, init="noise")
    assert float(n.synthetic.detach().abs().max()) == pytest.approx(float(x.abs().max()), rel=1e-6)


def test_distiller_errors_name_the_argument() -> None:
    x, y = _client(n_per_class=3)
    net = ConvNet(1, 10, 8)
    with pytest.raises(ValueError, match="ipc=4 exceeds the client's 3 real images of class 1"):
        SyntheticSetDistiller(net, x, y, ipc=4, classes=[1])
    with pytest.raises(ValueError, match="no class to distil"):
        SyntheticSetDistiller(net, x, y, ipc=4)
    with pytest.raises(ValueError, match="k must be"):
        SyntheticSetDistiller(net, x, y, ipc=2, loss="hob_projection", k=3)
    with pytest.raises(ValueError, match="loss must be one of"):
        SyntheticSetDistiller(net, x, y, ipc=2, loss="mmd")
    with pytest.raises(ValueError, match="images must be"):
        SyntheticSetDistiller(net, x[:, 0], y, ipc=2)
    with pytest.raises(TypeError, match="embed"):
        SyntheticSetDistiller(torch.nn.Linear(2, 2), x, y, ipc=2)


def test_siamese_augment_shares_the_transform_and_is_differentiable() -> None:
    x = torch.randn(4, 1, 8, 8, requires_grad=True)
    a, b = siamese_augment(x, x[2:].detach(), generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(a[2:].detach(), b)
    assert not torch.allclose(a.detach(), x.detach())
    a.sum().backward()
    assert x.grad is not None
    assert float(x.grad.abs().sum()) > 0
    with pytest.raises(ValueError, match="batch 1 must have shape"):
        siamese_augment(x, torch.randn(2, 1, 4, 4), generator=torch.Generator())


def test_teacher_resampling() -> None:
    net = ConvNet(1, 10, 8)
    moved = perturbed_copy(net, 5.0, torch.Generator().manual_seed(1))
    shift = torch.cat([(p - q).detach().flatten() for p, q in zip(moved.parameters(), net.parameters(), strict=True)])
    assert float(shift.norm()) == pytest.approx(5.0, rel=1e-5)
    assert all(not p.requires_grad for p in moved.parameters())
    fresh = reinitialised_copy(net, torch.Generator().manual_seed(2))
    assert not torch.equal(next(fresh.parameters()), next(net.parameters()))


def test_soft_cross_entropy_and_average() -> None:
    logits = torch.randn(5, 3)
    targets = torch.softmax(torch.randn(5, 3), 1)
    expected = -(targets * torch.log_softmax(logits, 1)).sum(1).mean()
    torch.testing.assert_close(soft_cross_entropy(logits, targets), expected)
    torch.testing.assert_close(
        soft_cross_entropy(logits, torch.eye(3)[[0, 1, 2, 0, 1]]),
        torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1, 2, 0, 1])),
    )
    a = {"w": torch.tensor([1.0, 2.0]), "n": torch.tensor(3)}
    b = {"w": torch.tensor([4.0, 8.0]), "n": torch.tensor(5)}
    avg = average_state_dicts([a, b], [1.0, 2.0])
    torch.testing.assert_close(avg["w"], torch.tensor([3.0, 6.0]))
    assert int(avg["n"]) == 3


def _trainer(tmp: Path, epochs: int, checkpoint: bool) -> Trainer:
    callbacks: list[Callback] = [ModelCheckpoint(dirpath=tmp, filename="last")] if checkpoint else []
    return Trainer(
        max_epochs=epochs,
        logger=False,
        enable_checkpointing=checkpoint,
        callbacks=callbacks,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )


def test_distiller_stop_and_resume_equals_uninterrupted(tmp_path: Path) -> None:
    x, y = _client(n_per_class=8)

    def make() -> SyntheticSetDistiller:
        torch.manual_seed(0)
        return SyntheticSetDistiller(ConvNet(1, 10, 8), x, y, ipc=2, real_batch=4, seed=5)

    full = make()
    _trainer(tmp_path / "a", 3, False).fit(full)
    part = make()
    _trainer(tmp_path / "b", 2, True).fit(part)
    resumed = make()
    _trainer(tmp_path / "c", 3, False).fit(resumed, ckpt_path=str(tmp_path / "b" / "last.ckpt"))
    torch.testing.assert_close(resumed.synthetic.detach(), full.synthetic.detach())
    assert not torch.allclose(part.synthetic.detach(), full.synthetic.detach())


def test_server_trains_on_its_pool_only() -> None:
    torch.manual_seed(0)
    server = AggregationFreeServer(ConvNet(1, 10, 8), steps_per_round=2, pool_batch_size=4)
    assert server.training_step(0, 0) is None
    before = copy.deepcopy(server.net.state_dict())
    server.set_pool(torch.randn(6, 1, 8, 8), torch.eye(10)[torch.arange(6)])
    loss = server.training_step(0, 0)
    assert loss is not None
    loss.backward()
    assert all(torch.equal(v, server.net.state_dict()[k]) for k, v in before.items())
    with pytest.raises(ValueError, match="disagree"):
        server.set_pool(torch.randn(6, 1, 8, 8), torch.eye(10)[:5])


def test_fedavg_client_stop_and_resume_equals_uninterrupted(tmp_path: Path) -> None:
    x, y = _client(n_per_class=8)

    def make() -> FedAvgClient:
        torch.manual_seed(0)
        return FedAvgClient(ConvNet(1, 10, 8), x, y, batch_size=4, lr=0.05, seed=3)

    full = make()
    _trainer(tmp_path / "a", 3, False).fit(full)
    part = make()
    _trainer(tmp_path / "b", 2, True).fit(part)
    resumed = make()
    _trainer(tmp_path / "c", 3, False).fit(resumed, ckpt_path=str(tmp_path / "b" / "last.ckpt"))
    for p, q in zip(resumed.net.parameters(), full.net.parameters(), strict=True):
        torch.testing.assert_close(p, q)
    assert not torch.allclose(next(part.net.parameters()), next(full.net.parameters()))
