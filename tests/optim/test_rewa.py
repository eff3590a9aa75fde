"""ReWA optimizers: hand-computed steps, the Lp fixed point, absorbing zeros, state, closures, DDP, errors."""

from __future__ import annotations

import copy
import functools

import pytest
import torch
from scipy.optimize import brentq, minimize_scalar
from torch import nn

from lightning_icml26.optim import ReWAAdamW, ReWASGD, effective_lp, rewa_param_groups
from tests._support.distributed import run_on_ranks

DT = torch.float64


def _scalar(value: float) -> nn.Parameter:
    return nn.Parameter(torch.tensor([value], dtype=DT))


def _linear_loss_step(opt: torch.optim.Optimizer, p: nn.Parameter, slope: float) -> None:
    opt.zero_grad()
    (slope * p).sum().backward()
    opt.step()


def test_sgd_two_steps_match_hand_computation() -> None:
    # x0 = 8 -> y0 = 2 (K = 3); loss = 3 x -> g = 3; M = 1 -> s = |y|; lambda = 0.5, lr = 0.1, mu = 0.5
    p = _scalar(8.0)
    opt = ReWASGD([p], lr=0.1, K=3, M=1, weight_decay=0.5, momentum=0.5)
    _linear_loss_step(opt, p, 3.0)
    # d = 3 * 2 + 0.5 * 2 = 7; buf = 7; y = 2 - 0.7 = 1.3
    assert p.item() == pytest.approx(1.3**3, rel=1e-12)
    _linear_loss_step(opt, p, 3.0)
    # d = 3 * 1.3 + 0.5 * 1.3 = 4.55; buf = 0.5 * 7 + 4.55 = 8.05; y = 1.3 - 0.805 = 0.495
    assert p.item() == pytest.approx(0.495**3, rel=1e-12)
    assert opt.state[p]["y"].item() == pytest.approx(0.495, rel=1e-12)


def test_sgd_step_with_eps_matches_hand_computation() -> None:
    # u = K |y|^(K-1) = 3 * 4 = 12, s = |y|^M u / (u + eps) = 2 * 12 / 13; d = 3 s + 0.5 * 2 = 85 / 13
    p = _scalar(8.0)
    opt = ReWASGD([p], lr=0.1, K=3, M=1, eps=1.0, weight_decay=0.5)
    _linear_loss_step(opt, p, 3.0)
    assert p.item() == pytest.approx((2 - 0.1 * 85 / 13) ** 3, rel=1e-12)


def test_sgd_negative_weight_and_non_integer_k() -> None:
    # K = 2.25, M = 1.25 = K - 1 (the repository's testksub1.sh setting)
    # y0 = -(0.5)^(1/2.25); g = -1 -> d = -|y|^1.25 + 0.1 y
    x0 = -0.5
    y0 = -(0.5 ** (1 / 2.25))
    p = _scalar(x0)
    opt = ReWASGD([p], lr=0.2, K=2.25, M=1.25, weight_decay=0.1)
    _linear_loss_step(opt, p, -1.0)
    y1 = y0 - 0.2 * (-(abs(y0) ** 1.25) + 0.1 * y0)
    assert p.item() == pytest.approx(-(abs(y1) ** 2.25), rel=1e-12)


def test_adamw_step_matches_hand_computation() -> None:
    # y0 = 2; s = |y0| = 2 (M = 1), g' = 6; decay y <- 2 (1 - 0.1 * 0.5) = 1.9; first Adam step moves by lr
    p = _scalar(8.0)
    opt = ReWAAdamW([p], lr=0.1, K=3, M=1, weight_decay=0.5)
    _linear_loss_step(opt, p, 3.0)
    assert p.item() == pytest.approx((1.9 - 0.1 * 6 / (6 + 1e-8)) ** 3, rel=1e-10)
    # second step: g' = 3 * 1.8; m = 0.9 * 0.6 + 0.1 * 5.4, v = 0.999 * 0.036 + 0.001 * 5.4^2
    y1 = 1.9 - 0.1 * 6 / (6 + 1e-8)
    m = 0.9 * 0.6 + 0.1 * 3 * y1
    v = 0.999 * 0.036 + 0.001 * (3 * y1) ** 2
    y2 = y1 * (1 - 0.05) - 0.1 * (m / (1 - 0.9**2)) / ((v / (1 - 0.999**2)) ** 0.5 + 1e-8)
    _linear_loss_step(opt, p, 3.0)
    assert p.item() == pytest.approx(y2**3, rel=1e-10)


