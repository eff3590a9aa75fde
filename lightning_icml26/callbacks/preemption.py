"""Stop every rank at the next step boundary on SIGTERM / SIGUSR1 and write one consistent checkpoint.

Schedulers announce a preemption with a signal: SLURM sends SIGTERM (or ``--signal=USR1@90`` some seconds
before the end), torchrun's agent forwards SIGTERM. :class:`PreemptionCheckpoint` replaces Lightning's own
handlers during training (they save Lightning's ``hpc_ckpt`` inside the handler, mid-step, and run a collective
from it) with one that only records the signal. After every optimisation step the ranks agree on it with one
all-reduce, so all of them stop after the same step; then every rank takes part in one ``save_checkpoint`` to
``dirpath/filename``, the other checkpoint callbacks skip that step, validation is skipped, and ``fit`` ends.
On SIGUSR1 under SLURM, global rank zero asks SLURM to requeue the job (``scontrol requeue``), as Lightning's
auto-requeue does. A process that started the other local ranks itself (Lightning's ``popen`` launcher)
forwards the signal to them.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import torch
import torch.distributed as dist
from lightning.fabric.plugins.environments import SLURMEnvironment
from lightning.pytorch import Callback, LightningModule, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint

__all__ = ["PREEMPTION_SIGNALS", "PreemptionCheckpoint", "requeue_slurm_job"]

log = logging.getLogger(__name__)

#: The signals that announce a preemption (SIGUSR1 is SLURM's usual ``--signal`` choice).
PREEMPTION_SIGNALS = (signal.SIGTERM, signal.SIGUSR1)


def requeue_slurm_job() -> int | None:
    """Ask SLURM to requeue this job (``scontrol requeue <id>``); the command's exit code, ``None`` outside SLURM.

    Example:
        >>> import os
        >>> "SLURM_JOB_ID" in os.environ or requeue_slurm_job() is None
        True
    """
    array_id = os.environ.get("SLURM_ARRAY_JOB_ID")
    job_id = f"{array_id}_{os.environ['SLURM_ARRAY_TASK_ID']}" if array_id else os.environ.get("SLURM_JOB_ID")
    if not job_id:
        return None
    try:
        return subprocess.call(["scontrol", "requeue", job_id])
    except FileNotFoundError:
        log.warning("scontrol not found: job %s is not requeued", job_id)
        return 127


class PreemptionCheckpoint(Callback):
    """On SIGTERM or SIGUSR1, every rank stops after the same step, with one checkpoint written by all of them.

    Args:
        dirpath: folder of the checkpoint.
        filename: its file name (``last.ckpt``: the file ``icml26 resume`` continues from).
        requeue: on SIGUSR1 under SLURM, requeue the job from global rank zero (Lightning's auto-requeue).

    Attributes:
        signal_received: the signal number seen by this process (``None`` before any).
        preempted_by: the signal number the ranks stopped for (``None`` until they stopped).
        checkpoint_path: the checkpoint written at the stop.

    Example:
        >>> import os, signal, tempfile, torch
        >>> from lightning.pytorch import Trainer
        >>> from lightning.pytorch.demos.boring_classes import BoringModel
        >>> class SignalAtStep(PreemptionCheckpoint):  # what a scheduler does, from inside
        ...     def on_train_batch_start(self, trainer, *args):
        ...         if trainer.global_step == 3:
        ...             os.kill(os.getpid(), signal.SIGTERM)
        >>> callback = SignalAtStep(tempfile.mkdtemp())
        >>> trainer = Trainer(max_steps=50, callbacks=[callback], logger=False, enable_progress_bar=False,
        ...                   enable_checkpointing=False, enable_model_summary=False)
        >>> trainer.fit(BoringModel())  # doctest: +ELLIPSIS
        == preempted by SIGTERM after step 4: checkpoint .../last.ckpt
        >>> callback.preempted_by == signal.SIGTERM, trainer.global_step
        (True, 4)
        >>> torch.load(callback.checkpoint_path, weights_only=False)["global_step"]
        4
    """

    def __init__(self, dirpath: str | Path, filename: str = "last.ckpt", requeue: bool = True) -> None:
        if not filename:
            raise ValueError(f"filename={filename!r} must be a non-empty file name")
        self.dirpath = Path(dirpath)
        self.filename = filename
        self.requeue = requeue
        self.signal_received: int | None = None
        self.preempted_by: int | None = None
        self.checkpoint_path: Path | None = None
        self._trainer: Trainer | None = None
        self._previous: dict[int, Any] = {}

    # ------------------------------------------------------------------ signals
    def _handle(self, signum: int, frame: FrameType | None) -> None:
        first = self.signal_received is None
        self.signal_received = signum
        launcher = self._trainer.strategy.launcher if self._trainer is not None else None
        if first and launcher is not None and getattr(launcher, "procs", None):
            launcher.kill(signum)  # the ranks this process started: they stop at the same step

    def _install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in PREEMPTION_SIGNALS:
            self._previous[signum] = signal.getsignal(signum)
            signal.signal(signum, self._handle)

    def _restore(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum, handler in self._previous.items():
            if handler is not None:
                signal.signal(signum, handler)
        self._previous = {}

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        """Replace the signal handlers Lightning set for training (it restores its own predecessors later)."""
        self._trainer = trainer
        self.preempted_by = None
        self._install()

    def on_train_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        """Put back the handlers that were there before :meth:`on_train_start`."""
        self._restore()

    def on_exception(self, trainer: Trainer, pl_module: LightningModule, exception: BaseException) -> None:
        """Put back the previous handlers when ``fit`` fails."""
        self._restore()

    # ------------------------------------------------------------------ the stop
    def _agreed_signal(self, trainer: Trainer) -> int:
        local = self.signal_received or 0
        if trainer.world_size > 1 and dist.is_available() and dist.is_initialized():
            flag = torch.tensor([local], dtype=torch.int64, device=trainer.strategy.root_device)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            return int(flag.item())
        return local

    def on_train_batch_end(
        self, trainer: Trainer, pl_module: LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        """After each step: if any rank received a signal, checkpoint on every rank and end ``fit``."""
        signum = self._agreed_signal(trainer)
        if not signum or self.preempted_by is not None:
            return
        self.preempted_by = signum
        path = self.dirpath / self.filename
        trainer.save_checkpoint(path)
        self.checkpoint_path = path
        for callback in trainer.callbacks:  # type: ignore[attr-defined]
            if isinstance(callback, ModelCheckpoint):
                callback._last_global_step_saved = trainer.global_step  # this step is saved: no second file
        loop = trainer.fit_loop.epoch_loop
        loop._should_check_val_fx = lambda *args, **kwargs: False  # type: ignore[method-assign]
        trainer.should_stop = True
        if trainer.is_global_zero:
            name = signal.Signals(signum).name
            print(f"== preempted by {name} after step {trainer.global_step}: checkpoint {path}", flush=True)
            if self.requeue and signum == signal.SIGUSR1 and SLURMEnvironment.detect():
                requeue_slurm_job()
