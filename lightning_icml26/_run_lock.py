"""One run per folder: a lock file that names its holder, refused while the holder lives, taken over after.

``icml26 run`` / ``resume`` hold ``<run_dir>/.lock`` from the moment the folder is chosen until the run ends.
The file holds the holder's host name and process id. A second run into the same folder finds it, checks the
holder (same host: is the process still there?) and is refused with a :class:`RunFolderBusy` naming the folder
and the pid; a lock left by a killed run (its process is gone) is taken over. Creation is ``O_EXCL``, so two
runs that start together cannot both win. Only global rank zero takes the lock (the other ranks of the same
launch write into the folder under it).
"""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path
from types import TracebackType

__all__ = ["LOCK_NAME", "RunFolderBusy", "RunFolderLock", "check_run_dir"]

#: File name of the lock inside the run folder.
LOCK_NAME = ".lock"


class RunFolderBusy(RuntimeError):
    """Another live process holds the run folder's lock."""


def check_run_dir(run_dir: str | Path) -> None:
    """Raise :class:`NotADirectoryError` with one clear line when ``run_dir`` or a parent is a regular file.

    Example:
        >>> import tempfile, pathlib
        >>> blocker = pathlib.Path(tempfile.mkdtemp()) / "file"
        >>> _ = blocker.write_text("x")
        >>> check_run_dir(blocker / "run")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        NotADirectoryError: run_dir '.../file/run' cannot be created: '.../file' is a file, not a folder
    """
    path = Path(run_dir)
    for candidate in (path, *path.parents):
        if candidate.exists():
            if not candidate.is_dir():
                raise NotADirectoryError(
                    f"run_dir '{path}' cannot be created: '{candidate}' is a file, not a folder"
                    if candidate != path
                    else f"run_dir '{path}' is a file, not a folder"
                )
            return


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by someone else
        return True
    return True


class RunFolderLock:
    """Hold ``<run_dir>/.lock`` for the duration of a ``with`` block (or between :meth:`acquire`/:meth:`release`).

    Args:
        run_dir: the run folder (created if missing).

    Raises:
        RunFolderBusy: on :meth:`acquire`, when a live process on this host (or any process on another host)
            holds the lock; the message names the folder and the holder's pid.

    Example:
        >>> import os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> with RunFolderLock(folder) as lock:
        ...     holder = RunFolderLock.holder(folder)
        ...     try:
        ...         RunFolderLock(folder).acquire()
        ...     except RunFolderBusy as busy:
        ...         print(str(busy).startswith(f"run folder '{folder}' is in use by process {os.getpid()}"))
        True
        >>> holder == (socket.gethostname(), os.getpid()), RunFolderLock.holder(folder)
        (True, None)
    """

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_NAME
        self._held = False

    @staticmethod
    def holder(run_dir: str | Path) -> tuple[str, int] | None:
        """``(host, pid)`` written in the folder's lock, or ``None`` when there is no readable lock."""
        try:
            host, _, pid = (Path(run_dir) / LOCK_NAME).read_text().strip().partition(" ")
            return host, int(pid)
        except (OSError, ValueError):
            return None

    def _stale(self) -> bool:
        found = self.holder(self.run_dir)
        if found is None:
            return True  # an empty or torn file: its writer died between create and write
        host, pid = found
        return host == socket.gethostname() and not _alive(pid)

    def acquire(self) -> RunFolderLock:
        """Take the lock, taking over a stale one; raise :class:`RunFolderBusy` if a live run holds it."""
        check_run_dir(self.run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        for _ in range(3):
            try:
                handle = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                if not self._stale():
                    host, pid = self.holder(self.run_dir) or ("?", -1)
                    where = "" if host == socket.gethostname() else f" on host {host}"
                    raise RunFolderBusy(
                        f"run folder '{self.run_dir}' is in use by process {pid}{where}; wait for it to end or"
                        " choose another run_dir"
                    ) from None
                try:  # stale: remove it and race for a fresh one (O_EXCL picks one winner)
                    self.path.unlink()
                except OSError as error:
                    if error.errno != errno.ENOENT:
                        raise
                continue
            with os.fdopen(handle, "w") as out:
                out.write(f"{socket.gethostname()} {os.getpid()}\n")
            self._held = True
            return self
        raise RunFolderBusy(f"run folder '{self.run_dir}' is being locked by another process; try again")

    def release(self) -> None:
        """Remove the lock if this object holds it (a lock taken over by someone else is left alone)."""
        if not self._held:
            return
        self._held = False
        if self.holder(self.run_dir) == (socket.gethostname(), os.getpid()):
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> RunFolderLock:
        return self.acquire()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.release()