def _run_quadratic(a: float, K: float, M: float, lam: float, x0: float, steps: int, lr: float) -> float:
    p = _scalar(x0)
    opt = ReWASGD([p], lr=lr, K=K, M=M, weight_decay=lam)
    for _ in range(steps):
        opt.zero_grad()
        (0.5 * (p - a) ** 2).sum().backward()
        opt.step()
    return p.item()


@pytest.mark.parametrize(("K", "M", "lam"), [(9, 2, 0.1), (3, 1.5, 0.2), (5, 3, 0.05)])
def test_fixed_point_of_scalar_quadratic_matches_lp_relation(K: float, M: float, lam: float) -> None:
    a = 1.0
    x = _run_quadratic(a, K, M, lam, x0=1.0, steps=600, lr=0.05)
    p, coef = effective_lp(K, M, lam)
    # stationarity of 0.5 (x - a)^2 + coef |x|^p on x > 0: x - a + lam x^((1 - M) / K) = 0 (independent root finder)
    root = brentq(lambda t: t - a + lam * t ** ((1 - M) / K), 0.3, a)
    assert x == pytest.approx(root, abs=1e-9)
    # and it is the local minimiser of the Lp-penalised objective (scipy, bounded away from the zero minimum)
    res = minimize_scalar(lambda t: 0.5 * (t - a) ** 2 + coef * abs(t) ** p, bounds=(0.3, 2.0), method="bounded")
    assert x == pytest.approx(res.x, abs=1e-5)


def test_small_signal_decays_to_exact_zero() -> None:
    # for a = 0.05 the Lp objective has no positive stationary point: ReWA drives x to exactly 0 and keeps it there
    x = _run_quadratic(0.05, 9, 2, 0.1, x0=0.05, steps=3000, lr=0.5)
    assert x == 0.0


@pytest.mark.parametrize(("M", "eps", "momentum"), [(2.0, 0.0, 0.9), (0.0, 1e-3, 0.875), (1.0, 1e-4, 0.0)])
def test_zeros_are_absorbing(M: float, eps: float, momentum: float) -> None:
    torch.manual_seed(0)
    w = nn.Parameter(torch.randn(50, dtype=DT))
    zero = torch.rand(50) < 0.4
    with torch.no_grad():
        w[zero] = 0.0
    opt = ReWASGD([w], lr=0.1, K=9, M=M, eps=eps, weight_decay=1e-3, momentum=momentum)
    for _ in range(20):
        opt.zero_grad()
        (w * torch.randn(50, dtype=DT)).sum().backward()
        opt.step()
    assert bool((w.detach()[zero] == 0).all())
    assert bool((w.detach()[~zero] != 0).all())


def test_external_pruning_is_absorbed_with_momentum() -> None:
    torch.manual_seed(0)
    w = nn.Parameter(torch.randn(40))
    opt = ReWASGD([w], lr=0.05, K=9, M=2, weight_decay=1e-3, momentum=0.9)
    target = torch.randn(40)
    for step in range(30):
        opt.zero_grad()
        ((w - target) ** 2).sum().backward()
        opt.step()
        if step == 10:  # a pruning callback zeroes half of the weights outside the optimizer
            with torch.no_grad():
                w[:20] = 0.0
    assert bool((w.detach()[:20] == 0).all())
    assert opt.state[w]["y"].dtype == torch.float32


