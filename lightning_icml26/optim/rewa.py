"""ReWA: Reparameterization, Weight decay and Adaptive learning rate for sparse optimisation.

Every reparameterised weight ``x`` (the tensor stored in the model) is driven through a latent
``y`` kept in the optimizer state, with ``x = sign(y) |y|^K`` (a single-variable signed power). With
``g = dL/dx`` the update of ``y`` uses the per-coordinate scale

    s = |y|^M                       (eps = 0)
    s = |y|^M * u / (u + eps),      u = K |y|^(K-1)   (eps > 0)

so that ``eta_y * dL/dy = eta * s * g``; weight decay acts on ``y`` and is *not* scaled by ``s``.
Fixed points of the SGD dynamics satisfy ``|y|^M g + lambda y = 0``, i.e. they are stationary points of
``f(x) + lambda K / (K + 1 - M) |x|^p`` with ``p = (K + 1 - M) / K`` (docs/rewa.md).

Design choices of this project (not stated by the authors; see docs/rewa.md):

* ``y`` lives in the optimizer state in ``float32`` (or the parameter dtype when wider), because
  ``|x|^(1/K)`` recomputed from a low-precision ``x`` loses the small weights.
* When ``x`` is changed outside the optimizer (a checkpoint loaded without optimizer state, a pruning
  mask, a broadcast), the change is detected through the parameter's version counter and ``y`` is
  re-derived as ``sign(x) |x|^(1/K)`` **only at the coordinates where** ``sign(y)|y|^K != x``; the
  momentum / Adam moments of those coordinates are reset, so that externally zeroed weights stay zero.
* A coordinate with ``y = 0`` and zero momentum receives a zero update whenever ``M > 0`` or
  ``eps > 0`` (``s = 0`` and ``lambda y = 0``): exact zeros are absorbing.
* Groups with ``reparameterize=False`` (e.g. norms and biases, see :func:`rewa_param_groups`) get the
  plain SGD / AdamW update of the same optimizer.

Sign lock (a property of the method, not of this implementation): with ``M >= 1`` the step on ``y`` is
proportional to ``y`` itself. Without momentum, one SGD step is
``y <- y * (1 - lr * (weight_decay + g * sign(y) * |y|^(M - 1)))``, so ``y`` keeps its sign whenever that
factor is positive (always true near zero when ``M > 1``; for ``M = 1`` it needs ``lr * (weight_decay + |g|) < 1``).
A weight whose gradient keeps pushing it towards the other sign therefore slides to zero and stops there
instead of crossing (exactly so in the small-step limit). Heavy-ball momentum and very large steps can still
carry a weight across zero, so with momentum this is a strong tendency rather than a guarantee. Sign lock
matters most on small networks and short runs: a weight that starts with the wrong sign is pruned instead of
corrected, so the initialisation (or a dense warm start) decides part of the support. Users who need sign
changes can use ``M = 0``: the loss gradient is then applied unscaled (``y <- y - lr * (g + weight_decay * y)``),
weights cross zero freely, and the equivalent penalty has ``p = 1 + 1/K > 1`` (weaker than L1, so less sparsity
without a magnitude threshold).
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch import nn

from lightning_icml26.optim._latent import (
    Closure,
    _adaptive_scale,
    _check_group_common,
    _check_number,
    _check_power,
    _foreach_adaptive_scale,
    _LatentStateOptimizer,
    _sgd_direction,
    foreach_write_signed_power,
    latent_dtype,
    scratch_like,
    signed_power,
)

__all__ = ["ReWAAdamW", "ReWASGD", "effective_lp", "rewa_param_groups", "signed_power"]


def effective_lp(K: float, M: float, weight_decay: float) -> tuple[float, float]:
    """The ``(p, coefficient)`` of the Lp penalty whose stationary points ReWA-SGD's fixed points are.

    ``p = (K + 1 - M) / K`` and ``coefficient = weight_decay * K / (K + 1 - M)`` (reconstructed from the
    update rule's dynamics), i.e. the penalty is ``coefficient * |x|^p``.

    Args:
        K: power of the reparameterisation, ``K > 1``.
        M: exponent of the adaptive step, ``0 <= M <= K - 1``.
        weight_decay: the weight decay ``lambda`` on ``y``.

    Returns:
        ``(p, coefficient)``.

    Example:
        >>> p, c = effective_lp(9, 2, 1e-4)
        >>> round(p, 4), round(c / 1e-4, 4)
        (0.8889, 1.125)
    """
    _check_power(K, M, 0.0)
    if weight_decay < 0:
        raise ValueError(f"weight_decay must be non-negative, got {weight_decay}")
    p = (K + 1 - M) / K
    return p, weight_decay / p


class _ReWABase(_LatentStateOptimizer, abc.ABC):
    _latent_keys = ("y",)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group and validate its hyper-parameters (errors name the argument and its value)."""
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        _check_group_common(group)
        if group["reparameterize"]:
            _check_power(group["K"], group["M"], group["eps"])
        self._check_extra(group)

    @abc.abstractmethod
    def _check_extra(self, group: dict[str, Any]) -> None:
        """Validate the hyper-parameters specific to the subclass's update rule."""

    def _latent(self, p: torch.Tensor, group: dict[str, Any]) -> torch.Tensor:
        """The latent ``y`` of ``p``, created or re-synchronised with ``p`` as needed."""
        state = self.state[p]
        K = float(group["K"])
        y = state.get("y")
        if y is None:
            y = signed_power(p.detach().to(latent_dtype(p.dtype)), 1.0 / K)
            state["y"] = y
        elif self._needs_sync(p, state):
            stale = signed_power(y, K).to(p.dtype) != p.detach()
            if bool(stale.any()):
                fresh = signed_power(p.detach().to(y.dtype), 1.0 / K)
                y.copy_(torch.where(stale, fresh, y))
                self._reset_moments(state, stale)
        return y


class ReWASGD(_ReWABase):
    """ReWA with heavy-ball SGD (the paper's SGD algorithm).

    Per reparameterised tensor: ``d = g * s + weight_decay * y``, ``buf = momentum * buf + d`` (the first
    step sets ``buf = d``, as ``torch.optim.SGD``), ``y -= lr * buf``, ``x = sign(y)|y|^K``.

    Args:
        params: parameters or parameter groups (each group may override every keyword below).
        lr: learning rate ``eta``, non-negative.
        K: power of the reparameterisation, ``> 1`` (odd integers in the paper; 9 recommended, 3 on ImageNet;
            non-integer values work since absolute values are used).
        M: exponent of the adaptive step, ``0 <= M <= K - 1`` (2 in the paper's CIFAR config). With ``M >= 1`` a
            weight cannot change sign under plain SGD steps (sign lock); ``M = 0`` lets weights cross zero. The
            authors give ``M < K - 1``; ``M = K - 1`` (plain gradient descent on ``y`` up to a factor ``K``, penalty
            ``l_{2/K}``) is also accepted because the repository's own ``testksub1.sh`` runs K = 2.25, M = 1.25.
        eps: ``epsilon`` of the adaptive step, ``>= 0`` (0 for simple tasks, 1e-5..1e-3 for ImageNet).
        weight_decay: ``lambda``, applied to ``y`` and not scaled by the adaptive step.
        momentum: heavy-ball momentum ``mu`` in ``[0, 1)`` (0.875 in the paper's CIFAR config). Momentum can carry
            a weight across zero, which plain steps with ``M >= 1`` cannot (see "Sign lock" in the module docstring).
        dampening: SGD dampening in ``[0, 1)``.
        nesterov: Nesterov momentum (needs ``momentum > 0`` and ``dampening = 0``).
        reparameterize: ``False`` turns the group into plain SGD on ``x`` (coupled weight decay on ``x``).

    Example:
        >>> w = torch.nn.Parameter(torch.tensor([0.5, -0.2, 0.0]))
        >>> opt = ReWASGD([w], lr=0.1, K=3, M=1, weight_decay=0.0)
        >>> w.sum().backward()
        >>> opt.step()
        >>> w.data  # y = cbrt(x); y -= 0.1 * |y| * g with g = 1; x = y**3; the zero stays zero
        tensor([ 0.3645, -0.2662,  0.0000])
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 0.1,
        K: float = 9.0,
        M: float = 2.0,
        eps: float = 0.0,
        weight_decay: float = 1e-4,
        momentum: float = 0.0,
        dampening: float = 0.0,
        nesterov: bool = False,
        reparameterize: bool = True,
    ) -> None:
        defaults = {
            "lr": lr,
            "K": K,
            "M": M,
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum": momentum,
            "dampening": dampening,
            "nesterov": nesterov,
            "reparameterize": reparameterize,
        }
        super().__init__(params, defaults)

    _moment_keys = ("momentum_buffer",)

    def _check_extra(self, group: dict[str, Any]) -> None:
        mu = _check_number("momentum", group["momentum"])
        if not 0 <= mu < 1:
            raise ValueError(f"momentum must lie in [0, 1), got {mu}")
        damp = _check_number("dampening", group["dampening"])
        if not 0 <= damp < 1:
            raise ValueError(f"dampening must lie in [0, 1), got {damp}")
        if group["nesterov"] and (mu == 0 or damp != 0):
            raise ValueError(f"nesterov=True needs momentum > 0 and dampening = 0, got momentum={mu}, dampening={damp}")

    @torch.no_grad()
    def step(self, closure: Closure | None = None) -> Any:  # type: ignore[override]
        """One update; ``closure`` (re-evaluating the loss with gradients) is called first if given.

        Returns:
            The closure's loss, or ``None``.
        """
        loss = self._evaluate_closure(closure)
        for group in self.param_groups:
            params = _params_with_grad(group, "ReWASGD")
            if _foreach_ready(params):
                self._step_group_foreach(group, params)
            else:
                self._step_group_loop(group, params)
        return loss

    def _step_group_foreach(self, group: dict[str, Any], params: list[torch.Tensor]) -> None:
        """The update of one group with multi-tensor ops: the loop's update, up to the rounding of fused kernels.

        The direction ``d = g * s`` (reparameterised) or ``g`` (plain) goes through torch's fused SGD kernel, which
        adds ``weight_decay * y`` and does the momentum and the step on ``y`` in one pass (exactly ReWA's update on
        ``y``); ``x = sign(y)|y|^K`` is then written into the parameters by multiplies.
        """
        lr, wd, mu = group["lr"], group["weight_decay"], group["momentum"]
        grads = [p.grad for p in params if p.grad is not None]  # every one: params are those with a gradient
        if group["reparameterize"]:
            ys = [self._latent(p, group) for p in params]
            scratch = scratch_like(self._scratch, ys)
            d = _foreach_adaptive_scale(ys, group["K"], group["M"], group["eps"], scratch)
            torch._foreach_mul_(d, grads)
        else:
            ys, d = [p.detach() for p in params], list(grads)  # the fused kernel leaves the gradients as they are
        states = [self.state[p] for p in params]
        bufs = [st.get("momentum_buffer") for st in states] if mu != 0 else []
        first = any(b is None for b in bufs)
        if first and not all(b is None for b in bufs):  # a parameter joined late: tensor by tensor, as the loop
            if wd != 0:
                d = list(torch._foreach_add(d, ys, alpha=wd))
            for y, st, grad in zip(ys, states, d, strict=True):
                y.add_(_sgd_direction(st, grad, mu, group["dampening"], group["nesterov"]), alpha=-lr)
        else:
            if first:
                bufs = [torch.empty_like(y) for y in ys]
                for st, buf in zip(states, bufs, strict=True):
                    st["momentum_buffer"] = buf
            torch._fused_sgd_(
                ys,
                d,
                bufs,
                weight_decay=wd,
                momentum=mu,
                lr=lr,
                dampening=group["dampening"],
                nesterov=group["nesterov"],
                maximize=False,
                is_first_step=first,
            )
        if group["reparameterize"]:
            foreach_write_signed_power(params, ys, group["K"], scratch)
            for p in params:
                self._record_version(p, self.state[p])

    def _step_group_loop(self, group: dict[str, Any], params: list[torch.Tensor]) -> None:
        """The update of one group, one tensor at a time (parameters narrower than their float32 latent)."""
        lr, wd, mu = group["lr"], group["weight_decay"], group["momentum"]
        for p in params:
            assert p.grad is not None
            state = self.state[p]
            if not group["reparameterize"]:
                d = p.grad.to(latent_dtype(p.dtype))
                if wd != 0:
                    d = d.add(p.detach().to(d.dtype), alpha=wd)
                d = _sgd_direction(state, d, mu, group["dampening"], group["nesterov"])
                p.add_(d.to(p.dtype), alpha=-lr)
                continue
            y = self._latent(p, group)
            g = p.grad.to(y.dtype)
            d = g * _adaptive_scale(y, group["K"], group["M"], group["eps"])
            if wd != 0:
                d.add_(y, alpha=wd)
            d = _sgd_direction(state, d, mu, group["dampening"], group["nesterov"])
            y.add_(d, alpha=-lr)
            p.copy_(signed_power(y, group["K"]).to(p.dtype))
            self._record_version(p, state)


class ReWAAdamW(_ReWABase):
    """ReWA with AdamW (the paper's AdamW algorithm).

    Per reparameterised tensor: ``y *= 1 - lr * weight_decay`` (decoupled decay on ``y``), ``g' = g * s``,
    bias-corrected Adam moments of ``g'``, ``y -= lr * m_hat / (sqrt(v_hat) + adam_eps)``, ``x = sign(y)|y|^K``.
    The scale ``s`` is computed from ``y`` before the decay (where the gradient was evaluated); the paper lists the
    decay first and does not say which ``y`` enters ``s`` (the difference is of order ``lr * weight_decay``).

    Args:
        params: parameters or parameter groups.
        lr: learning rate, non-negative.
        K: power of the reparameterisation, ``> 1``.
        M: exponent of the adaptive step, ``0 <= M <= K - 1``.
        eps: ``epsilon`` of the adaptive step (not Adam's epsilon), ``>= 0``.
        weight_decay: decoupled decay on ``y``.
        betas: Adam's ``(beta1, beta2)``, each in ``[0, 1)``.
        adam_eps: Adam's denominator epsilon, ``> 0``.
        reparameterize: ``False`` turns the group into plain AdamW on ``x``.

    Example:
        >>> w = torch.nn.Parameter(torch.tensor([0.5, 0.0]))
        >>> opt = ReWAAdamW([w], lr=0.1, K=3, M=1, weight_decay=0.0)
        >>> w.sum().backward()
        >>> opt.step()
        >>> w.data  # first Adam step moves y by lr * sign(g'); g' = 0 at the zero
        tensor([0.3338, 0.0000])
    """

    _moment_keys = ("exp_avg", "exp_avg_sq")

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        K: float = 9.0,
        M: float = 2.0,
        eps: float = 0.0,
        weight_decay: float = 1e-2,
        betas: Sequence[float] = (0.9, 0.999),
        adam_eps: float = 1e-8,
        reparameterize: bool = True,
    ) -> None:
        defaults = {
            "lr": lr,
            "K": K,
            "M": M,
            "eps": eps,
            "weight_decay": weight_decay,
            "betas": tuple(betas),
            "adam_eps": adam_eps,
            "reparameterize": reparameterize,
        }
        super().__init__(params, defaults)

    def _check_extra(self, group: dict[str, Any]) -> None:
        betas = group["betas"]
        if len(betas) != 2:
            raise ValueError(f"betas must have two entries, got {betas!r}")
        for i, beta in enumerate(betas):
            b = _check_number(f"betas[{i}]", beta)
            if not 0 <= b < 1:
                raise ValueError(f"betas[{i}] must lie in [0, 1), got {b}")
        if _check_number("adam_eps", group["adam_eps"]) <= 0:
            raise ValueError(f"adam_eps must be positive, got {group['adam_eps']}")

    @torch.no_grad()
    def step(self, closure: Closure | None = None) -> Any:  # type: ignore[override]
        """One update; ``closure`` is called first (with gradients enabled) if given.

        Returns:
            The closure's loss, or ``None``.
        """
        loss = self._evaluate_closure(closure)
        for group in self.param_groups:
            params = _params_with_grad(group, "ReWAAdamW")
            if _foreach_ready(params):
                self._step_group_foreach(group, params)
            else:
                self._step_group_loop(group, params)
        return loss

    def _moments(self, p: torch.Tensor, like: torch.Tensor) -> dict[str, Any]:
        state = self.state[p]
        if "exp_avg" not in state:
            state["exp_avg"] = torch.zeros_like(like)
            state["exp_avg_sq"] = torch.zeros_like(like)
            state["step"] = torch.tensor(0.0)
        return state

    def _step_group_foreach(self, group: dict[str, Any], params: list[torch.Tensor]) -> None:
        """The update of one group with multi-tensor ops: the loop's update, up to the rounding of fused kernels."""
        lr, wd = group["lr"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        grads = [p.grad for p in params if p.grad is not None]  # every one: params are those with a gradient
        if group["reparameterize"]:
            zs = [self._latent(p, group) for p in params]
            scratch = scratch_like(self._scratch, zs)
            g = _foreach_adaptive_scale(zs, group["K"], group["M"], group["eps"], scratch)
            torch._foreach_mul_(g, grads)
        else:
            zs = [p.detach() for p in params]  # float32 or wider: the parameter is its own latent
            g = list(grads)
        states = [self._moments(p, z) for p, z in zip(params, zs, strict=True)]
        steps = [st["step"] for st in states]
        torch._foreach_add_(steps, 1)
        # torch's fused AdamW kernel: decoupled decay of z, both moments and the bias-corrected step in one pass
        torch._fused_adamw_(
            zs,
            g,
            [st["exp_avg"] for st in states],
            [st["exp_avg_sq"] for st in states],
            [],
            steps if zs[0].device.type == "cpu" else [t.to(zs[0].device) for t in steps],  # CUDA: steps on device
            lr=lr,
            beta1=beta1,
            beta2=beta2,
            weight_decay=wd,
            eps=group["adam_eps"],
            amsgrad=False,
            maximize=False,
        )
        if group["reparameterize"]:
            foreach_write_signed_power(params, zs, group["K"], scratch)
            for p in params:
                self._record_version(p, self.state[p])

    def _step_group_loop(self, group: dict[str, Any], params: list[torch.Tensor]) -> None:
        """The update of one group, one tensor at a time (parameters narrower than their float32 latent)."""
        lr, wd = group["lr"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        for p in params:
            assert p.grad is not None
            if group["reparameterize"]:
                z = self._latent(p, group)
                g = p.grad.to(z.dtype) * _adaptive_scale(z, group["K"], group["M"], group["eps"])
            else:
                z = p.detach().to(latent_dtype(p.dtype))
                g = p.grad.to(z.dtype)
            state = self._moments(p, z)
            state["step"] += 1
            t = float(state["step"])
            m, v = state["exp_avg"], state["exp_avg_sq"]
            m.lerp_(g, 1 - beta1)
            v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            z.mul_(1 - lr * wd)
            denom = (v / (1 - beta2**t)).sqrt_().add_(group["adam_eps"])
            z.addcdiv_(m, denom, value=-lr / (1 - beta1**t))
            if group["reparameterize"]:
                p.copy_(signed_power(z, group["K"]).to(p.dtype))
                self._record_version(p, state)
            else:
                p.copy_(z.to(p.dtype))


def _params_with_grad(group: dict[str, Any], name: str) -> list[torch.Tensor]:
    params = [p for p in group["params"] if p.grad is not None]
    for p in params:
        if p.grad.is_sparse:
            raise TypeError(f"{name} does not support sparse gradients")
    return params


def _foreach_ready(params: list[torch.Tensor]) -> bool:
    """Multi-tensor path: every parameter (and its gradient) as wide as its latent, all on one CPU or CUDA device.

    The path runs torch's fused optimizer kernels, which exist for those two device types.
    """
    if not params or params[0].device.type not in ("cpu", "cuda"):
        return False
    device = params[0].device
    return all(
        latent_dtype(p.dtype) == p.dtype and p.grad is not None and p.grad.dtype == p.dtype and p.device == device
        for p in params
    )


_NORM_TYPES: tuple[type[nn.Module], ...] = (
    nn.modules.batchnorm._BatchNorm,
    nn.GroupNorm,
    nn.LayerNorm,
    nn.modules.instancenorm._InstanceNorm,
)


def rewa_param_groups(
    module: nn.Module,
    exclude_norm: bool = True,
    exclude_bias: bool = True,
    excluded_weight_decay: float = 0.0,
) -> list[dict[str, Any]]:
    """Split ``module``'s parameters into a reparameterised group and a plain one (norms, biases).

    The paper's code reparameterises every tensor (BN included); excluding norms and biases is the
    common alternative, offered here as the default of this helper only (the optimizers themselves
    reparameterise whatever they are given).

    Args:
        module: the model.
        exclude_norm: put normalisation-layer parameters in the plain group.
        exclude_bias: put parameters named ``*bias`` in the plain group.
        excluded_weight_decay: weight decay of the plain group.

    Returns:
        Parameter groups for :class:`ReWASGD` / :class:`ReWAAdamW` (empty groups are dropped).

    Example:
        >>> net = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
        >>> [len(g["params"]) for g in rewa_param_groups(net)]
        [1, 3]
    """
    if excluded_weight_decay < 0:
        raise ValueError(f"excluded_weight_decay must be non-negative, got {excluded_weight_decay}")
    norm_params: set[int] = set()
    if exclude_norm:
        for sub in module.modules():
            if isinstance(sub, _NORM_TYPES):
                norm_params.update(id(p) for p in sub.parameters(recurse=False))
    sparse, plain = [], []
    for name, p in module.named_parameters():
        if id(p) in norm_params or (exclude_bias and name.endswith("bias")):
            plain.append(p)
        else:
            sparse.append(p)
    groups: list[dict[str, Any]] = []
    if sparse:
        groups.append({"params": sparse})
    if plain:
        groups.append({"params": plain, "reparameterize": False, "weight_decay": excluded_weight_decay})
    return groups
