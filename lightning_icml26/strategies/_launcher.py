"""Lightning's spawn launcher, with each worker ending its process group before the process exits."""

from __future__ import annotations

import os
import queue
import tempfile
from typing import Any

import torch.multiprocessing as mp
from lightning.pytorch.strategies.launchers import _MultiProcessingLauncher
from lightning.pytorch.strategies.launchers.multiprocessing import _WorkerOutput
from lightning.pytorch.trainer.states import TrainerFn
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from torch.distributed.tensor import DTensor
from typing_extensions import override

from lightning_icml26.distributed import end_process_group

__all__ = ["CleanExitMultiProcessingLauncher"]


class CleanExitMultiProcessingLauncher(_MultiProcessingLauncher):
    """Spawned workers run a barrier and ``destroy_process_group()`` once their results are handed back.

    A worker that exits with its gloo groups still alive can abort in their threads' destructors
    ("terminate called without an active exception", SIGABRT), which fails the whole run although training
    ended. Nothing runs a collective after the results are collected, so ending the group there is safe; the
    next ``Trainer`` call (e.g. ``test`` after ``fit``) spawns fresh workers with a fresh group.

    The trained weights handed back to the main process are the full tensors: Lightning's launcher would save
    the module's own ``state_dict``, which holds FSDP2 ``DTensor`` shards when parameters are sharded and cannot
    be loaded outside the process group.
    """

    @override
    def _wrapping_function(
        self,
        process_idx: int,
        trainer: Any,
        function: Any,
        args: Any,
        kwargs: Any,
        return_queue: mp.SimpleQueue | queue.Queue,
        global_states: Any = None,
    ) -> None:
        super()._wrapping_function(process_idx, trainer, function, args, kwargs, return_queue, global_states)
        end_process_group()  # only after success: a failed worker exits at once, its peers are stopped by spawn

    @override
    def _collect_rank_zero_results(self, trainer: Any, results: Any) -> _WorkerOutput | None:
        module = trainer.lightning_module
        if not any(isinstance(p, DTensor) for p in module.parameters()):
            return super()._collect_rank_zero_results(trainer, results)
        # a collective on every rank; with cpu_offload only rank 0 receives the tensors
        state_dict = get_model_state_dict(module, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
        if self._strategy.local_rank != 0:
            return None
        callback = trainer.checkpoint_callback
        best_model_path = getattr(callback, "best_model_path", None) if callback is not None else None
        weights_path = None
        if trainer.state.fn == TrainerFn.FITTING:
            weights_path = os.path.join(tempfile.mkdtemp(), ".temp.ckpt")
            self._strategy.checkpoint_io.save_checkpoint(state_dict, weights_path)
        return _WorkerOutput(best_model_path, weights_path, trainer.state, results, self.get_extra_results(trainer))
