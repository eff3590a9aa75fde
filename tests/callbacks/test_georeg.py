"""GeoReg: the penalty against dense references, the skip rule, and the callback's exact gradients."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from lightning.pytorch import Callback, LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26.callbacks import GeoReg
from lightning_icml26.ops.georeg import GeoRegLoss, georeg_penalty, spectral_variance, triangle_area
from tests._support.distributed import run_on_ranks


def test_spectral_variance_matches_eigenvalues():
    z = torch.randn(20, 6, generator=torch.Generator().manual_seed(0)).double()
    cov = np.cov(z.numpy(), rowvar=False) + 1e-4 * np.eye(6)
    lam = np.linalg.eigvalsh(cov)
    assert spectral_variance(z).item() == pytest.approx(np.var(lam, ddof=1), rel=1e-10)


def test_penalty_matches_dense_formula():
    g = torch.Generator().manual_seed(1)
    z = torch.randn(15, 4, generator=g).double()
    y = torch.tensor([0, 1, 2] * 5)
    pen, skipped = georeg_penalty(z, y)
    mu = [z[y == c].mean(0).numpy() for c in range(3)]
    ab, ac = mu[1] - mu[0], mu[2] - mu[0]
    area = 0.5 * np.sqrt(ab @ ab * (ac @ ac) - (ab @ ac) ** 2)
    lam = np.linalg.eigvalsh(np.cov(z.numpy(), rowvar=False) + 1e-4 * np.eye(4))
    assert not skipped
    assert pen.item() == pytest.approx(np.var(lam, ddof=1) - np.log(area + 1e-6), rel=1e-8)
    assert triangle_area(*[torch.tensor(m) for m in mu]).item() == pytest.approx(area, rel=1e-8)


def test_skips_batches_with_fewer_than_three_classes():
    z = torch.randn(8, 3, requires_grad=True)
    loss = GeoRegLoss(seed=0)
    pen = loss(z, torch.tensor([0, 1, 0, 1, 0, 1, 0, 1]))
    assert loss.last_skipped
    assert pen.item() == 0.0
    assert not pen.requires_grad
    pen = loss(z, torch.tensor([0, 1, 2, 1, 0, 1, 0, 1]))
    assert not loss.last_skipped
    assert pen.requires_grad
    with pytest.raises(TypeError, match="integer"):
        georeg_penalty(z, torch.zeros(8))


def test_triplet_draw_is_seeded():
    z = torch.randn(40, 5, generator=torch.Generator().manual_seed(2))
    y = torch.arange(40) % 8
    a = [GeoRegLoss(seed=3)(z, y).item() for _ in range(1)] + [GeoRegLoss(seed=3)(z, y).item()]
    assert a[0] == a[1]


class _Net(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.features = nn.Sequential(nn.Linear(5, 6), nn.Tanh())
        self.head = nn.Linear(6, 3)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self.head(self.features(x)), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.0)


class _GradCapture(Callback):
    def __init__(self) -> None:
        self.grads: list[dict[str, torch.Tensor]] = []

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        self.grads.append({n: p.grad.detach().clone() for n, p in pl_module.named_parameters()})


def _batches(n_batches: int, three_classes: bool = True, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(6 * n_batches, 5, generator=g)
    y = torch.tensor([0, 1, 2] * (2 * n_batches)) if three_classes else torch.tensor([0, 1] * (3 * n_batches))
    return x, y


def _reference_grads(x, y, weight, accumulate):
    ref = _Net()
    ref.zero_grad()
    for start in range(0, len(y), 6):
        xb, yb = x[start : start + 6], y[start : start + 6]
        z = ref.features(xb)
        pen, skipped = georeg_penalty(z, yb)  # exactly three classes per batch: the triplet is fixed
        loss = nn.functional.cross_entropy(ref.head(z), yb) + (0.0 if skipped else weight) * pen
        (loss / accumulate).backward()
    return {n: p.grad.detach().clone() for n, p in ref.named_parameters()}


def _fit(x, y, weight, accumulate, **trainer_kwargs):
    model, cap, reg = _Net(), _GradCapture(), GeoReg(feature_layer="features", weight=weight)
    trainer = Trainer(
        max_steps=1,
        accumulate_grad_batches=accumulate,
        callbacks=[reg, cap],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        **trainer_kwargs,
    )
    trainer.fit(model, DataLoader(TensorDataset(x, y), batch_size=6))
    return cap.grads[0], reg, model


@pytest.mark.parametrize("accumulate", [1, 2])
def test_callback_gradients_equal_summed_loss(accumulate):
    x, y = _batches(accumulate)
    grads, reg, model = _fit(x, y, 0.5, accumulate, accelerator="cpu", devices=1)
    ref = _reference_grads(x, y, 0.5, accumulate)
    assert reg.applied == accumulate
    assert reg.skipped == 0
    for name, g in ref.items():
        torch.testing.assert_close(grads[name], g, rtol=1e-5, atol=1e-7)
    # the regulariser really changed the gradient (not a no-op)
    plain = _reference_grads(x, y, 0.0, accumulate)
    assert (grads["features.0.weight"] - plain["features.0.weight"]).abs().max() > 1e-4
    assert "training_step" not in vars(model)  # the wrapper is removed after fit


def test_callback_skips_two_class_batches():
    x, y = _batches(1, three_classes=False)
    grads, reg, _ = _fit(x, y, 0.5, 1, accelerator="cpu", devices=1)
    assert reg.skipped == 1
    assert reg.applied == 0
    ref = _reference_grads(x, y, 0.0, 1)
    for name, g in ref.items():
        torch.testing.assert_close(grads[name], g)


def test_callback_errors_and_state():
    with pytest.raises(ValueError, match="weight"):
        GeoReg(weight=-1.0)
    reg = GeoReg(feature_layer="nope")
    trainer = Trainer(max_steps=1, callbacks=[reg], logger=False, enable_checkpointing=False, enable_progress_bar=False)
    x, y = _batches(1)
    with pytest.raises(ValueError, match="nope"):
        trainer.fit(_Net(), DataLoader(TensorDataset(x, y), batch_size=6))
    reg2 = GeoReg()
    reg2.load_state_dict({"step": 7})
    assert reg2.state_dict() == {"step": 7, "skipped": 0, "applied": 0}


def _ddp_rank(rank, world_size):
    os.environ["LOCAL_RANK"] = str(rank)
    os.environ["NODE_RANK"] = "0"
    os.environ["WORLD_SIZE"] = str(world_size)
    os.environ["RANK"] = str(rank)
    x, y = _batches(2 * world_size, seed=11)  # each rank sees 2 micro-batches (accumulation 2)
    model, cap = _Net(), _GradCapture()
    reg = GeoReg(feature_layer="features", weight=0.5)
    trainer = Trainer(
        accelerator="cpu",
        devices=world_size,
        strategy="ddp",
        max_steps=1,
        accumulate_grad_batches=2,
        callbacks=[reg, cap],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        use_distributed_sampler=False,
    )
    # rank r takes batches r, r + world_size (no sampler: a deterministic split we can reproduce)
    mine = torch.cat([torch.arange(6 * b, 6 * b + 6) for b in range(rank, 2 * world_size, world_size)])
    trainer.fit(model, DataLoader(TensorDataset(x[mine], y[mine]), batch_size=6))
    return cap.grads[0]


@pytest.mark.distributed
@pytest.mark.slow
def test_callback_gradients_under_ddp():
    world = 2
    grads = run_on_ranks(_ddp_rank, world)
    x, y = _batches(2 * world, seed=11)
    # DDP averages over ranks; each rank divides by accumulate = 2: the mean of all 4 micro-batch gradients
    ref = _reference_grads(x, y, 0.5, 2 * world)
    for name, g in ref.items():
        torch.testing.assert_close(grads[0][name], g, rtol=1e-5, atol=1e-7)
        torch.testing.assert_close(grads[1][name], g, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("log_on_step", [False, True])
def test_callback_logs_the_epoch_mean_penalty(log_on_step):
    # two micro-batches of one step: the logged epoch value is the mean of the two penalties, computed here again
    x, y = _batches(2)
    model, reg = _Net(), GeoReg(feature_layer="features", weight=0.5, log_on_step=log_on_step)
    trainer = Trainer(
        max_steps=1,
        accumulate_grad_batches=2,
        callbacks=[reg],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
        devices=1,
    )
    ref = _Net()
    ref.load_state_dict(model.state_dict())
    pens = [float(georeg_penalty(ref.features(x[s : s + 6]), y[s : s + 6])[0]) for s in (0, 6)]
    trainer.fit(model, DataLoader(TensorDataset(x, y), batch_size=6))
    metrics = trainer.callback_metrics
    key = "georeg_epoch" if log_on_step else "georeg"
    assert float(metrics[key]) == pytest.approx(sum(pens) / 2, rel=1e-5)
    assert reg.last_penalty == pytest.approx(pens[1], rel=1e-5)
    assert ("georeg_step" in metrics) == log_on_step
    with pytest.raises(TypeError, match="log_on_step"):
        GeoReg(log_on_step=1)  # type: ignore[arg-type]


def _per_class_penalty(z, y, pick, cov_eps=1e-4, area_eps=1e-6):
    """The penalty as first written: one centroid per class, a dense ridged covariance and its eigenvalues."""
    mu = [z[y == c].mean(0) for c in pick]
    ab, ac = mu[1] - mu[0], mu[2] - mu[0]
    area = 0.5 * torch.sqrt(((ab @ ab) * (ac @ ac) - (ab @ ac) ** 2).clamp_min(0.0) + 1e-12)
    zc = z - z.mean(0)
    cov = zc.T @ zc / (z.shape[0] - 1) + cov_eps * torch.eye(z.shape[1], dtype=z.dtype)
    lam = torch.linalg.eigvalsh(cov)
    variance = (lam - lam.mean()).square().sum() / max(lam.numel() - 1, 1)  # 0 for one dimension, as the package
    return variance - torch.log(area + area_eps)


@pytest.mark.parametrize(("batch", "dim"), [(12, 40), (40, 6), (9, 9), (30, 2)])
def test_closed_form_gradient_matches_autograd_of_the_per_class_formula(batch, dim):
    g = torch.Generator().manual_seed(batch * 100 + dim)
    z = (torch.randn(batch, dim, generator=g, dtype=torch.float64) * 2 + 0.5).requires_grad_()
    y = torch.randint(0, 5, (batch,), generator=g)
    y[:3] = torch.tensor([0, 1, 2])
    pick = torch.unique(y)[torch.randperm(torch.unique(y).numel(), generator=torch.Generator().manual_seed(4))[:3]]
    ref = _per_class_penalty(z, y, pick, cov_eps=0.3)  # the ridge shifts every eigenvalue: the variance keeps
    (ref_grad,) = torch.autograd.grad(ref, z)
    pen, skipped = georeg_penalty(z, y, torch.Generator().manual_seed(4), cov_eps=0.3)
    (grad,) = torch.autograd.grad(pen, z)
    assert not skipped
    torch.testing.assert_close(pen, ref, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(grad, ref_grad, rtol=1e-9, atol=1e-11)
    with torch.no_grad():  # the value-only path gives the same number
        assert georeg_penalty(z, y, torch.Generator().manual_seed(4))[0].item() == pen.item()
    assert torch.autograd.gradcheck(lambda t: georeg_penalty(t, y, torch.Generator().manual_seed(4))[0], (z,))


def test_closed_form_gradient_of_collinear_centroids_and_no_double_backward():
    # collinear centroids: the Lagrange term is exactly 0, its huge coefficient meets a zero adjugate product
    z = torch.tensor([[0.0, 1.0], [1.0, -1.0], [2.0, 0.5], [0.0, -1.0]], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 1, 2, 0])
    z2 = z.detach().clone()
    z2[:, 0] = torch.tensor([0.0, 1.0, 2.0, 0.0])
    z2[:, 1] = 2.0 * z2[:, 0]  # every point on one line
    z2.requires_grad_()
    (ref_grad,) = torch.autograd.grad(_per_class_penalty(z2, y, torch.tensor([0, 1, 2])), z2)
    (grad,) = torch.autograd.grad(georeg_penalty(z2, y)[0], z2)
    torch.testing.assert_close(grad, ref_grad, rtol=1e-9, atol=1e-9)
    pen = georeg_penalty(z, y)[0]
    (first,) = torch.autograd.grad(pen, z, create_graph=True)
    with pytest.raises(RuntimeError):
        first.sum().backward()
