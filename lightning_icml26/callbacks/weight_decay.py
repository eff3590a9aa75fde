"""Change the optimizers' weight decay at given epochs (for example: sparsify first, then refit the support)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback

__all__ = ["WeightDecaySchedule"]


class WeightDecaySchedule(Callback):
    """Set ``weight_decay`` of every parameter group of every optimizer at the start of the given epochs.

    Works with any optimizer whose parameter groups hold a ``weight_decay`` entry (torch's, ReWA's). With ReWA,
    weights that reached exactly zero stay zero, so dropping the decay after a sparsifying phase refits the
    surviving weights without the penalty's shrinkage (the sparse linear recipe does this).

    Args:
        milestones: ``{epoch: weight_decay}``; from that epoch on (0-based) the decay is that value. Epochs are
            non-negative integers, values non-negative floats.

    Example:
        >>> import torch
        >>> from lightning.pytorch import Trainer
        >>> from lightning.pytorch.demos.boring_classes import BoringModel
        >>> schedule = WeightDecaySchedule({1: 0.0})
        >>> class Model(BoringModel):
        ...     def configure_optimizers(self):
        ...         return torch.optim.SGD(self.parameters(), lr=0.1, weight_decay=0.5)
        >>> trainer = Trainer(max_epochs=2, limit_train_batches=1, limit_val_batches=0, callbacks=[schedule],
        ...                   logger=False, enable_checkpointing=False, enable_progress_bar=False,
        ...                   enable_model_summary=False)
        >>> trainer.fit(Model())
        >>> trainer.optimizers[0].param_groups[0]["weight_decay"]
        0.0
    """

    def __init__(self, milestones: Mapping[int | str, float]) -> None:
        parsed: dict[int, float] = {}
        for epoch, value in dict(milestones).items():
            try:
                epoch_int = int(epoch)
            except (TypeError, ValueError):
                raise ValueError(f"milestones keys must be epochs (integers >= 0), got {epoch!r}") from None
            if epoch_int < 0 or str(epoch_int) != str(epoch).strip():
                raise ValueError(f"milestones keys must be epochs (integers >= 0), got {epoch!r}")
            if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
                raise ValueError(f"milestones[{epoch_int}] must be a non-negative number, got {value!r}")
            parsed[epoch_int] = float(value)
        self.milestones = dict(sorted(parsed.items()))

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Apply the latest milestone at or before this epoch (so a resumed run gets the right decay)."""
        due = [value for epoch, value in self.milestones.items() if epoch <= trainer.current_epoch]
        if not due:
            return
        for optimizer in trainer.optimizers:
            for group in optimizer.param_groups:
                if "weight_decay" not in group:
                    raise ValueError(f"{type(optimizer).__name__} has no 'weight_decay' in its parameter groups")
                group["weight_decay"] = due[-1]

    def state_dict(self) -> dict[str, Any]:
        """The milestones, for checkpoints."""
        return {"milestones": dict(self.milestones)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the milestones saved in a checkpoint (older checkpoints without them keep the current ones)."""
        self.milestones = {int(k): float(v) for k, v in state_dict.get("milestones", self.milestones).items()}
