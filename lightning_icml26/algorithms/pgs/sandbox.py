"""Run model-written programs in an isolated child process; judge their outputs outside it.

The candidate's process only *produces outputs*: for each input, the return value (encoded as plain
data) or the kind of error, written to an inherited pipe that it cannot address by any path. The caller
decodes those values and compares them with the expected ones itself; property checks run in a second,
equally isolated process that never sees the candidate, on the decoded ``(args, result)`` pairs. A
candidate that patches the worker, writes files or fakes records can only change what it reports as its
own outputs, never a verdict.

Isolation (``isolation=``):

- ``"bwrap"`` (default): each child runs under `bubblewrap <https://github.com/containers/bubblewrap>`_
  in new user, PID, network (loopback only), IPC, UTS and mount namespaces; the root is empty except
  read-only binds of ``/usr`` and the interpreter, a fresh ``/proc`` and ``/dev``, and a private
  size-limited tmpfs at ``/tmp``, the only writable place; no capabilities, no environment but ``PATH``,
  ``HOME`` and ``LANG``; ``--die-with-parent``, so ending a child ends its whole namespace.
- ``"process"`` (opt-in, with a warning): the same child without namespaces. It still computes verdicts
  outside and keeps the limits below, but runs as the caller's user on the caller's files and network.

In both, the child has ``RLIMIT_CPU``, ``RLIMIT_AS``, ``RLIMIT_FSIZE``, ``RLIMIT_NPROC`` and no core
files, and (on x86-64 and AArch64 Linux) a seccomp filter refusing new processes, signals to other
processes and ``ptrace``; every case has a wall clock kept by the caller, and so does the whole run.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import json
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from lightning_icml26._optional import require
from lightning_icml26.algorithms.pgs._runner import decode

__all__ = [
    "ISOLATIONS",
    "OUTCOMES",
    "CaseResult",
    "RunResult",
    "Sandbox",
    "SandboxUnavailableError",
    "ShrinkIncompleteError",
]

OUTCOMES = ("pass", "wrong_answer", "property_violation", "runtime_error", "timeout", "memory", "resource")
"""The outcome kinds: the paper's Pass, WA (on a public test), AssertionError, RuntimeError and TLE, plus
``memory`` (the memory limit) and ``resource`` (the process-count, file-size or output-size limit)."""

ISOLATIONS = ("bwrap", "process")
"""The isolation modes of :class:`Sandbox`."""

_RUNNER = Path(__file__).with_name("_runner.py")
_STARTUP_SECONDS = 10.0  # allowance for the child to start (not counted against a case)
_GRACE_SECONDS = 0.5  # past a case's limit, the caller stops waiting and kills the child

INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`, as `make data` does; Fedora: "
    "`dnf install bubblewrap`; Arch: `pacman -S bubblewrap`) and allow unprivileged user namespaces "
    "(`sysctl kernel.unprivileged_userns_clone=1`; on Ubuntu 24.04 also "
    "`sysctl kernel.apparmor_restrict_unprivileged_userns=0`), or opt into the weaker "
    'Sandbox(isolation="process")'
)

PROCESS_WARNING = (
    "Sandbox(isolation='process') runs model-written code as your user without namespaces: verdicts are "
    "still computed outside the candidate and CPU, memory, file-size and process limits still hold, but it "
    "does NOT stop the candidate from reading or writing your files, reading other processes' memory and "
    "environments through /proc, or opening network connections. Use isolation='bwrap' for untrusted code."
)


class SandboxUnavailableError(RuntimeError):
    """The default OS isolation (bubblewrap with user namespaces) cannot run on this machine."""


class ShrinkIncompleteError(RuntimeError):
    """Hypothesis's search stopped at a sandbox limit (CPU, wall clock or memory) before it reported an input.

    A program that hangs on most inputs does this: every example and every shrinking step runs until the
    per-case limit, so the search spends the child's CPU budget before it ends. The caller decides what to do
    without a shrunk input; :class:`~lightning_icml26.algorithms.pgs.PGSRefiner` falls back to the fewest-token
    failure.

    Attributes:
        kind: the outcome that stopped the child (``"timeout"``, ``"resource"`` or ``"runtime_error"``).
        reason: the sandbox's explanation, e.g. ``"the process ran past its CPU limit of 20 s"``.
    """

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(f"Hypothesis shrinking did not finish: {kind}: {reason}")
        self.kind = kind
        self.reason = reason


@dataclass(frozen=True)
class CaseResult:
    """The outcome of one input.

    Attributes:
        input: the argument tuple as Python source (``repr``).
        kind: one of :data:`OUTCOMES`.
        output: ``repr`` of the returned value (``None`` when nothing was returned).
        expected: ``repr`` of the expected value of a public test that was answered wrongly.
        error: the error message (exception type and text, or the violated property's message).
        property: the name of the violated property.
        lines: the program lines the call executed (only when run with ``trace=True``; reported by the
            candidate's process, so informative only, never part of a verdict).
    """

    input: str
    kind: str
    output: str | None = None
    expected: str | None = None
    error: str | None = None
    property: str | None = None
    lines: tuple[int, ...] | None = None


@dataclass(frozen=True)
class RunResult:
    """All case outcomes of one run.

    Attributes:
        cases: one :class:`CaseResult` per input, in input order.
    """

    cases: list[CaseResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Whether every case passed."""
        return all(c.kind == "pass" for c in self.cases)

    @property
    def failures(self) -> list[CaseResult]:
        """The cases that did not pass."""
        return [c for c in self.cases if c.kind != "pass"]


def _positive(name: str, value: Any, kind: type = float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be a positive {kind.__name__}, got {value!r}")
    if kind is int and not isinstance(value, int):
        raise ValueError(f"{name} must be a positive int, got {value!r}")


def _literal(name: str, text: str) -> str:
    if not isinstance(text, str):
        raise TypeError(f"{name} must be Python literal source (a str), got {type(text).__name__}: {text!r}")
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError) as exc:
        raise ValueError(f"{name} must be a Python literal, got {text!r} ({exc})") from None
    return text


def _short(value: Any, limit: int = 300) -> str:
    try:
        text = repr(value)
    except (ValueError, RecursionError) as exc:  # e.g. an int past the digit limit of str()
        text = f"<unprintable {type(exc).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _interpreter() -> tuple[str, list[str]]:
    """The real interpreter binary and the folders it needs outside ``/usr``."""
    binary = os.path.realpath(sys.executable)
    roots = {os.path.realpath(p) for p in (sys.base_prefix, sys.base_exec_prefix)}
    return binary, sorted(r for r in roots if not r.startswith("/usr/") and r != "/usr")


def _bwrap_args(binds: Sequence[str], tmp_mb: int) -> list[str]:
    """The bubblewrap command line up to (not including) the command."""
    args = ["bwrap", "--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534"]
    args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--hostname", "sandbox"]
    # the private /tmp first: binds that live under /tmp (a virtual environment there) are mounted on top of it
    args += ["--size", str(tmp_mb * 1024 * 1024), "--tmpfs", "/tmp"]
    args += ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for path in binds:
        args += ["--ro-bind", path, path]
    args += ["--ro-bind", str(_RUNNER), "/opt/pgs/_runner.py"]
    args += ["--proc", "/proc", "--dev", "/dev"]
    args += ["--remount-ro", "/", "--chdir", "/tmp", "--clearenv"]
    args += ["--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/tmp", "--setenv", "LANG", "C.UTF-8"]
    return args


@functools.cache
def _bwrap_problem() -> str | None:
    """Why bubblewrap cannot isolate a child here (``None`` when it can); probed once per process."""
    if shutil.which("bwrap") is None:
        return "the bubblewrap program `bwrap` is not on PATH"
    binary, roots = _interpreter()
    command = [*_bwrap_args(roots, 1), "--", binary, "-I", "-S", "-c", "print('ok')"]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=30, env={})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`bwrap` did not run: {exc}"
    if proc.returncode != 0 or proc.stdout.strip() != "ok":
        return f"`bwrap` could not create the namespaces: {proc.stderr.strip() or proc.returncode}"
    return None


def _judged(text: str, record: dict[str, Any], wanted: str | None, trace: bool) -> CaseResult:
    """The verdict on one reported output, computed here: ``pass`` (properties aside), ``wrong_answer`` or the error."""
    lines = tuple(int(n) for n in record["l"]) if trace and isinstance(record.get("l"), list) else None
    if "v" not in record:
        kind = record.get("k") if record.get("k") in OUTCOMES[3:] else "runtime_error"
        return CaseResult(text, str(kind), error=str(record.get("e", ""))[:500], lines=lines)
    try:
        value = decode(record["v"])
    except (ValueError, RecursionError) as exc:
        return CaseResult(text, "runtime_error", error=f"unreadable output: {exc}", lines=lines)
    if wanted is not None:
        target = ast.literal_eval(wanted)
        try:
            same = bool(value == target)
        except (RecursionError, TypeError, ValueError):
            same = False
        if not same:
            return CaseResult(text, "wrong_answer", _short(value), _short(target), lines=lines)
    return CaseResult(text, "pass", _short(value), lines=lines)


class _Spawned(NamedTuple):
    """A started child: the process, the read end of its channel, its scratch folder (process mode)."""

    proc: subprocess.Popen[bytes]
    read_fd: int
    scratch: Path | None

    def discard(self) -> None:
        """End a child that was never used."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        os.close(self.read_fd)
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


class _Reader:
    """Reads a child's records from its channel: in order, one per item, each within its deadline."""

    def __init__(self, start: int, count: int, item_seconds: float, limit_mb: int) -> None:
        self.start, self.count, self.item_seconds, self.limit_mb = start, count, item_seconds, limit_mb
        self.records: list[dict[str, Any]] = []
        self.expect = -1  # the load record first
        self.unloaded = False  # the load record reported an error

    @property
    def done(self) -> bool:
        return self.unloaded or self.expect >= self.count

    def take(self, line: bytes) -> tuple[str, str] | None:
        """Accept one line (``None``) or say why the child is stopped."""
        try:
            record = json.loads(line)
            index = record["i"]
        except (ValueError, TypeError, KeyError):
            return "runtime_error", "the child wrote a malformed record"
        if index != self.expect:
            return "runtime_error", f"the child reported item {index!r} out of order"
        self.records.append(record)
        self.unloaded = index == -1 and "e" in record
        self.expect = self.start if index == -1 else index + 1
        return None

    def read(self, fd: int, deadline: float, run_deadline: float) -> tuple[str, str] | None:
        """Read until every item is in, the child closes the channel, or a deadline passes."""
        buffer = b""
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while not self.done:
                now = time.monotonic()
                if now >= run_deadline:
                    return "wall", ""
                if now >= deadline:
                    return "timeout", f"ran past {self.item_seconds} s (stopped by the caller)"
                if not selector.select(min(deadline, run_deadline) - now):
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return None  # the child closed the channel (it exited)
                *lines, buffer = (buffer + chunk).split(b"\n")
                for line in lines:
                    stopped = self.take(line)
                    if stopped is not None:
                        return stopped
                    deadline = time.monotonic() + self.item_seconds + _GRACE_SECONDS
                    if self.done:
                        return None
                if len(buffer) > self.limit_mb * 1024 * 1024:
                    return "resource", f"the child's output record exceeds {self.limit_mb} MiB"
        return None


class Sandbox:
    r"""Executes a function from candidate source on inputs, optionally checking outputs and properties.

    Args:
        case_seconds: wall-clock limit of one case (and of one property check); the caller kills the
            child half a second past it.
        cpu_seconds: CPU-time limit of each child process (``RLIMIT_CPU``).
        memory_mb: address-space limit of each child process in MiB (``RLIMIT_AS``).
        wall_seconds: wall-clock limit of one whole :meth:`run` (cases not reached by then time out).
        file_mb: largest file a child may write, in MiB (``RLIMIT_FSIZE``; the tmpfs holds four such files),
            and the largest output record read back.
        processes: ``RLIMIT_NPROC`` of a child (threads count); new processes are refused outright by
            the seccomp filter where it applies.
        isolation: ``"bwrap"`` (default; raises :class:`SandboxUnavailableError` where bubblewrap or user
            namespaces are missing) or ``"process"`` (no namespaces; warns what it does not stop).

    Raises:
        ValueError: if a limit is not positive or ``isolation`` is unknown.
        SandboxUnavailableError: if ``isolation="bwrap"`` cannot run here; the message says how to fix it.

    Example:
        >>> box = Sandbox(case_seconds=0.5, wall_seconds=10)
        >>> src = "def add(a, b):\n    return a - b if a > 5 else a + b"
        >>> run = box.run(src, "add", ["(1, 2)", "(9, 1)"], expected=["3", "10"])
        >>> [c.kind for c in run.cases], run.cases[1].output
        (['pass', 'wrong_answer'], '8')
        >>> box.run("def f(n):\n    while True:\n        pass", "f", ["(1,)"]).cases[0].kind
        'timeout'
    """

    def __init__(
        self,
        case_seconds: float = 1.0,
        cpu_seconds: int = 10,
        memory_mb: int = 512,
        wall_seconds: float = 30.0,
        file_mb: int = 16,
        processes: int = 16,
        isolation: str = "bwrap",
    ) -> None:
        _positive("case_seconds", case_seconds)
        _positive("cpu_seconds", cpu_seconds, int)
        _positive("memory_mb", memory_mb, int)
        _positive("wall_seconds", wall_seconds)
        _positive("file_mb", file_mb, int)
        _positive("processes", processes, int)
        if isolation not in ISOLATIONS:
            raise ValueError(f"isolation must be one of {ISOLATIONS}, got {isolation!r}")
        self.case_seconds = float(case_seconds)
        self.cpu_seconds = int(cpu_seconds)
        self.memory_mb = int(memory_mb)
        self.wall_seconds = float(wall_seconds)
        self.file_mb = int(file_mb)
        self.processes = int(processes)
        self.isolation = isolation
        if isolation == "bwrap":
            problem = _bwrap_problem()
            if problem is not None:
                raise SandboxUnavailableError(f"Sandbox(isolation='bwrap') cannot run here: {problem}; {INSTALL_HINT}")
        else:
            warnings.warn(PROCESS_WARNING, UserWarning, stacklevel=2)

    def __repr__(self) -> str:
        return (
            f"Sandbox(case_seconds={self.case_seconds}, cpu_seconds={self.cpu_seconds}, memory_mb={self.memory_mb}, "
            f"wall_seconds={self.wall_seconds}, file_mb={self.file_mb}, processes={self.processes}, "
            f"isolation={self.isolation!r})"
        )

    def _limits(self) -> None:  # runs in the child between fork and exec
        resource.setrlimit(resource.RLIMIT_CPU, (self.cpu_seconds, self.cpu_seconds + 1))
        memory = self.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        size = self.file_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    def _command(self, mode: str, fd: int, extra: Sequence[str] = ()) -> list[str]:
        binary, roots = _interpreter()
        if self.isolation == "process":
            return [binary, "-I", "-S", str(_RUNNER), mode, str(fd)]
        binds = sorted({*roots, *extra})
        return [*_bwrap_args(binds, 4 * self.file_mb), "--", binary, "-I", "-S", "/opt/pgs/_runner.py", mode, str(fd)]

    def _spawn(self, mode: str, binds: Sequence[str] = ()) -> _Spawned:
        """Start a child that waits for its spec on standard input."""
        read_fd, write_fd = os.pipe()
        scratch = None
        try:
            if self.isolation == "process":
                scratch = Path(tempfile.mkdtemp(prefix="pgs-sandbox-"))
            proc = subprocess.Popen(
                self._command(mode, write_fd, binds),
                cwd=scratch,
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"} if scratch is not None else {},
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(write_fd,),
                preexec_fn=self._limits,
                start_new_session=True,
            )
        except BaseException:
            os.close(read_fd)
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
            raise
        finally:
            os.close(write_fd)
        return _Spawned(proc, read_fd, scratch)

    def _child(
        self,
        mode: str,
        spec: dict[str, Any],
        count: int,
        run_deadline: float,
        binds: Sequence[str] = (),
        item_seconds: float | None = None,
        spawned: _Spawned | None = None,
    ) -> tuple[list[dict[str, Any]], tuple[str, str] | None]:
        """Run one child from item ``spec["start"]``; return its records in order and, if it stopped early, why.

        A record is accepted only for the next item in order (a malformed or out-of-order line ends the
        child as a ``runtime_error``); the load record (index ``-1``) comes first. ``spawned``: a child
        started beforehand (by :meth:`_spawn`) to take the spec.
        """
        proc, read_fd, scratch = spawned or self._spawn(mode, binds)
        payload = json.dumps({**spec, "processes": self.processes, "case_seconds": self.case_seconds}).encode()

        def feed() -> None:
            with contextlib.suppress(OSError):
                assert proc.stdin is not None
                proc.stdin.write(payload)
                proc.stdin.close()

        threading.Thread(target=feed, daemon=True).start()
        item_seconds = self.case_seconds if item_seconds is None else item_seconds
        reader = _Reader(int(spec["start"]), count, item_seconds, self.file_mb)
        try:
            stopped = reader.read(read_fd, time.monotonic() + _STARTUP_SECONDS + self.case_seconds, run_deadline)
        finally:
            os.close(read_fd)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)  # bwrap's namespace dies with it (--die-with-parent)
            code = proc.wait()
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
        if stopped is not None and stopped[0] == "wall":
            stopped = ("timeout", f"the run ran past its wall clock of {self.wall_seconds} s")
        if stopped is None and reader.expect < count and not reader.unloaded:
            stopped = self._death(code)
        return reader.records, stopped

    def _death(self, code: int) -> tuple[str, str]:
        """Why a child that closed its channel early died, from its exit status."""
        sig = -code if code < 0 else code - 128 if self.isolation == "bwrap" and code > 128 else 0
        if sig in (signal.SIGXCPU, signal.SIGKILL):
            return "timeout", f"the process ran past its CPU limit of {self.cpu_seconds} s"
        if sig == signal.SIGXFSZ:
            return "resource", f"the process wrote past the file-size limit of {self.file_mb} MiB"
        return "runtime_error", f"the process died (exit status {code})"

    def _items(
        self,
        mode: str,
        spec: dict[str, Any],
        count: int,
        run_deadline: float,
        item_seconds: float | None = None,
        spawned: _Spawned | None = None,
    ) -> list[dict[str, Any]]:
        """One record per item, restarting a child after an item that killed it (the first may be ``spawned``)."""
        out: list[dict[str, Any]] = []
        while len(out) < count:
            start = {**spec, "start": len(out)}
            records, stopped = self._child(mode, start, count, run_deadline, (), item_seconds, spawned)
            spawned = None
            if records and "e" in records[0]:  # did not load: every remaining item fails alike
                failed = {"k": records[0].get("k", "runtime_error"), "e": str(records[0]["e"])}
                out += [dict(failed) for _ in range(count - len(out))]
                break
            out += records[1:]
            if stopped is not None and len(out) < count:
                kind, message = stopped
                out.append({"k": kind, "e": message})
                if "wall clock" in message:  # nothing more will run
                    out += [{"k": kind, "e": message} for _ in range(count - len(out))]
        return out

    def run(
        self,
        program: str,
        entry_point: str,
        inputs: Sequence[str],
        expected: Sequence[str | None] | None = None,
        properties: Sequence[tuple[str, str]] = (),
        trace: bool = False,
    ) -> RunResult:
        """Call ``entry_point(*args)`` of ``program`` on every input; judge the outputs here.

        Args:
            program: Python source defining ``entry_point``.
            entry_point: the function's name.
            inputs: argument tuples as Python literal source, e.g. ``"([3, 1], 2)"``.
            expected: per input, the expected return value as literal source, or ``None`` for no check
                (a mismatch is a ``wrong_answer``).
            properties: ``(name, source)`` pairs; ``source`` defines ``name(args, result)``, which
                fails by raising (``AssertionError`` or any error) or returning ``False``. They run in
                their own isolated process on the decoded outputs.
            trace: record the program lines each call executes (``CaseResult.lines``; slower).

        Returns:
            A :class:`RunResult` with one :class:`CaseResult` per input. A return value that is not plain
            data (None, bool, numbers, str, bytes and built-in containers of them) is a ``runtime_error``.

        Raises:
            TypeError: if ``program`` or ``entry_point`` is not a string, or an input is not a string.
            ValueError: if an input or expected value is not a Python literal, or ``expected`` has another length.
        """
        if not isinstance(program, str) or not isinstance(entry_point, str):
            raise TypeError(f"program and entry_point must be str, got {type(program).__name__}, {entry_point!r}")
        texts = [_literal("inputs[i]", x) for x in inputs]
        wanted: list[str | None] = [None] * len(texts)
        if expected is not None:
            if len(expected) != len(texts):
                raise ValueError(f"expected must have one entry per input ({len(texts)}), got {len(expected)}")
            wanted = [None if v is None else _literal("expected[i]", v) for v in expected]
        run_deadline = time.monotonic() + self.wall_seconds
        spec = {"program": program, "entry_point": entry_point, "inputs": texts, "trace": bool(trace)}
        judge = self._spawn("props") if properties and texts else None  # starts while the candidate runs
        try:
            records = self._items("run", spec, len(texts), run_deadline)
        except BaseException:
            if judge is not None:
                judge.discard()
            raise
        results = [
            _judged(text, record, wanted[i], trace) for i, (text, record) in enumerate(zip(texts, records, strict=True))
        ]
        to_check = [(i, r["v"]) for i, (c, r) in enumerate(zip(results, records, strict=True)) if c.kind == "pass"]
        if judge is None or not to_check:
            if judge is not None:
                judge.discard()
            return RunResult(results)
        items = [[texts[i], v] for i, v in to_check]
        props = {"properties": [list(p) for p in properties], "items": items}
        per_item = self.case_seconds * len(properties)
        deadline = max(run_deadline, time.monotonic() + per_item)
        checks = self._items("props", props, len(items), deadline, per_item, spawned=judge)
        for (index, _), check in zip(to_check, checks, strict=True):
            if "p" in check or "k" in check:
                name = check.get("p")
                message = str(check.get("e", ""))[:500]
                if "k" in check:  # the property process died on this item or did not load
                    message = "error in property: " + message
                old = results[index]
                results[index] = CaseResult(
                    old.input, "property_violation", old.output, error=message,
                    property=None if name is None else str(name), lines=old.lines,
                )  # fmt: skip
        return RunResult(results)

    def shrink(
        self,
        program: str,
        entry_point: str,
        strategy: str,
        properties: Sequence[tuple[str, str]] = (),
        max_examples: int = 200,
    ) -> CaseResult | None:
        """Hypothesis's simplest failing input, searched and shrunk inside the child, judged outside.

        The child reports only the input it found; that input is rerun through :meth:`run` and returned
        only if it fails there, so a candidate that lies about the search cannot invent a failure or hide
        its bug behind a passing one (at worst the caller gets no shrunk input and falls back).

        Args:
            program: candidate source.
            entry_point: the function's name.
            strategy: a Hypothesis strategy expression over ``st`` that draws argument tuples, e.g.
                ``"st.tuples(st.lists(st.integers()))"``.
            properties: ``(name, source)`` property checks, as in :meth:`run`.
            max_examples: the search budget before shrinking.

        Returns:
            The shrunk failing case, or ``None`` when Hypothesis finds no failing input (or the one
            reported does not fail when judged).

        Raises:
            ImportError: if Hypothesis is not installed.
            ShrinkIncompleteError: if the search stopped at a sandbox limit before it reported an input.
        """
        hypothesis = require("hypothesis", extra="pgs", purpose="Hypothesis shrinking")
        _positive("max_examples", max_examples, int)
        path = str(Path(str(hypothesis.__file__)).parents[1])
        spec = {
            "program": program,
            "entry_point": entry_point,
            "properties": [list(p) for p in properties],
            "strategy": strategy,
            "max_examples": max_examples,
            "path": [path],
        }
        deadline = time.monotonic() + self.wall_seconds
        binds = [os.path.realpath(path)]  # Hypothesis and its dependencies, read-only
        records, stopped = self._child("shrink", {**spec, "start": 0}, 1, deadline, binds, self.wall_seconds)
        if records and "e" in records[0]:  # the program did not load
            return CaseResult("", str(records[0].get("k", "runtime_error")), error=str(records[0]["e"]))
        if len(records) < 2:
            kind, reason = stopped or ("runtime_error", "the process ended without reporting an input")
            raise ShrinkIncompleteError(kind, reason)
        found = records[1].get("input")
        if not isinstance(found, str):
            return None
        try:
            _literal("the shrunk input", found)
        except ValueError:
            return None
        case = self.run(program, entry_point, [found], properties=properties).cases[0]
        return None if case.kind == "pass" else case
