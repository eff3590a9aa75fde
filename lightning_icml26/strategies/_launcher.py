"""Lightning's spawn launcher, with each worker ending its process group before the process exits."""

from __future__ import annotations

import queue
from typing import Any

import torch.multiprocessing as mp
from lightning.pytorch.strategies.launchers import _MultiProcessingLauncher
from typing_extensions import override

from lightning_icml26.distributed import end_process_group

__all__ = ["CleanExitMultiProcessingLauncher"]


class CleanExitMultiProcessingLauncher(_MultiProcessingLauncher):
    """Spawned workers run a barrier and ``destroy_process_group()`` once their results are handed back.

    A worker that exits with its gloo groups still alive can abort in their threads' destructors
    ("terminate called without an active exception", SIGABRT), which fails the whole run although training
    ended. Nothing runs a collective after the results are collected, so ending the group there is safe; the
    next ``Trainer`` call (e.g. ``test`` after ``fit``) spawns fresh workers with a fresh group.
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
