"""LOESLayerSelection: choose the probed layers with LOES on a calibration loader at fit start."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from lightning.pytorch import Callback, LightningModule, Trainer

from lightning_icml26.algorithms.loes import select_layers

__all__ = ["LOESLayerSelection"]


class LOESLayerSelection(Callback):
    """Run :func:`~lightning_icml26.algorithms.select_layers` at fit start and hand the layers to the module.

    The module must expose ``layer_features(x) -> (B, L, D)`` (pooled features of every candidate layer),
    ``set_layers(indices)`` and ``num_slots`` (the ``k`` to select), as
    :class:`~lightning_icml26.modules.MultiLayerProbe` does (forward hooks on named sub-modules, or
    ``output_hidden_states`` for transformers models). The calibration batches are ``(x, y, ...)`` tuples,
    or ``(x,)`` for the label-free variant.

    The selection is computed on every rank and rank zero's result is broadcast, so all ranks probe the same
    layers. It is kept in :meth:`state_dict`; when a checkpoint restores it, fit start reuses it instead of
    selecting again.

    Args:
        calibration: an iterable of batches, or ``None`` to use ``datamodule.calibration_dataloader()``
            (falling back to ``datamodule.train_dataloader()``).
        max_samples: cap on the calibration samples (reference default: 2000).
        label_free: ignore the labels (``score = alpha (1 - iso) + gamma red``).
        alpha: see :func:`~lightning_icml26.algorithms.select_layers`.
        gamma: see :func:`~lightning_icml26.algorithms.select_layers`.
        eta: see :func:`~lightning_icml26.algorithms.select_layers`.
        ridge: see :func:`~lightning_icml26.algorithms.select_layers`.
        seed: see :func:`~lightning_icml26.algorithms.select_layers`.

    Attributes:
        indices: the selected layers (``None`` before selection).
        scores: the winning score of each step.
        isotropy: ``iso`` of each layer.

    Example:
        >>> cb = LOESLayerSelection(max_samples=500)
        >>> cb.state_dict()["indices"] is None
        True
    """

    def __init__(
        self,
        calibration: Iterable[Any] | None = None,
        max_samples: int = 2000,
        label_free: bool = False,
        alpha: float = 1.0,
        gamma: float = 0.5,
        eta: float = 0.1,
        ridge: float = 1e-3,
        seed: int = 0,
    ) -> None:
        if max_samples < 2:
            raise ValueError(f"max_samples must be at least 2, got {max_samples}")
        self.calibration = calibration
        self.max_samples = max_samples
        self.label_free = label_free
        self.alpha, self.gamma, self.eta, self.ridge, self.seed = alpha, gamma, eta, ridge, seed
        self.indices: list[int] | None = None
        self.scores: list[float] = []
        self.isotropy: list[float] = []

    def _loader(self, trainer: Trainer) -> Iterable[Any]:
        if self.calibration is not None:
            return self.calibration
        dm = getattr(trainer, "datamodule", None)
        if dm is None:
            raise ValueError("LOESLayerSelection needs calibration=... or a datamodule on the trainer")
        getter: Callable[[], Iterable[Any]] | None = getattr(dm, "calibration_dataloader", None)
        return getter() if getter is not None else dm.train_dataloader()

    @torch.no_grad()
    def collect(self, pl_module: LightningModule, loader: Iterable[Any]) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Per-layer calibration features ``(L, n, D)`` and labels (``None`` without labels)."""
        feats, labels = [], []
        seen = 0
        was_training = pl_module.training
        pl_module.eval()
        try:
            for batch in loader:
                x = batch[0] if isinstance(batch, list | tuple) else batch
                x = x.to(pl_module.device) if isinstance(x, torch.Tensor) else _to(x, pl_module.device)
                f = pl_module.layer_features(x).detach().cpu()  # type: ignore[operator]
                take = min(len(f), self.max_samples - seen)
                feats.append(f[:take])
                if isinstance(batch, list | tuple) and len(batch) > 1:
                    labels.append(batch[1][:take].cpu())
                seen += take
                if seen >= self.max_samples:
                    break
        finally:
            pl_module.train(was_training)
        if not feats:
            raise ValueError("the calibration loader yielded no batches")
        stacked = torch.cat(feats).transpose(0, 1).contiguous()
        return stacked, (torch.cat(labels) if labels else None)

    def select(self, pl_module: LightningModule, loader: Iterable[Any]) -> list[int]:
        """Collect the calibration features and run LOES; returns the layer indices."""
        k = int(pl_module.num_slots)  # type: ignore[arg-type]
        features, labels = self.collect(pl_module, loader)
        if labels is None and not self.label_free:
            raise ValueError("the calibration batches carry no labels: pass label_free=True or (x, y) batches")
        result = select_layers(
            list(features),
            None if self.label_free else labels,
            k=k,
            alpha=self.alpha,
            gamma=self.gamma,
            eta=self.eta,
            ridge=self.ridge,
            seed=self.seed,
        )
        self.scores, self.isotropy = result.scores, result.isotropy
        return result.indices

    def on_fit_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        """Select (unless restored from a checkpoint), broadcast rank zero's choice, write it to the module."""
        for attr in ("layer_features", "set_layers", "num_slots"):
            if not hasattr(pl_module, attr):
                raise TypeError(f"LOESLayerSelection needs a module with {attr} (e.g. MultiLayerProbe)")
        indices = self.indices if self.indices is not None else self.select(pl_module, self._loader(trainer))
        indices = trainer.strategy.broadcast(list(indices), src=0)
        self.indices = [int(i) for i in indices]
        pl_module.set_layers(self.indices)  # type: ignore[operator]
        if trainer.is_global_zero and trainer.logger is not None:
            trainer.logger.log_metrics(
                {f"loes_layer_{i}": float(layer) for i, layer in enumerate(self.indices)}, step=0
            )

    def state_dict(self) -> dict[str, Any]:
        """The selection, for checkpoints."""
        return {"indices": self.indices, "scores": list(self.scores), "isotropy": list(self.isotropy)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the selection (missing keys keep their defaults)."""
        indices = state_dict.get("indices")
        self.indices = None if indices is None else [int(i) for i in indices]
        self.scores = list(state_dict.get("scores", []))
        self.isotropy = list(state_dict.get("isotropy", []))


def _to(x: Any, device: torch.device) -> Any:
    if isinstance(x, dict):
        return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in x.items()}
    return x
