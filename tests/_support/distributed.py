"""Run a function on N real ``gloo`` ranks on loopback and collect each rank's result.

Every distributed test uses :func:`run_on_ranks`. The function must be defined at module level (it is
pickled into spawned processes); it receives ``(rank, world_size, *args)`` and runs inside an
initialised default process group. Its return value (tensors are moved to CPU) comes back in rank order.
An exception on any rank fails the call with that rank's traceback; a hang fails after ``timeout`` seconds
and the processes are killed.
"""

from __future__ import annotations

import io
import os
import socket
import traceback
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

__all__ = ["free_port", "run_on_ranks"]


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _to_cpu(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_to_cpu(v) for v in value)
    return value


def _worker(rank: int, world_size: int, port: int, fn: Callable[..., Any], args: tuple, queue: Any) -> None:
    os.environ.update(
        {
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "RANK": str(rank),
            "WORLD_SIZE": str(world_size),
            "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": str(world_size),
        }
    )
    torch.set_num_threads(1)
    try:
        dist.init_process_group("gloo", rank=rank, world_size=world_size)
        result = fn(rank, world_size, *args)
        buffer = io.BytesIO()  # bytes, not shared-memory tensors: the child may exit before the parent reads
        torch.save(_to_cpu(result), buffer)
        queue.put((rank, "ok", buffer.getvalue()))
    except BaseException:
        queue.put((rank, "error", traceback.format_exc()))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def run_on_ranks(fn: Callable[..., Any], world_size: int = 2, *args: Any, timeout: float = 180.0) -> list[Any]:
    """Run ``fn(rank, world_size, *args)`` on ``world_size`` spawned gloo ranks; return results by rank.

    Args:
        fn: a module-level function.
        world_size: number of ranks (1 is allowed and still builds a process group).
        *args: extra picklable arguments.
        timeout: seconds before the run is declared hung and killed.

    Returns:
        The ranks' return values, index = rank.

    Raises:
        RuntimeError: if a rank raised (its traceback is in the message) or the run timed out.
    """
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    port = free_port()
    procs = [ctx.Process(target=_worker, args=(r, world_size, port, fn, args, queue)) for r in range(world_size)]
    for proc in procs:
        proc.start()
    results: dict[int, Any] = {}
    errors: list[str] = []
    import time

    deadline = time.monotonic() + timeout
    while len(results) + len(errors) < world_size:
        if time.monotonic() > deadline:
            break
        if queue.empty():
            if all(not p.is_alive() for p in procs) and queue.empty():
                break
            time.sleep(0.02)
            continue
        rank, status, payload = queue.get()
        if status == "ok":
            results[rank] = torch.load(io.BytesIO(payload), weights_only=False)
        else:
            errors.append(f"rank {rank} failed:\n{payload}")
            break
    for proc in procs:
        proc.join(timeout=5 if not errors else 1)
        if proc.is_alive():
            proc.kill()
            proc.join()
    if errors:
        raise RuntimeError("\n".join(errors))
    if len(results) < world_size:
        missing = sorted(set(range(world_size)) - set(results))
        raise RuntimeError(f"ranks {missing} returned nothing within {timeout:.0f} s (hung or crashed)")
    return [results[r] for r in range(world_size)]
