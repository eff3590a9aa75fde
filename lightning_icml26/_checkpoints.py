"""Checkpoints a crash cannot break: atomic writes, the previous one kept, the newest loadable one found.

* :class:`AtomicCheckpointIO` is Lightning's ``TorchCheckpointIO`` writing through a temporary file in the
  same folder, ``fsync`` and ``os.replace``: a full disk or a kill leaves the old file (or none), never a
  torn one. When it replaces a file it keeps the one it replaces as ``<name>.prev.ckpt``, so the last two good
  checkpoints of ``last.ckpt`` always exist.
* :func:`checkpoint_problem` says in one line why a checkpoint cannot be loaded (``None`` if it can).
* :func:`newest_checkpoint` picks, among a run folder's checkpoints (``checkpoints/*.ckpt`` and Lightning's
  SLURM ``hpc_ckpt_*.ckpt``), the loadable one with the highest global step, whatever its name.
* :func:`loadable_checkpoint` returns the given checkpoint, or when it cannot be loaded the newest loadable
  one beside it, saying so in one line.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO
from lightning.fabric.utilities.types import _PATH
from typing_extensions import override

__all__ = [
    "AtomicCheckpointIO",
    "checkpoint_problem",
    "loadable_checkpoint",
    "newest_checkpoint",
    "previous_path",
    "use_atomic_checkpoints",
]


def previous_path(path: str | Path) -> Path:
    """Where :class:`AtomicCheckpointIO` keeps the checkpoint that ``path`` replaced.

    Example:
        >>> previous_path("run/checkpoints/last.ckpt").name
        'last.prev.ckpt'
    """
    path = Path(path)
    return path.with_name(f"{path.stem}.prev{path.suffix}")


def _file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


class AtomicCheckpointIO(TorchCheckpointIO):
    """``TorchCheckpointIO`` that writes atomically and keeps the replaced checkpoint as ``<name>.prev.ckpt``.

    Args:
        keep_previous: keep the file a save replaces (default ``True``).

    Example:
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> io = AtomicCheckpointIO()
        >>> io.save_checkpoint({"global_step": 1}, folder / "last.ckpt")
        >>> io.save_checkpoint({"global_step": 2}, folder / "last.ckpt")
        >>> sorted(p.name for p in folder.iterdir())
        ['last.ckpt', 'last.prev.ckpt']
        >>> io.load_checkpoint(folder / "last.prev.ckpt")["global_step"]
        1
    """

    def __init__(self, keep_previous: bool = True) -> None:
        super().__init__()
        self.keep_previous = keep_previous

    @override
    def save_checkpoint(self, checkpoint: dict[str, Any], path: _PATH, storage_options: Any | None = None) -> None:
        if storage_options is not None:
            raise TypeError(f"AtomicCheckpointIO.save_checkpoint takes no storage_options, got {storage_options!r}")
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as out:
                torch.save(checkpoint, out)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(tmp, _file_mode())
            if self.keep_previous and target.is_file():
                os.replace(target, previous_path(target))
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @override
    def remove_checkpoint(self, path: _PATH) -> None:
        super().remove_checkpoint(path)
        previous_path(path).unlink(missing_ok=True)


def _describe(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:160]}" if text else type(error).__name__


def _read(path: Path) -> dict[str, Any]:
    if path.is_dir():  # a distributed checkpoint: its metadata file holds the loop state
        path = path / "meta.pt"
    try:
        state = torch.load(path, map_location="cpu", weights_only=False, mmap=True)
    except RuntimeError as error:
        if "mmap" not in str(error):
            raise
        state = torch.load(path, map_location="cpu", weights_only=False)  # an old (non-zip) file
    if not isinstance(state, dict) or "global_step" not in state:
        raise ValueError("not a Lightning checkpoint (no global_step)")
    return state


def checkpoint_problem(path: str | Path) -> str | None:
    """Why the checkpoint at ``path`` cannot be loaded, in one line; ``None`` when it loads.

    Example:
        >>> import tempfile, pathlib
        >>> bad = pathlib.Path(tempfile.mkdtemp()) / "last.ckpt"
        >>> _ = bad.write_bytes(b"garbage")
        >>> checkpoint_problem(bad)  # doctest: +ELLIPSIS
        'UnpicklingError: ...'
        >>> AtomicCheckpointIO().save_checkpoint({"global_step": 3}, bad)
        >>> checkpoint_problem(bad) is None
        True
    """
    try:
        _read(Path(path))
    except Exception as error:
        return _describe(error)
    return None


def _candidates(run_dir: Path) -> list[Path]:
    found = [*run_dir.glob("checkpoints/*.ckpt"), *run_dir.glob("hpc_ckpt_*.ckpt")]
    return [p for p in found if not p.name.startswith(".")]


def newest_checkpoint(
    run_dir: str | Path, exclude: tuple[Path, ...] = (), report: Callable[[str], None] | None = None
) -> Path | None:
    """The loadable checkpoint of ``run_dir`` with the highest global step (the newer file on a tie).

    Looks at ``run_dir/checkpoints/*.ckpt`` (``last.ckpt``, its ``.prev`` copy, per-step and best checkpoints)
    and Lightning's SLURM ``run_dir/hpc_ckpt_*.ckpt``. Unloadable files are skipped, each named through
    ``report``.

    Args:
        run_dir: a run folder.
        exclude: files not to consider.
        report: called with one line per unloadable file.

    Example:
        >>> import tempfile, pathlib
        >>> run = pathlib.Path(tempfile.mkdtemp())
        >>> io = AtomicCheckpointIO()
        >>> io.save_checkpoint({"global_step": 9}, run / "hpc_ckpt_1.ckpt")
        >>> io.save_checkpoint({"global_step": 12}, run / "checkpoints" / "last.ckpt")
        >>> newest_checkpoint(run).name
        'last.ckpt'
    """
    scored = []
    skipped = {p.resolve() for p in exclude}
    for path in _candidates(Path(run_dir)):
        if path.resolve() in skipped:
            continue
        try:
            state = _read(path)
        except Exception as error:
            if report is not None:
                report(f"checkpoint '{path}' cannot be loaded ({_describe(error)}); skipped")
            continue
        scored.append((int(state.get("global_step", 0)), path.stat().st_mtime_ns, path))
    return max(scored)[2] if scored else None


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


def loadable_checkpoint(path: str | Path, run_dir: str | Path | None = None, quiet: bool = False) -> Path:
    """``path`` when it loads; otherwise the newest loadable checkpoint of the same run, saying so in one line.

    Args:
        path: the checkpoint asked for.
        run_dir: the run folder to fall back in (default: the folder above ``path``'s ``checkpoints/``; none
            for a file elsewhere, which falls back to its ``.prev`` copy only).
        quiet: do not print the fallback line (ranks other than zero).

    Raises:
        FileNotFoundError: ``path`` does not exist and nothing else can be loaded.
        ValueError: no checkpoint of the run can be loaded; the message names ``path`` and why.

    Example:
        >>> import tempfile, pathlib
        >>> run = pathlib.Path(tempfile.mkdtemp())
        >>> last = run / "checkpoints" / "last.ckpt"
        >>> io = AtomicCheckpointIO()
        >>> io.save_checkpoint({"global_step": 4}, last)
        >>> io.save_checkpoint({"global_step": 8}, last)
        >>> _ = last.write_bytes(b"torn")
        >>> loadable_checkpoint(last, quiet=True).name
        'last.prev.ckpt'
    """
    path = Path(path)
    problem = checkpoint_problem(path) if path.exists() else "no such file"
    if problem is None:
        return path
    folder = Path(run_dir) if run_dir is not None else None
    if folder is None and path.parent.name == "checkpoints":
        folder = path.parent.parent
    previous = previous_path(path)
    fallback: Path | None = None
    if previous.is_file() and checkpoint_problem(previous) is None:
        fallback = previous  # the one this file replaced
    elif folder is not None:
        fallback = newest_checkpoint(folder, exclude=(path, previous), report=None if quiet else _warn)
    if fallback is None:
        if not path.exists():
            raise FileNotFoundError(f"Checkpoint file not found: {path}")
        raise ValueError(f"checkpoint '{path}' cannot be loaded ({problem}) and no earlier checkpoint loads")
    if not quiet:
        _warn(f"checkpoint '{path}' cannot be loaded ({problem}); resuming from '{fallback}' instead")
    return fallback


def use_atomic_checkpoints(trainer: Any) -> None:
    """Give ``trainer``'s strategy an :class:`AtomicCheckpointIO` unless it was given another ``CheckpointIO``.

    Example:
        >>> from lightning.pytorch import Trainer
        >>> trainer = Trainer(logger=False, enable_progress_bar=False)
        >>> use_atomic_checkpoints(trainer)
        >>> type(trainer.strategy.checkpoint_io).__name__
        'AtomicCheckpointIO'
    """
    if type(trainer.strategy.checkpoint_io) is TorchCheckpointIO:
        trainer.strategy.checkpoint_io = AtomicCheckpointIO()
