"""GeoReg callback: add ``weight * GeoReg(features, labels)`` to any LightningModule's training loss.

The callback hooks a named sub-module (its output, pooled to ``(B, D)``, is the embedding ``Z``) and wraps the
module's ``training_step`` on the instance so that the loss it returns becomes ``loss + weight * P(Z, y)``.
Everything Lightning does afterwards (division by ``accumulate_grad_batches``, precision scaling, the DDP
gradient all-reduce) therefore treats the sum exactly as if the user had written it in ``training_step``:
the gradients are those of ``loss + weight * reg``. Each rank regularises its own micro-batch, like the loss.

The class-triplet draw of each micro-batch is seeded by ``(seed, global rank, micro-batch counter)``; the
counter is checkpointed, so a resumed run continues the same sequence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from lightning.pytorch import Callback, LightningModule, Trainer
from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

from lightning_icml26.ops.georeg import georeg_penalty

__all__ = ["GeoReg"]


class GeoReg(Callback):
    """Geometric regularisation (spectral balance + class-centroid simplex) through a named feature layer.

    Args:
        feature_layer: name of the sub-module whose output is the embedding (``""`` for the module itself;
            ``"fusion"`` for :class:`~lightning_icml26.modules.MultiLayerProbe`). Tuple outputs use their first
            element; ``(B, T, D)`` outputs are mean-pooled over ``T``, ``(B, C, H, W)`` over space.
        weight: ``w`` in ``loss + w * P`` (reference: 0.1).
        target: how to read the labels from a batch: an index into a tuple/list batch, a key into a mapping
            batch, or a callable ``batch -> labels``.
        cov_eps: covariance ridge of the penalty.
        area_eps: area offset inside the log.
        seed: base seed of the class-triplet draws.
        log_on_step: also log ``georeg`` at every step (``on_step=True``); by default the callback logs the
            epoch's mean penalty once, at the end of each training epoch, which costs nothing per step.

    Attributes:
        skipped: micro-batches skipped because they held fewer than three classes.
        applied: micro-batches regularised.

    Example:
        >>> cb = GeoReg(feature_layer="fusion", weight=0.1)
        >>> cb.state_dict()
        {'step': 0, 'skipped': 0, 'applied': 0}
    """

    def __init__(
        self,
        feature_layer: str = "fusion",
        weight: float = 0.1,
        target: int | str | Callable[[Any], Tensor] = 1,
        cov_eps: float = 1e-4,
        area_eps: float = 1e-6,
        seed: int = 0,
        log_on_step: bool = False,
    ) -> None:
        if not isinstance(log_on_step, bool):
            raise TypeError(f"log_on_step must be a bool, got {log_on_step!r}")
        if weight < 0:
            raise ValueError(f"weight must be >= 0, got {weight}")
        if not isinstance(target, int | str) and not callable(target):
            raise TypeError(f"target must be an int, a str or a callable, got {type(target).__name__}")
        self.feature_layer = feature_layer
        self.weight = weight
        self.target = target
        self.cov_eps, self.area_eps, self.seed = cov_eps, area_eps, seed
        self.step = 0
        self.skipped = 0
        self.applied = 0
        self.log_on_step = log_on_step
        self._last_penalty: Tensor | None = None
        self._epoch_sum: Tensor | None = None
        self._epoch_count = 0
        self._handle: RemovableHandle | None = None
        self._active = False
        self._features: Tensor | None = None
        self._module: LightningModule | None = None
        self._rank = 0

    @property
    def last_penalty(self) -> float | None:
        """The penalty of the last regularised micro-batch (read on demand: no device sync per step)."""
        return None if self._last_penalty is None else float(self._last_penalty)

    def labels(self, batch: Any) -> Tensor:
        """Read the labels of ``batch`` as configured by ``target``."""
        if callable(self.target):
            return self.target(batch)
        if isinstance(self.target, str):
            if not isinstance(batch, Mapping):
                raise TypeError(f"target={self.target!r} needs mapping batches, got {type(batch).__name__}")
            return batch[self.target]
        if not isinstance(batch, list | tuple):
            raise TypeError(f"target={self.target} needs tuple/list batches, got {type(batch).__name__}")
        return batch[self.target]

    def _hook(self, _module: nn.Module, _inputs: Any, output: Any) -> None:
        if not self._active:
            return
        z = output[0] if isinstance(output, tuple | list) else output
        if not isinstance(z, Tensor):
            raise TypeError(f"feature layer {self.feature_layer!r} returned {type(z).__name__}, not a tensor")
        if z.ndim == 3:
            z = z.mean(1)
        elif z.ndim == 4:
            z = z.mean(dim=(2, 3))
        elif z.ndim != 2:
            raise ValueError(f"feature layer {self.feature_layer!r} output has shape {tuple(z.shape)}")
        self._features = z

    def penalty(self, z: Tensor, y: Tensor) -> tuple[Tensor, bool]:
        """The seeded penalty of one micro-batch (advances the micro-batch counter)."""
        generator = torch.Generator().manual_seed(self.seed + 1_000_003 * self._rank + 7_919 * self.step)
        self.step += 1
        return georeg_penalty(z, y, generator, self.cov_eps, self.area_eps)

    def on_fit_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        """Hook the feature layer and wrap ``training_step``."""
        if not pl_module.automatic_optimization:
            raise ValueError("GeoReg adds to the returned training loss: it needs automatic_optimization=True")
        try:
            layer = pl_module.get_submodule(self.feature_layer)
        except AttributeError as err:
            raise ValueError(
                f"feature_layer={self.feature_layer!r} is not a sub-module of {type(pl_module).__name__}"
            ) from err
        self._rank = trainer.global_rank
        self._handle = layer.register_forward_hook(self._hook)
        self._module = pl_module
        original = pl_module.training_step

        def training_step(*args: Any, **kwargs: Any) -> Any:
            self._features = None
            self._active = True
            try:
                out = original(*args, **kwargs)
            finally:
                self._active = False
            batch = args[0] if args else kwargs["batch"]
            z = self._features
            self._features = None
            if z is None:
                raise RuntimeError(f"feature layer {self.feature_layer!r} was not called during training_step")
            pen, skipped = self.penalty(z, self.labels(batch).to(z.device))
            if skipped:
                self.skipped += 1
                return out
            self.applied += 1
            self._last_penalty = pen.detach()
            self._epoch_sum = self._last_penalty if self._epoch_sum is None else self._epoch_sum + self._last_penalty
            self._epoch_count += 1
            if self.log_on_step:
                pl_module.log("georeg", self._last_penalty, on_step=True, on_epoch=True)
            if isinstance(out, Tensor):  # loss + weight * pen, one operation (one node in the graph)
                return torch.add(out, pen, alpha=self.weight)
            if isinstance(out, Mapping) and "loss" in out:
                return {**out, "loss": torch.add(out["loss"], pen, alpha=self.weight)}
            raise TypeError(
                f"GeoReg needs training_step to return a loss tensor or a dict with 'loss', got {type(out)}"
            )

        pl_module.training_step = training_step  # type: ignore[method-assign]

    def on_train_epoch_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        """Start the epoch's penalty sum."""
        self._epoch_sum, self._epoch_count = None, 0

    def on_train_epoch_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        """Log the epoch's mean penalty as ``georeg`` (per step too with ``log_on_step``, logged by the step)."""
        if self._epoch_sum is not None and not self.log_on_step:
            pl_module.log("georeg", self._epoch_sum / self._epoch_count, on_step=False, on_epoch=True)

    def _restore(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
        if self._module is not None and "training_step" in vars(self._module):
            del self._module.training_step
        self._module = None

    def on_fit_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        """Remove the hook and the wrapper."""
        self._restore()

    def on_exception(self, trainer: Trainer, pl_module: LightningModule, exception: BaseException) -> None:
        """Remove the hook and the wrapper after a failure too."""
        self._restore()

    def state_dict(self) -> dict[str, Any]:
        """Micro-batch counter and statistics, for checkpoints."""
        return {"step": self.step, "skipped": self.skipped, "applied": self.applied}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the counters (missing keys default to 0)."""
        self.step = int(state_dict.get("step", 0))
        self.skipped = int(state_dict.get("skipped", 0))
        self.applied = int(state_dict.get("applied", 0))
