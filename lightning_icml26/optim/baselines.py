"""Sparse-training baselines to compare ReWA against: L1 (proximal or subgradient), spred and direct Lp.

All three are SGD with heavy-ball momentum on the model's own weights (or, for spred, on a latent
Hadamard factorisation kept in the optimizer state), so any LightningModule can swap them in through an
optimizer factory exactly as it swaps in :class:`~lightning_icml26.optim.ReWASGD`.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable
from typing import Any

import torch
from torch.optim import Optimizer

from lightning_icml26.optim._latent import (
    Closure,
    _check_group_common,
    _check_number,
    _LatentStateOptimizer,
    _sgd_direction,
    latent_dtype,
)

__all__ = ["L1SGD", "LpSGD", "SpredSGD"]

_L1_MODES = ("proximal", "subgradient")


def _check_sgd(group: dict[str, Any]) -> None:
    _check_group_common(group)
    mu = _check_number("momentum", group["momentum"])
    if not 0 <= mu < 1:
        raise ValueError(f"momentum must lie in [0, 1), got {mu}")


class _WeightSGD(Optimizer, abc.ABC):
    """Shared loop of the baselines that update the model's own weights: subclasses give the new weights."""

    @abc.abstractmethod
    def _new_weights(self, group: dict[str, Any], state: dict[str, Any], x: torch.Tensor, g: torch.Tensor) -> Any:
        """Weights after one step from ``x`` (latent precision) with loss gradient ``g``."""

    @torch.no_grad()
    def step(self, closure: Closure | None = None) -> Any:  # type: ignore[override]
        """One update; ``closure`` is evaluated first (with gradients enabled) if given."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad.to(latent_dtype(p.dtype))
                x = p.detach().to(g.dtype)
                p.copy_(self._new_weights(group, self.state[p], x, g).to(p.dtype))
        return loss


class L1SGD(_WeightSGD):
    """SGD with momentum plus an L1 penalty ``l1 * sum |x|``.

    ``mode="proximal"`` takes the momentum step on the loss (plus ``weight_decay * x``) and then applies the
    soft-threshold ``x <- sign(x) max(|x| - lr * l1, 0)``, which produces exact zeros. ``mode="subgradient"``
    adds ``l1 * sign(x)`` to the gradient (the paper's repository: ``loss += l1 * sum|w|``).

    Args:
        params: parameters or parameter groups.
        lr: learning rate, non-negative.
        l1: L1 coefficient, non-negative.
        momentum: heavy-ball momentum in ``[0, 1)``.
        weight_decay: additional L2 weight decay (coupled), non-negative.
        mode: ``"proximal"`` or ``"subgradient"``.

    Example:
        >>> w = torch.nn.Parameter(torch.tensor([0.3, -0.05]))
        >>> opt = L1SGD([w], lr=0.1, l1=1.0)
        >>> w.grad = torch.zeros(2)
        >>> opt.step()
        >>> w.data
        tensor([0.2000, 0.0000])
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 0.1,
        l1: float = 1e-5,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        mode: str = "proximal",
    ) -> None:
        defaults = {"lr": lr, "l1": l1, "momentum": momentum, "weight_decay": weight_decay, "mode": mode}
        super().__init__(params, defaults)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group and validate its hyper-parameters."""
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        _check_sgd(group)
        if _check_number("l1", group["l1"]) < 0:
            raise ValueError(f"l1 must be non-negative, got {group['l1']}")
        if group["mode"] not in _L1_MODES:
            raise ValueError(f"mode must be one of {_L1_MODES}, got {group['mode']!r}")

    def _new_weights(self, group: dict[str, Any], state: dict[str, Any], x: torch.Tensor, g: torch.Tensor) -> Any:
        lr, l1, wd = group["lr"], group["l1"], group["weight_decay"]
        d = g.add(x, alpha=wd) if wd != 0 else g
        if group["mode"] == "subgradient" and l1 != 0:
            d = d.add(torch.sign(x), alpha=l1)
        x = x.add(_sgd_direction(state, d, group["momentum"], 0.0, False), alpha=-lr)
        if group["mode"] == "proximal" and l1 != 0:
            x = torch.sign(x) * (x.abs() - lr * l1).clamp_min(0.0)
        return x


class SpredSGD(_LatentStateOptimizer):
    """spred (Ziyin & Wang): ``x = u * v`` with L2 weight decay on ``u`` and ``v``, trained by momentum SGD.

    The factors live in the optimizer state, initialised balanced (``u = sign(x) sqrt|x|``, ``v = sqrt|x|``).
    ``dL/du = g v`` and ``dL/dv = g u``; weight decay ``lambda`` on both factors is equivalent at its minima to
    an L1 penalty ``lambda |x|``. Externally changed coordinates of ``x`` are re-factorised (with their momentum
    reset), as in :class:`~lightning_icml26.optim.ReWASGD`. The paper's code applies spred to conv layers as a
    module (``SpredConv``); here it is an optimizer so it applies to any model (a project choice).

    Args:
        params: parameters or parameter groups.
        lr: learning rate, non-negative.
        weight_decay: ``lambda`` on ``u`` and ``v``, non-negative.
        momentum: heavy-ball momentum in ``[0, 1)``.
        reparameterize: ``False`` makes the group plain SGD on ``x`` (coupled weight decay).

    Example:
        >>> w = torch.nn.Parameter(torch.tensor([4.0, 0.0]))
        >>> opt = SpredSGD([w], lr=0.1, weight_decay=0.0)
        >>> w.grad = torch.ones(2)
        >>> opt.step()  # u = v = 2: u, v -= 0.1 * 2 -> x = 1.8 ** 2; zero stays zero
        >>> w.data
        tensor([3.2400, 0.0000])
    """

    _latent_keys = ("u", "v")
    _moment_keys = ("momentum_u", "momentum_v", "momentum_buffer")

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 0.1,
        weight_decay: float = 1e-4,
        momentum: float = 0.0,
        reparameterize: bool = True,
    ) -> None:
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum, "reparameterize": reparameterize}
        super().__init__(params, defaults)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group and validate its hyper-parameters."""
        super().add_param_group(param_group)
        _check_sgd(self.param_groups[-1])

    def _factors(self, p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        state = self.state[p]
        x = p.detach().to(latent_dtype(p.dtype))
        if "u" not in state:
            state["u"] = torch.sign(x) * x.abs().sqrt()
            state["v"] = x.abs().sqrt()
        elif self._needs_sync(p, state):
            u, v = state["u"], state["v"]
            stale = (u * v).to(p.dtype) != p.detach()
            if bool(stale.any()):
                u.copy_(torch.where(stale, torch.sign(x) * x.abs().sqrt(), u))
                v.copy_(torch.where(stale, x.abs().sqrt(), v))
                self._reset_moments(state, stale)
        return state["u"], state["v"]

    @torch.no_grad()
    def step(self, closure: Closure | None = None) -> Any:  # type: ignore[override]
        """One update; ``closure`` is evaluated first (with gradients enabled) if given."""
        loss = self._evaluate_closure(closure)
        for group in self.param_groups:
            lr, wd, mu = group["lr"], group["weight_decay"], group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not group["reparameterize"]:
                    d = p.grad.to(latent_dtype(p.dtype)).add(p.detach().to(latent_dtype(p.dtype)), alpha=wd)
                    d = _sgd_direction(state, d, mu, 0.0, False)
                    p.add_(d.to(p.dtype), alpha=-lr)
                    continue
                u, v = self._factors(p)
                g = p.grad.to(u.dtype)
                du = g * v + wd * u
                dv = g * u + wd * v
                for key, d, z in (("momentum_u", du, u), ("momentum_v", dv, v)):
                    if mu != 0:
                        buf = state.get(key)
                        if buf is None:
                            state[key] = buf = d.clone()
                        else:
                            buf.mul_(mu).add_(d)
                        d = buf
                    z.add_(d, alpha=-lr)
                p.copy_((u * v).to(p.dtype))
                self._record_version(p, state)
        return loss


class LpSGD(_WeightSGD):
    """Momentum SGD on ``f(x) + (weight_decay / p) * sum |x|^p`` with ``0 < p``: the direct Lp baseline.

    The penalty gradient ``weight_decay * sign(x) |x|^(p-1)`` is unbounded near zero for ``p < 1``; at an exact
    zero it is taken as 0 (a subgradient choice). With ``p = (K + 1 - M) / K`` and the same ``weight_decay``
    this penalty has the same stationary points as ReWA-SGD (see :func:`~lightning_icml26.optim.effective_lp`).
    It is expected to be unstable for ``p < 1``: that instability is what ReWA avoids.

    Args:
        params: parameters or parameter groups.
        lr: learning rate, non-negative.
        p: exponent, positive.
        weight_decay: penalty coefficient ``lambda`` (penalty ``lambda / p * |x|^p``), non-negative.
        momentum: heavy-ball momentum in ``[0, 1)``.
        max_penalty_grad: optional clip of the penalty gradient's magnitude (``None``: no clip).

    Example:
        >>> w = torch.nn.Parameter(torch.tensor([0.25, 0.0]))
        >>> opt = LpSGD([w], lr=0.1, p=0.5, weight_decay=0.1)
        >>> w.grad = torch.zeros(2)
        >>> opt.step()  # 0.25 - 0.1 * 0.1 * 0.25 ** -0.5
        >>> w.data
        tensor([0.2300, 0.0000])
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 0.1,
        p: float = 0.9,
        weight_decay: float = 1e-4,
        momentum: float = 0.0,
        max_penalty_grad: float | None = None,
    ) -> None:
        defaults = {
            "lr": lr,
            "p": p,
            "weight_decay": weight_decay,
            "momentum": momentum,
            "max_penalty_grad": max_penalty_grad,
        }
        super().__init__(params, defaults)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group and validate its hyper-parameters."""
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        _check_sgd(group)
        if _check_number("p", group["p"]) <= 0:
            raise ValueError(f"p must be positive, got {group['p']}")
        clip = group["max_penalty_grad"]
        if clip is not None and _check_number("max_penalty_grad", clip) <= 0:
            raise ValueError(f"max_penalty_grad must be positive or None, got {clip}")

    def _new_weights(self, group: dict[str, Any], state: dict[str, Any], x: torch.Tensor, g: torch.Tensor) -> Any:
        lr, wd, power = group["lr"], group["weight_decay"], group["p"]
        ax = x.abs()
        safe = torch.where(ax > 0, ax, torch.ones_like(ax))
        pen = torch.where(ax > 0, torch.sign(x) * safe.pow(power - 1), torch.zeros_like(x)) * wd
        if group["max_penalty_grad"] is not None:
            pen = pen.clamp(-group["max_penalty_grad"], group["max_penalty_grad"])
        return x.add(_sgd_direction(state, g + pen, group["momentum"], 0.0, False), alpha=-lr)