def test_external_change_resyncs_latent() -> None:
    torch.manual_seed(0)
    model = nn.Linear(5, 3)
    opt = ReWASGD(model.parameters(), lr=0.1, K=5, M=2, weight_decay=1e-2)
    x = torch.randn(8, 5)
    for _ in range(3):
        opt.zero_grad()
        model(x).pow(2).sum().backward()
        opt.step()
    fresh_state = {k: torch.randn_like(v) for k, v in model.state_dict().items()}
    model.load_state_dict(fresh_state)  # e.g. a checkpoint loaded without optimizer state
    reference = nn.Linear(5, 3)
    reference.load_state_dict(fresh_state)
    ref_opt = ReWASGD(reference.parameters(), lr=0.1, K=5, M=2, weight_decay=1e-2)
    for m, o in ((model, opt), (reference, ref_opt)):
        o.zero_grad()
        m(x).pow(2).sum().backward()
        o.step()
    for a, b in zip(model.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("opt_cls", [ReWASGD, ReWAAdamW])
def test_state_dict_round_trip(opt_cls: type[torch.optim.Optimizer]) -> None:
    torch.manual_seed(0)
    kwargs = {"lr": 0.05, "K": 9, "M": 2, "eps": 1e-4, "weight_decay": 1e-3}
    if opt_cls is ReWASGD:
        kwargs["momentum"] = 0.9
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))
    opt = opt_cls(model.parameters(), **kwargs)
    x, y = torch.randn(16, 4), torch.randn(16, 2)

    def step(m: nn.Module, o: torch.optim.Optimizer) -> None:
        o.zero_grad()
        (m(x) - y).pow(2).mean().backward()
        o.step()

    for _ in range(3):
        step(model, opt)
    model2 = copy.deepcopy(model)
    opt2 = opt_cls(model2.parameters(), **kwargs)
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
    for _ in range(3):
        step(model, opt)
        step(model2, opt2)
    for a, b in zip(model.parameters(), model2.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_bf16_params_keep_fp32_latent_after_load() -> None:
    w = nn.Parameter(torch.randn(10).to(torch.bfloat16))
    opt = ReWASGD([w], lr=0.1, K=9, M=2, weight_decay=1e-3, momentum=0.9)
    w.grad = torch.ones_like(w)
    opt.step()
    opt2 = ReWASGD([w], lr=0.1, K=9, M=2, weight_decay=1e-3, momentum=0.9)
    opt2.load_state_dict(opt.state_dict())
    assert opt2.state[w]["y"].dtype == torch.float32
    torch.testing.assert_close(opt2.state[w]["y"], opt.state[w]["y"], rtol=0, atol=0)


def test_closure_is_evaluated_with_grad_and_returned() -> None:
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    ref = copy.deepcopy(model)
    x, y = torch.randn(10, 3), torch.randn(10, 1)
    opt = ReWASGD(model.parameters(), lr=0.1, K=3, M=1, weight_decay=1e-2)
    ref_opt = ReWASGD(ref.parameters(), lr=0.1, K=3, M=1, weight_decay=1e-2)
    calls = []

    def closure() -> torch.Tensor:
        calls.append(torch.is_grad_enabled())
        opt.zero_grad()
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
        return loss

    with torch.no_grad():  # the optimizer must re-enable gradients for the closure
        loss = opt.step(closure)
    assert calls == [True]
    ref_opt.zero_grad()
    ref_loss = (ref(x) - y).pow(2).mean()
    ref_loss.backward()
    ref_opt.step()
    assert float(loss.detach()) == pytest.approx(float(ref_loss.detach()))
    for a, b in zip(model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(a, b)
    assert opt.step() is None


def test_trainer_with_accumulation_and_clipping() -> None:
    import lightning.pytorch as pl
    from torch.utils.data import DataLoader, TensorDataset

    from lightning_icml26.modules import MLP, ClassifierModule

    torch.manual_seed(0)
    x, y = torch.randn(64, 4), torch.randint(0, 3, (64,))
    module = ClassifierModule(
        MLP(4, 3, hidden=8, depth=1),
        num_classes=3,
        optimizer=functools.partial(ReWASGD, lr=0.1, K=9, M=2, weight_decay=1e-3, momentum=0.875),
    )
    before = [p.detach().clone() for p in module.parameters()]
    trainer = pl.Trainer(
        max_steps=4,
        accumulate_grad_batches=2,
        gradient_clip_val=0.5,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
    )
    trainer.fit(module, DataLoader(TensorDataset(x, y), batch_size=8))
    opt = trainer.optimizers[0]
    assert isinstance(opt, ReWASGD)
    assert trainer.global_step == 4
    for p, b in zip(module.parameters(), before, strict=True):
        assert not torch.equal(p.detach(), b)
        torch.testing.assert_close(p.detach(), torch.sign(opt.state[p]["y"]) * opt.state[p]["y"].abs() ** 9)


def test_param_groups_exclude_norms_and_biases() -> None:
    net = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(2, 2))
    groups = rewa_param_groups(net, excluded_weight_decay=0.0)
    opt = ReWASGD(groups, lr=0.1, K=9, M=2, weight_decay=0.1)
    out = net(torch.randn(4, 1, 3, 3)).sum()
    out.backward()
    bn_before = net[1].weight.detach().clone()
    opt.step()
    # the BatchNorm weight takes a plain SGD step without decay
    torch.testing.assert_close(net[1].weight.detach(), bn_before - 0.1 * net[1].weight.grad)
    assert "y" not in opt.state[net[1].weight]
    assert "y" in opt.state[net[0].weight]


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"K": 0}, "K must be greater than 1"),
        ({"K": -3}, "K=-3"),
        ({"K": 1}, "K must be greater than 1"),
        ({"M": -1}, "M must lie in [0, K-1]"),
        ({"M": 8.5}, "M=8.5"),
        ({"lr": -0.1}, "lr must be non-negative, got -0.1"),
        ({"weight_decay": -1e-4}, "weight_decay must be non-negative"),
        ({"eps": -1.0}, "eps must be non-negative"),
        ({"momentum": 1.0}, "momentum must lie in [0, 1)"),
        ({"nesterov": True}, "nesterov=True needs momentum > 0"),
        ({"K": float("nan")}, "K must be finite"),
    ],
)
def test_bad_hyper_parameters_raise(kwargs: dict, needle: str) -> None:
    with pytest.raises(ValueError) as err:
        ReWASGD([_scalar(1.0)], **kwargs)
    assert needle in str(err.value)


