"""The multiply paths of the signed power and of ReWA's fused step against pow and a hand-written update."""

from __future__ import annotations

import pytest
import torch

from lightning_icml26.optim import ReWAAdamW, ReWASGD
from lightning_icml26.optim._latent import foreach_signed_power, foreach_write_signed_power  # shared plumbing


@pytest.mark.parametrize("K", [2.0, 3.0, 5.0, 7.0, 9.0, 17.0, 2.25])
def test_written_power_equals_the_returned_one_and_pow(K: float) -> None:
    ts = [torch.randn(5, 7, dtype=torch.float64), torch.randn(3, dtype=torch.float64)]
    plain = foreach_signed_power(ts, K)
    for scratch in (None, [torch.empty_like(t) for t in ts]):
        outs = [torch.full_like(t, float("nan")) for t in ts]
        foreach_write_signed_power(outs, ts, K, scratch)
        for out, ref, t in zip(outs, plain, ts, strict=True):
            assert torch.equal(out, ref)  # bit for bit, with or without the in-place squarings
            torch.testing.assert_close(out, torch.sign(t) * t.abs().pow(K), rtol=1e-12, atol=0)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_fused_sgd_step_matches_the_written_out_update(momentum: float) -> None:
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(4, 3, dtype=torch.float64))
    opt = ReWASGD([w], lr=0.05, K=9, M=2, weight_decay=0.1, momentum=momentum)
    y = torch.sign(w.detach()) * w.detach().abs() ** (1 / 9)
    buf = None
    for _ in range(3):
        g = torch.randn_like(w)
        w.grad = g.clone()
        opt.step()
        d = g * y.abs() ** 2 + 0.1 * y
        buf = d if buf is None or momentum == 0 else momentum * buf + d
        y = y - 0.05 * buf
        torch.testing.assert_close(w.detach(), torch.sign(y) * y.abs() ** 9, rtol=1e-10, atol=1e-14)
        assert torch.equal(w.grad, g)  # the gradient is left as it was


def test_fused_adamw_step_matches_the_written_out_update() -> None:
    torch.manual_seed(1)
    w = torch.nn.Parameter(torch.randn(6, dtype=torch.float64))
    opt = ReWAAdamW([w], lr=0.01, K=3, M=2, weight_decay=0.1)
    y = torch.sign(w.detach()) * w.detach().abs() ** (1 / 3)
    m, v = torch.zeros_like(y), torch.zeros_like(y)
    for t in range(1, 4):
        g = torch.randn_like(w)
        w.grad = g.clone()
        opt.step()
        gs = g * y * y
        m, v = 0.9 * m + 0.1 * gs, 0.999 * v + 0.001 * gs * gs
        y = y * (1 - 0.01 * 0.1) - 0.01 * (m / (1 - 0.9**t)) / ((v / (1 - 0.999**t)).sqrt() + 1e-8)
        torch.testing.assert_close(w.detach(), y**3, rtol=1e-10, atol=1e-14)
