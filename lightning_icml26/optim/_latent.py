"""Plumbing shared by the ReWA optimizers and their baselines: the signed power, argument checks, latent state.

The optimizers keep a latent ``y`` per reparameterised weight ``x = sign(y) |y|^K`` in their state; this module
holds what every such optimizer needs (closure handling, the detection of external changes to ``x`` through the
parameter's version counter, a dtype-preserving ``load_state_dict``) and the update pieces shared by
:class:`~lightning_icml26.optim.ReWASGD`, :class:`~lightning_icml26.optim.ReWAAdamW` and the baselines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.optim import Optimizer

from lightning_icml26._checks import check_real as _check_number  # optim/ imports it from here

__all__ = ["Closure", "latent_dtype", "signed_power"]


Closure = Callable[[], Any]


def signed_power(t: torch.Tensor, exponent: float) -> torch.Tensor:
    """``sign(t) * |t|**exponent``, elementwise (``0`` maps to ``0`` for a positive exponent).

    Args:
        t: input tensor.
        exponent: positive exponent (``K`` for ``y -> x``, ``1/K`` for ``x -> y``).

    Returns:
        A tensor like ``t``.

    Example:
        >>> signed_power(torch.tensor([-8.0, 0.0, 27.0]), 1 / 3)
        tensor([-2.,  0.,  3.])
    """
    return torch.sign(t) * t.abs().pow(exponent)


def _check_power(K: Any, M: Any, eps: Any) -> None:
    K = _check_number("K", K)
    M = _check_number("M", M)
    eps = _check_number("eps", eps)
    if K <= 1:
        raise ValueError(f"K must be greater than 1 (x = sign(y)|y|^K, and M must lie in [0, K-1]), got K={K}")
    if not 0 <= M <= K - 1:
        raise ValueError(f"M must lie in [0, K-1] = [0, {K - 1:g}], got M={M}")
    if eps < 0:
        raise ValueError(f"eps must be non-negative, got {eps}")


def _check_group_common(group: dict[str, Any]) -> None:
    lr = _check_number("lr", group["lr"])
    if lr < 0:
        raise ValueError(f"lr must be non-negative, got {lr}")
    wd = _check_number("weight_decay", group["weight_decay"])
    if wd < 0:
        raise ValueError(f"weight_decay must be non-negative, got {wd}")
    if not isinstance(group.get("reparameterize", True), bool):
        raise TypeError(f"reparameterize must be a bool, got {group['reparameterize']!r}")


def latent_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype of latent state for a parameter of ``dtype``: at least ``float32``.

    Example:
        >>> latent_dtype(torch.bfloat16), latent_dtype(torch.float64)
        (torch.float32, torch.float64)
    """
    return torch.promote_types(dtype, torch.float32)


class _LatentStateOptimizer(Optimizer):
    """Shared plumbing: closure handling, the version check and a dtype-preserving ``load_state_dict``."""

    _latent_keys: tuple[str, ...] = ()
    _moment_keys: tuple[str, ...] = ()

    def _evaluate_closure(self, closure: Closure | None) -> Any:
        if closure is None:
            return None
        with torch.enable_grad():
            return closure()

    def _needs_sync(self, p: torch.Tensor, state: dict[str, Any]) -> bool:
        version = getattr(p, "_version", None)
        return version is None or state.get("param_version") != version

    @staticmethod
    def _record_version(p: torch.Tensor, state: dict[str, Any]) -> None:
        state["param_version"] = getattr(p, "_version", None)

    def _reset_moments(self, state: dict[str, Any], stale: torch.Tensor) -> None:
        for key in self._moment_keys:
            buf = state.get(key)
            if isinstance(buf, torch.Tensor):
                buf.masked_fill_(stale, 0.0)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load the state; latent tensors keep their (float32 or wider) dtype instead of the parameter's."""
        super().load_state_dict(state_dict)
        params = [p for group in self.param_groups for p in group["params"]]
        saved_ids = [i for group in state_dict["param_groups"] for i in group["params"]]
        for p, pid in zip(params, saved_ids, strict=True):
            saved = state_dict["state"].get(pid)
            if not saved or p not in self.state:
                continue
            for key in (*self._latent_keys, *self._moment_keys):
                value = saved.get(key)
                if isinstance(value, torch.Tensor):
                    self.state[p][key] = value.detach().to(device=p.device, dtype=latent_dtype(p.dtype)).clone()


def _sgd_direction(
    state: dict[str, Any], d: torch.Tensor, momentum: float, dampening: float, nesterov: bool
) -> torch.Tensor:
    if momentum == 0:
        return d
    buf = state.get("momentum_buffer")
    if buf is None:
        buf = d.clone()
        state["momentum_buffer"] = buf
    else:
        buf.mul_(momentum).add_(d, alpha=1 - dampening)
    return d.add(buf, alpha=momentum) if nesterov else buf


def _adaptive_scale(y: torch.Tensor, K: float, M: float, eps: float) -> torch.Tensor:
    ay = y.abs()
    scale = ay.pow(M)
    if eps > 0:
        u = K * ay.pow(K - 1)
        scale = scale * u / (u + eps)
    return scale
