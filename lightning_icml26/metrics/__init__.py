"""torchmetrics Metric classes; functional twins live in :mod:`lightning_icml26.metrics.functional`.

Never imports lightning or :mod:`lightning_icml26.modules`."""

from __future__ import annotations

__all__: list[str] = []
