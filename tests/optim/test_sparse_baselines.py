"""Baselines: L1 (proximal / subgradient), spred and direct Lp, against closed forms."""

from __future__ import annotations

import copy

import pytest
import torch
from scipy.optimize import brentq
from torch import nn

from lightning_icml26.optim import L1SGD, LpSGD, ReWASGD, SpredSGD

DT = torch.float64


def _quadratic(opt_factory, a: torch.Tensor, x0: torch.Tensor, steps: int) -> torch.Tensor:
    w = nn.Parameter(x0.clone())
    opt = opt_factory([w])
    for _ in range(steps):
        opt.zero_grad()
        (0.5 * (w - a) ** 2).sum().backward()
        opt.step()
    return w.detach()


def _soft_threshold(a: torch.Tensor, lam: float) -> torch.Tensor:
    return torch.sign(a) * (a.abs() - lam).clamp_min(0)


def test_l1_proximal_step_matches_hand_computation() -> None:
    w = nn.Parameter(torch.tensor([1.0, -0.02, 0.3], dtype=DT))
    opt = L1SGD([w], lr=0.1, l1=0.5, momentum=0.9)
    w.grad = torch.tensor([1.0, 0.0, -2.0], dtype=DT)
    opt.step()
    # gradient step: [0.9, -0.02, 0.5]; then shrink by lr * l1 = 0.05
    torch.testing.assert_close(w.detach(), torch.tensor([0.85, 0.0, 0.45], dtype=DT))
    w.grad = torch.tensor([1.0, 0.0, -2.0], dtype=DT)
    opt.step()
    # buf = 0.9 * g + g = 1.9 g; step: [0.85 - 0.19, 0, 0.45 + 0.38] -> shrink 0.05
    torch.testing.assert_close(w.detach(), torch.tensor([0.61, 0.0, 0.78], dtype=DT))


def test_l1_proximal_fixed_point_is_soft_threshold() -> None:
    a = torch.tensor([2.0, -0.3, 0.1, -1.5], dtype=DT)
    x = _quadratic(lambda p: L1SGD(p, lr=0.3, l1=0.4), a, torch.ones(4, dtype=DT), 300)
    torch.testing.assert_close(x, _soft_threshold(a, 0.4))
    assert bool((x[1:3] == 0).all())


def test_l1_subgradient_adds_sign() -> None:
    w = nn.Parameter(torch.tensor([0.5, -0.5, 0.0], dtype=DT))
    opt = L1SGD([w], lr=0.1, l1=0.2, mode="subgradient")
    w.grad = torch.zeros(3, dtype=DT)
    opt.step()
    torch.testing.assert_close(w.detach(), torch.tensor([0.48, -0.48, 0.0], dtype=DT))


def test_spred_fixed_point_is_soft_threshold() -> None:
    # weight decay lambda on u and v of x = u v is equivalent to an L1 penalty lambda |x| at the minimum
    a = torch.tensor([2.0, -1.2, 0.15, -0.1], dtype=DT)
    x = _quadratic(lambda p: SpredSGD(p, lr=0.1, weight_decay=0.3, momentum=0.5), a, a.clone(), 2000)
    torch.testing.assert_close(x, _soft_threshold(a, 0.3), atol=1e-6, rtol=0)


def test_spred_state_round_trip_and_resync() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = SpredSGD(model.parameters(), lr=0.05, weight_decay=1e-2, momentum=0.9)
    x = torch.randn(8, 4)

    def step(m: nn.Module, o: torch.optim.Optimizer) -> None:
        o.zero_grad()
        m(x).pow(2).sum().backward()
        o.step()

    step(model, opt)
    model2 = copy.deepcopy(model)
    opt2 = SpredSGD(model2.parameters(), lr=0.05, weight_decay=1e-2, momentum=0.9)
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
    for _ in range(3):
        step(model, opt)
        step(model2, opt2)
    for a, b in zip(model.parameters(), model2.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    with torch.no_grad():
        model.weight[0] = 0.0
    for _ in range(3):
        step(model, opt)
    assert bool((model.weight[0] == 0).all())


def test_lp_fixed_point_matches_rewa() -> None:
    # with p = (K + 1 - M) / K and the same lambda, direct Lp and ReWA share the non-zero stationary point
    K, M, lam, a = 9.0, 2.0, 0.1, 1.0
    x_lp = _quadratic(
        lambda p: LpSGD(p, lr=0.1, p=(K + 1 - M) / K, weight_decay=lam),
        torch.tensor([a], dtype=DT),
        torch.tensor([1.0], dtype=DT),
        500,
    )
    x_rewa = _quadratic(
        lambda p: ReWASGD(p, lr=0.05, K=K, M=M, weight_decay=lam),
        torch.tensor([a], dtype=DT),
        torch.tensor([1.0], dtype=DT),
        600,
    )
    root = brentq(lambda t: t - a + lam * t ** ((1 - M) / K), 0.3, a)
    assert x_lp.item() == pytest.approx(root, abs=1e-9)
    assert x_rewa.item() == pytest.approx(root, abs=1e-9)


def test_lp_gradient_is_unbounded_near_zero() -> None:
    w = nn.Parameter(torch.tensor([1e-12], dtype=DT))
    opt = LpSGD([w], lr=0.1, p=0.5, weight_decay=0.1)
    w.grad = torch.zeros(1, dtype=DT)
    opt.step()
    # penalty gradient 0.1 * (1e-12) ** -0.5 = 1e5: the step overshoots zero by orders of magnitude
    assert w.item() == pytest.approx(1e-12 - 0.1 * 0.1 * 1e6, rel=1e-9)
    clipped = nn.Parameter(torch.tensor([1e-12], dtype=DT))
    opt = LpSGD([clipped], lr=0.1, p=0.5, weight_decay=0.1, max_penalty_grad=1.0)
    clipped.grad = torch.zeros(1, dtype=DT)
    opt.step()
    assert clipped.item() == pytest.approx(1e-12 - 0.1, rel=1e-9)


def test_closures_are_honoured() -> None:
    for cls in (L1SGD, SpredSGD, LpSGD):
        w = nn.Parameter(torch.ones(3))
        opt = cls([w], lr=0.1)

        def closure(w: nn.Parameter = w, opt: torch.optim.Optimizer = opt) -> torch.Tensor:
            assert torch.is_grad_enabled()
            opt.zero_grad()
            loss = (w**2).sum()
            loss.backward()
            return loss

        with torch.no_grad():
            loss = opt.step(closure)
        assert float(loss.detach()) == pytest.approx(3.0)
        assert not torch.equal(w.detach(), torch.ones(3))


@pytest.mark.parametrize(
    ("cls", "kwargs", "needle"),
    [
        (L1SGD, {"l1": -1.0}, "l1 must be non-negative"),
        (L1SGD, {"mode": "lasso"}, "mode must be one of"),
        (L1SGD, {"lr": -1.0}, "lr must be non-negative"),
        (SpredSGD, {"weight_decay": -0.1}, "weight_decay must be non-negative"),
        (SpredSGD, {"momentum": 1.5}, "momentum must lie in [0, 1)"),
        (LpSGD, {"p": 0.0}, "p must be positive"),
        (LpSGD, {"max_penalty_grad": -1.0}, "max_penalty_grad must be positive"),
    ],
)
def test_bad_arguments(cls: type, kwargs: dict, needle: str) -> None:
    with pytest.raises(ValueError) as err:
        cls([nn.Parameter(torch.ones(1))], **kwargs)
    assert needle in str(err.value)
