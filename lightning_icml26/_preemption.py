"""The runner's side of a preemption: signals seen by a process that only waits, the checkpoint to resume from.

With Lightning's spawn launcher the process that runs ``icml26`` trains nothing: it waits for the ranks it
spawned. :func:`signals_forwarded` records a SIGTERM / SIGUSR1 sent to it during ``fit`` and forwards the signal
to those ranks, where :class:`~lightning_icml26.callbacks.PreemptionCheckpoint` stops them at the same step.
:func:`preemption_of` tells the runner whether ``fit`` ended that way. :func:`resumable_checkpoint` turns the
``ckpt_path`` of a resume into a checkpoint that loads (falling back to the previous one, saying so), and
:func:`requeued` tells whether this launch is a scheduler's restart of an earlier one (SLURM requeue, torchrun
restart) that must continue from the run folder's newest checkpoint.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from lightning_icml26._catalog import global_rank
from lightning_icml26._checkpoints import loadable_checkpoint, newest_checkpoint
from lightning_icml26.callbacks.preemption import PREEMPTION_SIGNALS, PreemptionCheckpoint

__all__ = [
    "Received",
    "preempted_checkpoint",
    "preemption_of",
    "requeued",
    "resumable_checkpoint",
    "signals_forwarded",
]


@dataclass
class Received:
    """The preemption signal a waiting process got (``None`` when none came)."""

    signum: int | None = None


@contextmanager
def signals_forwarded(trainer: Any) -> Iterator[Received]:
    """Record SIGTERM / SIGUSR1 during the block and forward them to the ranks ``trainer``'s launcher started.

    Example:
        >>> import os, signal
        >>> from lightning.pytorch import Trainer
        >>> with signals_forwarded(Trainer(logger=False)) as received:
        ...     os.kill(os.getpid(), signal.SIGUSR1)
        >>> received.signum == signal.SIGUSR1
        True
    """
    received = Received()
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handle(signum: int, frame: FrameType | None) -> None:
        first = received.signum is None
        received.signum = signum
        launcher = trainer.strategy.launcher
        if first and launcher is not None and getattr(launcher, "procs", None):
            launcher.kill(signum)

    previous = {signum: signal.getsignal(signum) for signum in PREEMPTION_SIGNALS}
    for signum in PREEMPTION_SIGNALS:
        signal.signal(signum, handle)
    try:
        yield received
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


def _preemption_callbacks(trainer: Any) -> list[PreemptionCheckpoint]:
    return [c for c in getattr(trainer, "callbacks", []) if isinstance(c, PreemptionCheckpoint)]


def preemption_of(trainer: Any, received: Received | None) -> int | None:
    """The signal ``fit`` stopped for (seen by a rank in this process or by this waiting process), else ``None``.

    Example:
        >>> from lightning.pytorch import Trainer
        >>> preemption_of(Trainer(logger=False), Received(15))
        15
    """
    for callback in _preemption_callbacks(trainer):
        if callback.preempted_by is not None:
            return callback.preempted_by
    return received.signum if received is not None else None


def preempted_checkpoint(trainer: Any, run_dir: str | Path) -> Path:
    """The checkpoint written at the preemption (``run_dir/checkpoints/last.ckpt`` unless a callback says).

    Example:
        >>> from lightning.pytorch import Trainer
        >>> preempted_checkpoint(Trainer(logger=False), "run").as_posix()
        'run/checkpoints/last.ckpt'
    """
    for callback in _preemption_callbacks(trainer):
        return callback.checkpoint_path or callback.dirpath / callback.filename
    return Path(run_dir) / "checkpoints" / "last.ckpt"


def resumable_checkpoint(ckpt_path: str | None, run_dir: str | Path) -> str | None:
    """``ckpt_path`` if it loads, else the run's newest loadable checkpoint (one ``warning:`` line says which).

    Example:
        >>> resumable_checkpoint(None, "run") is None
        True
    """
    if ckpt_path is None:
        return None
    path = Path(ckpt_path)
    folder = Path(run_dir) if path.parent.name == "checkpoints" and path.parent.parent == Path(run_dir) else None
    return str(loadable_checkpoint(path, run_dir=folder, quiet=global_rank() != 0))


def requeued(run_dir: str | Path) -> Path | None:
    """The checkpoint to continue from when this launch restarts an earlier one in ``run_dir``, else ``None``.

    A restart is SLURM's requeue (``SLURM_RESTART_COUNT`` > 0), a torchrun restart
    (``TORCHELASTIC_RESTART_COUNT`` > 0), or a folder whose ``summary.json`` says ``preempted``; the
    checkpoint is the newest loadable one, whatever its name (``last.ckpt``, a per-step file, an ``hpc_ckpt``).

    Example:
        >>> import tempfile
        >>> requeued(tempfile.mkdtemp()) is None
        True
    """
    run_dir = Path(run_dir)
    restarted = any(int(os.environ.get(k, "0") or 0) > 0 for k in ("SLURM_RESTART_COUNT", "TORCHELASTIC_RESTART_COUNT"))
    try:
        status = json.loads((run_dir / "summary.json").read_text()).get("status")
    except (OSError, ValueError, AttributeError):
        status = None
    if not (restarted or status == "preempted"):
        return None
    if not (run_dir / "config.yaml").is_file():
        return None
    return newest_checkpoint(run_dir)
