"""``RecourseOnPredict``: recourse for every row a model predicts as rejected, during ``Trainer.predict``."""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
from torch import Tensor

from lightning_icml26.algorithms.recourse import RecourseGenerator, RecourseResult
from lightning_icml26.metrics import QueryCount, RecourseCost, RecourseSparsity, RecourseValidity

__all__ = ["RecourseOnPredict"]


class RecourseOnPredict(pl.Callback):
    """Run a label-only recourse generator on the rows of each predict batch predicted as ``rejected``.

    The LightningModule's ``predict_step`` must return the ``(n,)`` predicted labels of the batch; the batch
    is the feature tensor or a tuple whose first item is. The generator queries its own oracle (usually a
    label-only view of the same model). Results are kept in ``results`` (one
    :class:`~lightning_icml26.algorithms.recourse.RecourseResult` per batch with rejected rows) and summarised
    by recourse metrics (validity, cost, sparsity, queries); ``summary()`` returns them.

    Args:
        generator: e.g. :class:`~lightning_icml26.algorithms.recourse.ASRICL`.
        rejected: the label that triggers recourse.
        target: the class asked for (``None``: any other class).

    Example:
        >>> from lightning_icml26.algorithms.recourse import ASRICL, ActionabilitySpec
        >>> spec = ActionabilitySpec((0.0,), (1.0,), (True,), (0,), (None,))
        >>> callback = RecourseOnPredict(ASRICL(lambda X: (X[:, 0] > 0.5).astype(int), spec, classes=[0, 1]))
        >>> callback.on_predict_batch_end(None, None, torch.tensor([0, 1]), torch.tensor([[0.2], [0.9]]), 0)
        >>> round(callback.summary()["validity"], 2), len(callback.results)
        (1.0, 1)
    """

    def __init__(self, generator: RecourseGenerator, rejected: int = 0, target: int | None = 1) -> None:
        if not isinstance(generator, RecourseGenerator):
            raise TypeError(f"generator must be a RecourseGenerator (ASRICL, FullZO, ...), got {type(generator)}")
        self.generator, self.rejected, self.target = generator, int(rejected), target
        self.results: list[RecourseResult] = []
        spec = generator.spec
        self.metrics = {
            "validity": RecourseValidity(),
            "cost": RecourseCost(ranges=torch.as_tensor(spec.ranges), discrete=torch.as_tensor(spec.discrete)),
            "sparsity": RecourseSparsity(),
            "queries": QueryCount(),
        }

    def on_predict_batch_end(
        self,
        trainer: pl.Trainer | None,
        pl_module: pl.LightningModule | None,
        outputs: Any,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        """Explain the batch's rejected rows."""
        features = batch[0] if isinstance(batch, tuple | list) else batch
        if not isinstance(outputs, Tensor) or outputs.shape != (features.shape[0],):
            shape = tuple(outputs.shape) if isinstance(outputs, Tensor) else type(outputs).__name__
            raise ValueError(f"predict_step must return ({features.shape[0]},) labels for the batch, got {shape}")
        rows = features[outputs.cpu() == self.rejected].detach().cpu().double().numpy()
        if len(rows) == 0:
            return
        result = self.generator.generate(rows, self.target)
        self.results.append(result)
        targets = torch.as_tensor(result.targets)
        labels = torch.where(torch.as_tensor(result.found), torch.as_tensor(result.labels), -1)
        self.metrics["validity"].update(labels, targets)
        for name in ("cost", "sparsity"):
            self.metrics[name].update(
                torch.as_tensor(rows), torch.as_tensor(result.counterfactuals), torch.as_tensor(result.found)
            )
        self.metrics["queries"].update(torch.as_tensor(result.queries))

    def summary(self) -> dict[str, float]:
        """Validity, mean cost, sparsity and queries over every explained row (``nan`` before any)."""
        if not self.results:
            return {name: float("nan") for name in self.metrics}
        return {name: float(metric.compute()) for name, metric in self.metrics.items()}

    def counterfactuals(self) -> np.ndarray:
        """``(n, d)`` counterfactuals of every explained row, in prediction order."""
        if not self.results:
            return np.zeros((0, self.generator.spec.n_features))
        return np.concatenate([r.counterfactuals for r in self.results])

    def state_dict(self) -> dict[str, Any]:
        """The metrics' sums and counts (the per-batch results are not checkpointed)."""
        return {
            name: {"total": metric.total.clone(), "count": metric.count.clone(), "updates": metric.update_count}
            for name, metric in self.metrics.items()
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the metrics' sums and counts (missing entries keep their defaults)."""
        for name, metric in self.metrics.items():
            saved = state_dict.get(name)
            if saved is not None:
                metric.total = torch.as_tensor(saved["total"]).to(metric.total)
                metric.count = torch.as_tensor(saved["count"]).to(metric.count)
                metric._update_count = int(saved.get("updates", 1))
