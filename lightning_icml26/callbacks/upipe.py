"""Profile of a training step under UPipe context parallelism: peak tensor bytes, tokens per second, fused layers.

:class:`UPipeStepProfile` measures what the UPipe end-to-end benchmark reports, inside an ordinary ``Trainer`` run
(``benchmarks/upipe_e2e.py`` runs the ``upipe_llama`` recipe with it):

* ``step_peak_mib``: the peak bytes of the tensor storages created during one whole training step (forward, loss,
  backward, gradient reduction, clipping, optimizer step), counted by
  :class:`~lightning_icml26.ops.attention.context_parallel.LiveBytesTracker` (a dispatch mode, never the RSS;
  the weights and the optimizer state that exist before the step are not counted), the largest over the ranks;
* ``tokens_per_s``: the tokens of one step over all ranks (a context-parallel group's shards count once, since
  each rank counts its own shard) divided by the median step time of the slowest rank, over the timed steps;
* ``upipe_fused_layers``: attention layers running the fused head-chunked UPipe operator (transformers layers
  with the fused forward installed by the routing, or ``UPipeAttention`` layers on the ``"upipe"`` backend), the
  fewest over the ranks.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback
from torch import nn

from lightning_icml26.ops.attention.context_parallel import (
    FusedHFAttentionForward,
    LiveBytesTracker,
    UPipeAttention,
)

__all__ = ["count_fused_upipe_layers", "UPipeStepProfile"]


def count_fused_upipe_layers(module: nn.Module) -> int:
    """The attention layers of ``module`` that run the fused UPipe operator.

    Example:
        >>> count_fused_upipe_layers(nn.ModuleList([UPipeAttention(8, 2, backend="upipe"), UPipeAttention(8, 2)]))
        1
    """
    return sum(
        (isinstance(m, UPipeAttention) and m.backend == "upipe")
        or isinstance(m.__dict__.get("forward"), FusedHFAttentionForward)
        for m in module.modules()
    )


class UPipeStepProfile(Callback):
    """Log the peak tensor bytes of one training step, the tokens per second of the later ones, the fused layers.

    Steps ``0 .. warmup_steps - 1`` run plainly (the optimizer creates its state); step ``warmup_steps`` runs
    under the tracker; the steps after it are timed (a barrier first, then the wall clock from
    ``on_train_batch_start`` to ``on_train_batch_end``) without it. Every metric is logged on every rank with
    the same value (see the module docstring), so ``trainer.callback_metrics`` holds it after the run; set
    ``trainer.max_steps`` to at least ``warmup_steps + 2``.

    Args:
        warmup_steps: untimed, untracked steps first.
        token_key: the batch key whose number of elements is a rank's token count.

    Raises:
        ValueError: if ``warmup_steps < 0``.

    Example:
        >>> from lightning.pytorch.demos.boring_classes import BoringModel
        >>> profile = UPipeStepProfile(warmup_steps=1, token_key=None)
        >>> trainer = pl.Trainer(max_steps=4, callbacks=[profile], logger=False, enable_checkpointing=False,
        ...                      enable_progress_bar=False, enable_model_summary=False)
        >>> trainer.fit(BoringModel())
        >>> metrics = trainer.callback_metrics
        >>> float(metrics["step_peak_mib"]) > 0, float(metrics["tokens_per_s"]) > 0, int(metrics["upipe_fused_layers"])
        (True, True, 0)
    """

    def __init__(self, warmup_steps: int = 1, token_key: str | None = "input_ids") -> None:
        super().__init__()
        if isinstance(warmup_steps, bool) or not isinstance(warmup_steps, int) or warmup_steps < 0:
            raise ValueError(f"warmup_steps={warmup_steps!r} must be an integer >= 0")
        self.warmup_steps = warmup_steps
        self.token_key = token_key
        self._step = 0
        self._tracker: LiveBytesTracker | None = None
        self._start = 0.0
        self._times: list[float] = []
        self._tokens_now = 0

    def _tokens(self, batch: Any) -> int:
        if self.token_key is None:
            return 1
        value = batch[self.token_key] if isinstance(batch, dict) else None
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"token_key={self.token_key!r}: the batch holds no tensor under that key")
        return value.numel()

    def _reduce(self, trainer: pl.Trainer, value: float, op: str) -> float:
        tensor = torch.tensor(float(value), dtype=torch.float64, device=trainer.strategy.root_device)
        return float(trainer.strategy.reduce(tensor, reduce_op=op))

    def on_train_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        """Start the tracker (the profiled step) or the clock (a timed step)."""
        self._tokens_now = self._tokens(batch)
        if self._step == self.warmup_steps:
            self._tracker = LiveBytesTracker()
            self._tracker.__enter__()
        elif self._step > self.warmup_steps:
            trainer.strategy.barrier()
            self._start = time.perf_counter()

    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        """Stop the tracker or the clock and log the figures measured so far."""
        step, self._step = self._step, self._step + 1
        if step < self.warmup_steps:
            return
        if step == self.warmup_steps:
            tracker = self._stop_tracker()
            peak = self._reduce(trainer, tracker.peak / 2**20, "max")
            fused = self._reduce(trainer, count_fused_upipe_layers(pl_module), "min")
            pl_module.log("step_peak_mib", peak, on_step=True, on_epoch=False, batch_size=1)
            pl_module.log("upipe_fused_layers", fused, on_step=True, on_epoch=False, batch_size=1)
            return
        self._times.append(time.perf_counter() - self._start)
        seconds = self._reduce(trainer, statistics.median(self._times), "max")
        tokens = self._reduce(trainer, self._tokens_now, "sum")
        pl_module.log("tokens_per_s", tokens / seconds, on_step=True, on_epoch=False, batch_size=1)

    def _stop_tracker(self) -> LiveBytesTracker:
        tracker, self._tracker = self._tracker, None
        assert tracker is not None
        tracker.__exit__(None, None, None)
        return tracker

    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        """Leave the tracker if the step failed inside it."""
        if self._tracker is not None:
            self._stop_tracker()
