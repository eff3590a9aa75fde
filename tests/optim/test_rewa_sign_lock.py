"""ReWA's sign lock: with ``M >= 1`` plain SGD steps slide a weight to zero instead of across it; ``M = 0`` crosses."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from lightning_icml26.optim import ReWASGD

DT = torch.float64
K = 3.0
STEPS = 60


def _run(M: float, lr: float, momentum: float, slope: float, x0: float, loss: str = "linear") -> list[float]:
    """Weights after each of STEPS steps on ``slope * x`` (gradient pushes a positive x below zero)."""
    w = nn.Parameter(torch.tensor([x0], dtype=DT))
    opt = ReWASGD([w], lr=lr, K=K, M=M, weight_decay=0.0, momentum=momentum)
    out = []
    for _ in range(STEPS):
        opt.zero_grad()
        value = slope * w if loss == "linear" else 0.5 * (w + slope) ** 2
        value.sum().backward()
        opt.step()
        out.append(float(w.detach()))
    return out


@pytest.mark.parametrize("M", [1.0, 2.0])
def test_m_at_least_one_stops_at_zero_against_hand_recursion(M: float) -> None:
    lr, slope, x0 = 0.05, 2.0, 0.729  # y0 = 0.9; lr * slope = 0.1 < 1, so the factor below stays positive
    xs = _run(M, lr, 0.0, slope, x0)
    y = x0 ** (1 / K)
    for t in range(STEPS):
        y = y - lr * slope * abs(y) ** M  # hand recursion: y <- y - lr * g * |y|^M, g = slope > 0
        assert xs[t] == pytest.approx(y**K, rel=1e-9, abs=1e-300)
    assert all(x > 0 for x in xs)  # never crosses, although the gradient always points below zero
    assert xs[-1] < 0.05 * x0  # and it did travel most of the way to zero
    if M == 1.0:
        # closed form for M = 1: y_t = y0 (1 - lr g)^t
        assert xs[-1] == pytest.approx((0.9 * (1 - lr * slope) ** STEPS) ** K, rel=1e-9)


def test_m_zero_crosses_zero_against_closed_form() -> None:
    lr, slope, x0 = 0.05, 2.0, 0.729
    xs = _run(0.0, lr, 0.0, slope, x0)
    for t in range(STEPS):
        y = 0.9 - (t + 1) * lr * slope  # M = 0: y moves linearly, crossing zero after 9 steps
        assert xs[t] == pytest.approx(y**K, rel=1e-9, abs=1e-12)
    assert xs[8] > 0 > xs[9]
    assert xs[-1] < -1.0


def test_m_one_with_quadratic_target_on_the_other_side() -> None:
    # minimum of 0.5 (x + 0.5)^2 is at x = -0.5; without momentum M = 1 parks at 0, M = 0 reaches -0.5
    locked = _run(1.0, 0.1, 0.0, 0.5, 0.3, loss="quadratic")
    free = _run(0.0, 0.1, 0.0, 0.5, 0.3, loss="quadratic")
    assert min(locked) > 0.0
    assert locked[-1] < 1e-4
    assert free[-1] == pytest.approx(-0.5, abs=1e-3)


def test_momentum_can_carry_a_weight_across_zero() -> None:
    # the documented caveat: heavy-ball momentum is not proportional to y, so it can overshoot zero
    xs = _run(1.0, 0.05, 0.875, 0.5, 0.3, loss="quadratic")
    assert min(xs) < 0.0
