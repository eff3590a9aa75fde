"""step_cost / interleaved_cost: the plumbing (calls made, each optimizer steps its own parameters, errors)."""

from __future__ import annotations

import pytest
import torch

from lightning_icml26.optim import ReWASGD, interleaved_cost, step_cost


def test_interleaved_cost_calls_both_sides_and_reports_medians() -> None:
    calls = {"ours": 0, "plain": 0}

    def ours() -> None:
        calls["ours"] += 1

    def plain() -> None:
        calls["plain"] += 1

    out = interleaved_cost(ours, plain, rounds=3, min_seconds=1e-4)
    assert sorted(out) == ["ours_us", "plain_us", "ratio"]
    assert calls["ours"] >= 2 + 3
    assert calls["plain"] >= 2 + 3
    assert out["ours_us"] > 0
    assert out["plain_us"] > 0
    assert out["ratio"] > 0


def test_step_cost_steps_each_optimizer_on_its_own_parameters() -> None:
    torch.manual_seed(0)
    a, b = torch.nn.Linear(5, 3), torch.nn.Linear(5, 3)
    b.load_state_dict(a.state_dict())
    for p in (*a.parameters(), *b.parameters()):
        p.grad = torch.full_like(p, 0.5)
    before = a.weight.detach().clone()
    step_cost(ReWASGD(a.parameters(), lr=0.01), torch.optim.SGD(b.parameters(), lr=0.01), rounds=1, min_seconds=1e-4)
    assert not torch.equal(a.weight, before)
    assert not torch.equal(b.weight, before)
    assert torch.equal(a.weight.grad, torch.full_like(a.weight, 0.5))  # the gradients stay as set


@pytest.mark.parametrize(("rounds", "min_seconds", "needle"), [(0, 0.1, "rounds"), (1, 0.0, "min_seconds")])
def test_bad_settings_raise(rounds: int, min_seconds: float, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        interleaved_cost(lambda: None, lambda: None, rounds=rounds, min_seconds=min_seconds)


def test_step_cost_refuses_non_optimizers_and_missing_gradients() -> None:
    lin = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    with pytest.raises(TypeError, match="ours must be a torch.optim.Optimizer"):
        step_cost(lin, opt)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no parameter with a gradient"):
        step_cost(opt, opt)
