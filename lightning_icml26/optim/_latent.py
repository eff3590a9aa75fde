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

__all__ = [
    "Closure",
    "foreach_abs_power",
    "foreach_signed_power",
    "foreach_write_signed_power",
    "latent_dtype",
    "signed_power",
]


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
    return foreach_signed_power([t], exponent)[0]


def _integer(exponent: float) -> int | None:
    """``exponent`` as an int when it is a whole number in ``[1, 64]`` (computed by multiplies), else ``None``."""
    as_int = int(exponent) if float(exponent).is_integer() else None
    return as_int if as_int is not None and 1 <= as_int <= 64 else None


def _foreach_int_power(base: list[torch.Tensor], n: int) -> list[torch.Tensor]:
    """``b ** n`` for every ``b`` of ``base``, by binary exponentiation with foreach multiplies.

    Multiplies are correctly rounded elementwise, so the result is bit-for-bit the same for one tensor or a list,
    whichever kernel runs them; a chain of ``log2(n)`` multiplies costs a fraction of ``pow`` with a float exponent.
    ``base`` must be tensors of the caller's own (new ones): they are squared in place where nothing else holds
    them, so a power of two costs no allocation beyond ``base``.
    """
    result: list[torch.Tensor] | None = None
    power = base
    while True:
        if n & 1:
            result = power if result is None else list(torch._foreach_mul(result, power))
        n >>= 1
        if not n:
            break
        if result is power:  # the result holds this factor: square into new tensors
            power = list(torch._foreach_mul(power, power))
        else:
            torch._foreach_mul_(power, power)
    assert result is not None
    return result


def foreach_abs_power(ts: list[torch.Tensor], exponent: float) -> list[torch.Tensor]:
    """``|t| ** exponent`` for every tensor of ``ts`` (new tensors); whole exponents by multiplies.

    Example:
        >>> foreach_abs_power([torch.tensor([-2.0, 3.0])], 2.0)
        [tensor([4., 9.])]
    """
    n = _integer(exponent)
    if exponent == 0:
        return [torch.ones_like(t) for t in ts]
    if n is None:
        return list(torch._foreach_pow(torch._foreach_abs(ts), float(exponent)))
    if n % 2 == 0:
        return list(_foreach_int_power(list(torch._foreach_mul(ts, ts)), n // 2))
    return list(_foreach_int_power(list(torch._foreach_abs(ts)), n))


def foreach_signed_power(ts: list[torch.Tensor], exponent: float) -> list[torch.Tensor]:
    """``sign(t) * |t| ** exponent`` for every tensor of ``ts`` (new tensors): :func:`signed_power` on a list.

    A whole exponent ``K`` is computed as ``t * |t| ** (K - 1)`` with multiplies (``|t| ** (K - 1)`` from ``t * t``
    when ``K - 1`` is even), so a sign never needs to be taken; other exponents use ``pow``.

    Example:
        >>> foreach_signed_power([torch.tensor([-2.0, 0.0, 1.5])], 3.0)
        [tensor([-8.0000,  0.0000,  3.3750])]
    """
    n = _integer(exponent)
    if n is None:
        return list(
            torch._foreach_mul(torch._foreach_sign(ts), torch._foreach_pow(torch._foreach_abs(ts), float(exponent)))
        )
    if n == 1:
        return [t.clone() for t in ts]
    return list(torch._foreach_mul(foreach_abs_power(ts, n - 1), ts))


def foreach_write_signed_power(
    outs: list[torch.Tensor], ts: list[torch.Tensor], exponent: float, scratch: list[torch.Tensor] | None = None
) -> None:
    """Write ``sign(t) * |t| ** exponent`` into each of ``outs`` (same shapes and dtypes as ``ts``).

    The same values as :func:`foreach_signed_power`, bit for bit; a whole exponent's last multiply writes straight
    into ``outs`` (no temporary and no copy), which is how the optimizers refresh ``x = sign(y)|y|^K``. With
    ``scratch`` (tensors like ``ts``, overwritten) and ``exponent - 1`` a power of two (``K = 3, 5, 9, 17``) the
    squarings run in place in it: no new memory at all.

    Example:
        >>> out = [torch.empty(3)]
        >>> foreach_write_signed_power(out, [torch.tensor([-2.0, 0.0, 1.5])], 3.0)
        >>> out
        [tensor([-8.0000,  0.0000,  3.3750])]
    """
    n = _integer(exponent)
    if n is None or n == 1:
        torch._foreach_copy_(outs, foreach_signed_power(ts, exponent))
        return
    m = n - 1
    if scratch is not None and m >= 2 and m & (m - 1) == 0:
        for buf, t in zip(scratch, ts, strict=True):
            torch.mul(t, t, out=buf)
        while m > 2:  # |t|^(2^j) squared in place, as _foreach_int_power squares
            torch._foreach_mul_(scratch, scratch)
            m //= 2
        powers = scratch
    else:
        powers = foreach_abs_power(ts, m)
    for out, scale, t in zip(outs, powers, ts, strict=True):
        torch.mul(scale, t, out=out)


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

    @property
    def _scratch(self) -> dict[torch.Tensor, torch.Tensor]:
        """Work tensors reused across steps (:func:`scratch_like`), by latent tensor; not part of the state."""
        cache = self.__dict__.get("_scratch_cache")
        if cache is None:
            cache = self.__dict__["_scratch_cache"] = {}
        return cache

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
        self._scratch.clear()  # the latents are replaced: their work tensors go with them
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
    return _foreach_adaptive_scale([y], K, M, eps)[0]


def _foreach_adaptive_scale(
    ys: list[torch.Tensor], K: float, M: float, eps: float, scratch: list[torch.Tensor] | None = None
) -> list[torch.Tensor]:
    """ReWA's per-coordinate scale ``|y|^M`` (times ``u / (u + eps)``, ``u = K |y|^(K-1)``, when ``eps > 0``).

    With ``scratch`` (tensors like ``ys``) and ``M = 2, eps = 0`` (the paper's setting) the scale is written into
    it (the same values: ``y * y``) instead of new memory.
    """
    if scratch is not None and M == 2 and eps == 0:
        for buf, y in zip(scratch, ys, strict=True):
            torch.mul(y, y, out=buf)
        return scratch
    scale = foreach_abs_power(ys, M)
    if eps > 0:
        u = foreach_abs_power(ys, K - 1)
        torch._foreach_mul_(u, float(K))
        scale = list(torch._foreach_div(torch._foreach_mul(scale, u), torch._foreach_add(u, float(eps))))
    return scale


def scratch_like(cache: dict[torch.Tensor, torch.Tensor], ts: list[torch.Tensor]) -> list[torch.Tensor]:
    """One reusable work tensor per tensor of ``ts`` (same shape, dtype, device), kept in ``cache`` by tensor.

    Fresh memory for every temporary costs page faults on each step; the optimizers reuse these instead.
    """
    out = []
    for t in ts:
        buf = cache.get(t)
        if buf is None or buf.shape != t.shape or buf.dtype != t.dtype or buf.device != t.device:
            buf = torch.empty_like(t, memory_format=torch.contiguous_format)
            cache[t] = buf
        out.append(buf)
    return out
