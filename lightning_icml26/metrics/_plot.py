"""``Metric.plot`` for every metric of the package, on torchmetrics' own plotting helper."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import Tensor
from torchmetrics import Metric

from lightning_icml26._optional import require_pyplot

__all__ = ["PlottableMetric"]


def _plottable(value: Any) -> Any:
    """Tensors become 1-D (a matrix of rates is plotted as its cells); dict entries likewise; others pass."""
    if isinstance(value, Tensor):
        return value.detach().double().reshape(-1) if value.ndim > 1 else value.detach().double()
    if isinstance(value, dict):
        return {key: _plottable(item) for key, item in value.items() if isinstance(item, Tensor)}
    if isinstance(value, tuple | list):
        return [_plottable(item) for item in value]
    return value


class PlottableMetric(Metric):
    """A torchmetrics ``Metric`` whose :meth:`plot` works (torchmetrics' base raises ``NotImplementedError``).

    Example:
        >>> import torch
        >>> from lightning_icml26.metrics import Sparsity
        >>> metric = Sparsity()
        >>> metric.update(torch.tensor([0.0, 1.0]))
        >>> fig, ax = metric.plot()
        >>> type(fig).__name__
        'Figure'
    """

    def plot(self, val: Tensor | Sequence[Tensor] | dict[str, Tensor] | None = None, ax: Any = None) -> Any:
        """Plot one value (default: :meth:`compute`) or a sequence of values, with torchmetrics' helper.

        Args:
            val: a result of :meth:`compute` / ``forward``, or a list of them; computed when omitted.
            ax: a matplotlib axis to draw on (a new figure otherwise).

        Returns:
            ``(figure, axis)``.

        Raises:
            ImportError: matplotlib is missing (the ``plots`` extra).
        """
        require_pyplot()
        value = self.compute() if val is None else val
        return self._plot(_plottable(value), ax)
