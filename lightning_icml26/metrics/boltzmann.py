"""torchmetrics classes for Boltzmann generators: Kish ESS, E-W2, T-W2 and TICA-W2.

``EffectiveSampleSize`` keeps two fixed-size log-sum-exp scalars (merged across ranks with a log-sum-exp
reduction). The optimal-transport metrics need every sample, so they use ``cat`` list states (the one place the
project allows them): compute them once, after a gather, and cap the sample counts (``max_samples``) because exact
OT on ``n x m`` costs ``O(n m)`` memory.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torchmetrics.utilities.data import dim_zero_cat

from lightning_icml26._checks import check_log_weights
from lightning_icml26.metrics._plot import PlottableMetric
from lightning_icml26.metrics.functional.boltzmann import energy_w2, tica_w2, torus_w2

__all__ = ["EffectiveSampleSize", "EnergyW2", "TICAW2", "TorusW2"]


def _logsumexp_reduce(t: Tensor) -> Tensor:
    return torch.logsumexp(t, dim=0)


class EffectiveSampleSize(PlottableMetric):
    """Kish effective sample size of importance weights, accumulated over batches and ranks.

    States: ``LSE(log w)``, ``LSE(2 log w)`` and the sample count; ``compute`` returns ``ESS / N`` (or the ESS
    with ``normalize=False``).

    Args:
        normalize: divide by the number of samples.
        kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> m = EffectiveSampleSize()
        >>> m.update(torch.log(torch.tensor([1.0, 1.0])))
        >>> m.update(torch.log(torch.tensor([2.0])))
        >>> round(float(m.compute()), 4)
        0.8889
    """

    lse_w: Tensor
    lse_w2: Tensor
    count: Tensor
    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def __init__(self, normalize: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.normalize = normalize
        neg_inf = torch.tensor(float("-inf"), dtype=torch.float64)
        self.add_state("lse_w", default=neg_inf.clone(), dist_reduce_fx=_logsumexp_reduce)
        self.add_state("lse_w2", default=neg_inf.clone(), dist_reduce_fx=_logsumexp_reduce)
        self.add_state("count", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, log_weights: Tensor) -> None:
        """Add a batch of log weights ``(N,)`` (``-inf`` = zero weight; ``nan``, ``+inf`` and 2-D input are refused)."""
        lw = check_log_weights(log_weights, allow_empty=True)
        self.lse_w = torch.logaddexp(self.lse_w, torch.logsumexp(lw, 0))
        self.lse_w2 = torch.logaddexp(self.lse_w2, torch.logsumexp(2 * lw, 0))
        self.count += lw.numel()

    def compute(self) -> Tensor:
        """``ESS / N`` (or ESS)."""
        if int(self.count) == 0 or not bool(torch.isfinite(self.lse_w)):
            return torch.tensor(0.0, dtype=torch.float64)
        ess = torch.exp(2 * self.lse_w - self.lse_w2)
        return ess / self.count if self.normalize else ess


class _PairedOT(PlottableMetric):
    generated: list[Tensor]
    reference: list[Tensor]
    is_differentiable = False
    higher_is_better = False
    full_state_update = False
    plot_lower_bound = 0.0

    def __init__(self, max_samples: int | None = 5000, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if max_samples is not None and max_samples < 1:
            raise ValueError(f"max_samples must be None or >= 1, got {max_samples}")
        self.max_samples = max_samples
        self.add_state("generated", default=[], dist_reduce_fx="cat")
        self.add_state("reference", default=[], dist_reduce_fx="cat")

    def update(self, generated: Tensor, reference: Tensor | None = None) -> None:
        """Add generated values and (optionally) reference values."""
        self.generated.append(generated.detach().double())
        if reference is not None:
            self.reference.append(reference.detach().double())

    def _gathered(self) -> tuple[Tensor, Tensor]:
        if not self.generated or not self.reference:
            raise ValueError(f"{type(self).__name__}.compute() needs generated and reference values; call update first")
        gen, ref = dim_zero_cat(self.generated), dim_zero_cat(self.reference)
        if self.max_samples is not None:
            gen, ref = _thin(gen, self.max_samples), _thin(ref, self.max_samples)
        return gen, ref


def _thin(t: Tensor, cap: int) -> Tensor:
    """Evenly spaced subset of at most ``cap`` rows (keeps a trajectory's order)."""
    if t.shape[0] <= cap:
        return t
    idx = torch.linspace(0, t.shape[0] - 1, cap).round().long()
    return t[idx]


class EnergyW2(_PairedOT):
    """E-W2: ``sqrt`` of the exact 1-D Wasserstein-2 cost between reference and generated energies.

    Args:
        clip: clip energies to ``[-clip, clip]`` (the "cropped" variant uses 1000); ``None``: no clipping.
        max_samples: cap on each set (evenly thinned); ``None``: no cap.
        kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> m = EnergyW2()
        >>> m.update(torch.tensor([2.0, 3.0]), torch.tensor([0.0, 1.0]))
        >>> float(m.compute())
        2.0
    """

    def __init__(self, clip: float | None = None, max_samples: int | None = None, **kwargs: Any) -> None:
        super().__init__(max_samples=max_samples, **kwargs)
        self.clip = clip

    def compute(self) -> Tensor:
        """The E-W2 value."""
        gen, ref = self._gathered()
        return energy_w2(gen, ref, clip=self.clip)


class TorusW2(_PairedOT):
    """T-W2: exact W2 on the torus between generated and reference angle sets (radians, ``(N, D)``).

    Example:
        >>> m = TorusW2()
        >>> m.update(torch.tensor([[-3.1]]), torch.tensor([[3.1]]))
        >>> round(float(m.compute()), 4)
        0.0832
    """

    def compute(self) -> Tensor:
        """The T-W2 value."""
        gen, ref = self._gathered()
        return torus_w2(gen, ref)


class TICAW2(_PairedOT):
    """TICA-W2: exact W2 on the first TICA components fitted on the (time-ordered) reference features.

    Reference batches must arrive in trajectory order (they are concatenated in update order; under DDP pass the
    reference on one rank only).

    Args:
        lagtime: TICA lag in frames.
        n_components: TICA components.
        max_samples: cap on each set (evenly thinned, which also thins the lag: ``lagtime`` is in thinned frames).
        kwargs: forwarded to :class:`torchmetrics.Metric`.

    Example:
        >>> ref = torch.randn(50, 3, generator=torch.Generator().manual_seed(0))
        >>> m = TICAW2(lagtime=1)
        >>> m.update(ref, ref)
        >>> float(m.compute()) < 1e-6
        True
    """

    def __init__(self, lagtime: int = 1, n_components: int = 2, max_samples: int | None = 5000, **kwargs: Any) -> None:
        super().__init__(max_samples=max_samples, **kwargs)
        self.lagtime, self.n_components = lagtime, n_components

    def compute(self) -> Tensor:
        """The TICA-W2 value."""
        gen, ref = self._gathered()
        return tica_w2(gen, ref, self.lagtime, self.n_components)