def test_bad_types_and_adam_arguments_raise() -> None:
    with pytest.raises(TypeError, match="K must be a real number"):
        ReWASGD([_scalar(1.0)], K="9")
    with pytest.raises(ValueError, match=r"betas\[1\] must lie in \[0, 1\)"):
        ReWAAdamW([_scalar(1.0)], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="adam_eps must be positive"):
        ReWAAdamW([_scalar(1.0)], adam_eps=0.0)
    with pytest.raises(ValueError, match="M must lie"):
        ReWAAdamW([{"params": [_scalar(1.0)], "M": 2.5}], K=3)
    # a group that is not reparameterised does not need a valid (K, M)
    ReWASGD([{"params": [_scalar(1.0)], "reparameterize": False, "K": 1}])


def _ddp_worker(rank: int, world_size: int, x: torch.Tensor, y: torch.Tensor, init: dict, steps: int) -> dict:
    from torch.nn.parallel import DistributedDataParallel

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 3)).double()
    model.load_state_dict(init)
    ddp = DistributedDataParallel(model)
    opt = ReWASGD(ddp.parameters(), lr=0.1, K=9, M=2, eps=1e-3, weight_decay=1e-2, momentum=0.875)
    xs, ys = x.chunk(world_size)[rank], y.chunk(world_size)[rank]
    for _ in range(steps):
        opt.zero_grad()
        (ddp(xs) - ys).pow(2).mean().backward()
        opt.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@pytest.mark.distributed
def test_ddp_two_ranks_match_single_process_summed_batch() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 3)).double()
    init = {k: v.clone() for k, v in model.state_dict().items()}
    x, y = torch.randn(16, 6, dtype=DT), torch.randn(16, 3, dtype=DT)
    steps = 5
    results = run_on_ranks(_ddp_worker, 2, x, y, init, steps)
    opt = ReWASGD(model.parameters(), lr=0.1, K=9, M=2, eps=1e-3, weight_decay=1e-2, momentum=0.875)
    for _ in range(steps):
        opt.zero_grad()
        (model(x) - y).pow(2).mean().backward()
        opt.step()
    for rank_state in results:
        for key, value in model.state_dict().items():
            torch.testing.assert_close(rank_state[key], value, rtol=1e-10, atol=1e-12)
    assert not torch.equal(results[0]["0.weight"], init["0.weight"])
