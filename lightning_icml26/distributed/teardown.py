"""Ending a distributed run: a barrier, then ``destroy_process_group()``, under a stack-dumping watchdog."""

from __future__ import annotations

import faulthandler

import torch.distributed as dist

__all__ = ["EXIT_WATCHDOG_SECONDS", "end_process_group"]

#: Seconds a process may spend after training before it is considered hung at exit; it then prints every
#: thread's stack (``faulthandler``) and exits non-zero instead of hanging silently.
EXIT_WATCHDOG_SECONDS = 120.0


def end_process_group(watchdog_seconds: float = EXIT_WATCHDOG_SECONDS) -> None:
    """End a distributed run cleanly: a barrier, then ``destroy_process_group()``.

    Without this, a rank whose peers already left can linger in a collective or in the store's
    shutdown, a ``torchrun`` job does not exit after training ends, and a process that exits with its
    gloo groups alive can abort in their threads' destructors. A watchdog armed first turns a hang here
    into a stack dump and a non-zero exit.

    Args:
        watchdog_seconds: seconds before a hung teardown dumps the stacks and exits (``<= 0`` disables).

    Example:
        >>> end_process_group()  # no process group: nothing to do
    """
    if not (dist.is_available() and dist.is_initialized()):
        return
    if watchdog_seconds > 0:
        faulthandler.dump_traceback_later(watchdog_seconds, exit=True)
    try:
        dist.barrier()
    finally:
        dist.destroy_process_group()
        faulthandler.cancel_dump_traceback_later()
