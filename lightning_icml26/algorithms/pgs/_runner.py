"""The worker a :class:`~lightning_icml26.algorithms.pgs.Sandbox` child process runs, and the value codec.

Run as ``python -I -S _runner.py MODE FD``: it reads a JSON spec from standard input and writes one
JSON line per item to the inherited file descriptor ``FD`` (a pipe; the only channel back, addressed by
number, not by any path). Before touching model-written code it lowers its own limits: a process-count
``RLIMIT_NPROC`` and, on x86-64 and AArch64 Linux, a seccomp filter that refuses new processes (threads
stay allowed), signals to other processes, ``ptrace`` and cross-process memory access.

Modes:

- ``run``: define the candidate and call it on each input; report only what happened (the encoded
  return value, or the error kind and message). No verdict is computed here.
- ``props``: define the property checks (never the candidate) and run them on ``(args, result)`` pairs
  the judge decoded from a ``run`` child; report which property failed, if any.
- ``shrink``: Hypothesis searches inside the candidate's process and reports only the input it found;
  the judge reruns that input through ``run`` and ``props`` before believing it.

The caller also imports this module for :func:`encode` and :func:`decode`. Only the standard library is
used, plus Hypothesis in shrink mode.
"""

from __future__ import annotations

import ast
import copy
import errno
import json
import os
import resource
import signal
import struct
import sys
from typing import Any


class _CaseTimeout(BaseException):
    """Raised by the interval timer inside a case that ran past its time."""


class NotPlainData(TypeError):
    """A value that the codec does not carry (not built from None, bool, numbers, str, bytes and containers)."""


_MAX_DEPTH = 200


def encode(value: Any, depth: int = 0) -> Any:
    """A JSON-able, exact encoding of plain data (exact types only; subclasses are refused).

    Example:
        >>> decode(encode({"a": (1, 2.5, None), "b": {3}})) == {"a": (1, 2.5, None), "b": {3}}
        True
    """
    if depth > _MAX_DEPTH:
        raise NotPlainData(f"nested deeper than {_MAX_DEPTH}")
    kind = type(value)
    if value is None or kind is bool:
        return value
    if kind is int:
        return ["i", hex(value)]  # hex: no limit on digits, unlike str(int)
    if kind is float:
        return ["f", value.hex()]
    if kind is complex:
        return ["c", value.real.hex(), value.imag.hex()]
    if kind is str:
        return ["s", value]
    if kind is bytes:
        return ["b", value.hex()]
    tags: dict[type, str] = {list: "l", tuple: "t", set: "S", frozenset: "F"}
    tag = tags.get(kind)
    if tag is not None:
        return [tag, [encode(v, depth + 1) for v in value]]
    if kind is dict:
        return ["d", [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]]
    raise NotPlainData(f"a {kind.__name__} is not plain data (None, bool, int, float, complex, str, bytes, "
                       "list, tuple, set, frozenset, dict)")  # fmt: skip


def decode(data: Any, depth: int = 0) -> Any:
    """The value :func:`encode` encoded; ``ValueError`` on anything else (e.g. a forged or cut record).

    Example:
        >>> decode(["l", [["i", "0x2"], ["s", "x"]]])
        [2, 'x']
    """
    if depth > _MAX_DEPTH:
        raise ValueError(f"nested deeper than {_MAX_DEPTH}")
    if data is None or type(data) is bool:
        return data
    if type(data) is not list or not data or type(data[0]) is not str:
        raise ValueError("not an encoded value")
    tag, rest = data[0], data[1:]
    try:
        if tag == "i" and len(rest) == 1:
            return int(rest[0], 16)
        if tag == "f" and len(rest) == 1:
            return float.fromhex(rest[0])
        if tag == "c" and len(rest) == 2:
            return complex(float.fromhex(rest[0]), float.fromhex(rest[1]))
        if tag == "s" and len(rest) == 1 and type(rest[0]) is str:
            return rest[0]
        if tag == "b" and len(rest) == 1:
            return bytes.fromhex(rest[0])
        if tag in ("l", "t", "S", "F") and len(rest) == 1 and type(rest[0]) is list:
            items = [decode(v, depth + 1) for v in rest[0]]
            return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag](items)
        if tag == "d" and len(rest) == 1 and type(rest[0]) is list:
            return {decode(k, depth + 1): decode(v, depth + 1) for k, v in rest[0]}
    except (TypeError, ValueError, AttributeError, RecursionError) as exc:
        raise ValueError(f"not an encoded value ({type(exc).__name__})") from None
    raise ValueError("not an encoded value")


# ---------------------------------------------------------------------------------------------- limits

_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
# (audit arch, clone, clone3, fork-like, kill-like (pid in arg 0), always refused)
_SYSCALLS = {
    "x86_64": (0xC000003E, 56, 435, (57, 58), (62, 200, 234), (101, 310, 311, 424, 434)),
    "aarch64": (0xC00000B7, 220, 435, (), (129, 130, 131), (117, 270, 271, 424, 434)),
}
# refused always: ptrace, process_vm_readv, process_vm_writev, pidfd_send_signal, pidfd_open
_CLONE_THREAD = 0x00010000


def _seccomp_program(pid: int) -> bytes | None:
    """A classic-BPF seccomp filter for this machine's ABI (``None`` where the ABI is not known).

    New processes are refused with ``EAGAIN`` (threads pass), ``clone3`` with ``ENOSYS`` (its flags sit
    behind a pointer; libc falls back to ``clone``), signals to any process but this one and the
    cross-process calls with ``EPERM``, and every call of a foreign ABI (i386 or x32 on x86-64) too.
    """
    spec = _SYSCALLS.get(os.uname().machine)
    if spec is None:
        return None
    arch, clone, clone3, forks, kills, refused = spec
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    prog: list[tuple[int, int | str, int | str, int]] = [(ld, 0, 0, 4), (jeq, 0, "perm", arch), (ld, 0, 0, 0)]
    if arch == 0xC000003E:
        prog.append((jge, "perm", 0, 0x40000000))
    prog += [(jeq, "again", 0, nr) for nr in forks]
    prog += [(jeq, "nosys", 0, clone3)]
    prog += [(jeq, "perm", 0, nr) for nr in refused]
    prog += [(jeq, "kill", 0, nr) for nr in kills]
    prog += [(jeq, "clone", 0, clone), (ret, 0, 0, _ALLOW)]
    labels: dict[str, int] = {}
    blocks: dict[str, list[tuple[int, int | str, int | str, int]]] = {
        "clone": [(ld, 0, 0, 16), (jset, "allow", "again", _CLONE_THREAD)],  # the flags' low word
        "kill": [(ld, 0, 0, 16), (jeq, "allow", "perm", pid)],  # the target pid's low word
        "perm": [(ret, 0, 0, _ERRNO | errno.EPERM)],
        "again": [(ret, 0, 0, _ERRNO | errno.EAGAIN)],
        "nosys": [(ret, 0, 0, _ERRNO | errno.ENOSYS)],
        "allow": [(ret, 0, 0, _ALLOW)],
    }
    for label, block in blocks.items():
        labels[label] = len(prog)
        prog += block
    out = b""
    for index, (code, jt, jf, k) in enumerate(prog):
        jt = labels[jt] - index - 1 if isinstance(jt, str) else jt
        jf = labels[jf] - index - 1 if isinstance(jf, str) else jf
        out += struct.pack("HBBI", code, jt, jf, k & 0xFFFFFFFF)
    return out


def _lower_limits(processes: int) -> None:
    """The limits this process sets on itself before any model-written code runs."""
    resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write raises OSError (EFBIG), not a kill
    program = _seccomp_program(os.getpid())
    if program is None or not sys.platform.startswith("linux"):
        return
    import ctypes  # only here: the shrink mode's Hypothesis and the candidate never need it loaded

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = ctypes.create_string_buffer(struct.pack("HxxxxxxQ", len(program) // 8, ctypes.addressof(buffer)), 16)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(22, 2, ctypes.addressof(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


# ------------------------------------------------------------------------------------------------- cases


def _on_alarm(signum: int, frame: Any) -> None:
    raise _CaseTimeout


def _short(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _error(exc: BaseException) -> str:
    try:
        return _short(f"{type(exc).__name__}: {exc}")
    except BaseException:  # a __str__ that fails is reported, not fatal
        return type(exc).__name__


def _error_kind(exc: BaseException) -> str:
    if isinstance(exc, MemoryError):
        return "memory"
    if isinstance(exc, OSError) and exc.errno in (errno.EAGAIN, errno.EFBIG, errno.ENOSPC, errno.EMFILE):
        return "resource"
    return "runtime_error"


def _timed(seconds: float, fn: Any, *args: Any) -> Any:
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _traced(lines: set[int]) -> Any:
    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != "<candidate>":
            return None
        if event == "line":
            lines.add(frame.f_lineno)
        return tracer

    return tracer


def _call(entry: Any, args: tuple, seconds: float, trace: bool) -> dict[str, Any]:
    """One call of the candidate: its encoded value or its error, never a verdict."""
    lines: set[int] = set()
    try:
        if trace:
            sys.settrace(_traced(lines))
        try:
            result = _timed(seconds, entry, *copy.deepcopy(args))
        finally:
            sys.settrace(None)
        record: dict[str, Any] = {"v": encode(result)}
    except _CaseTimeout:
        record = {"k": "timeout", "e": f"ran past {seconds} s"}
    except NotPlainData as exc:
        record = {"k": "runtime_error", "e": f"returned a value that is not plain data: {exc}"}
    except BaseException as exc:
        record = {"k": _error_kind(exc), "e": _error(exc)}
    if trace:
        record["l"] = sorted(lines)
    return record


def _check(props: list[tuple[str, Any]], args: tuple, result: Any, seconds: float) -> dict[str, Any]:
    """The first property that fails on ``(args, result)``, or ``{}``."""
    for name, prop in props:
        try:
            verdict = _timed(seconds, prop, copy.deepcopy(args), copy.deepcopy(result))
        except _CaseTimeout:
            return {"p": name, "e": f"property ran past {seconds} s"}
        except AssertionError as exc:
            return {"p": name, "e": _error(exc)}
        except BaseException as exc:
            return {"p": name, "e": "error in property: " + _error(exc)}
        if verdict is False:
            return {"p": name, "e": "returned False"}
    return {}


def _define(source: str, name: str, label: str, seconds: float) -> Any:
    namespace: dict[str, Any] = {"__name__": label}
    _timed(seconds, exec, compile(source, f"<{label}>", "exec"), namespace)
    return namespace[name]


def main(argv: list[str]) -> None:
    """Run ``MODE`` on the spec read from standard input; report on file descriptor ``FD``."""
    mode, fd = argv[1], int(argv[2])
    spec = json.loads(sys.stdin.read())
    sys.stdin.close()
    channel = os.fdopen(fd, "w", encoding="utf-8")

    def emit(record: dict[str, Any]) -> None:
        channel.write(json.dumps(record) + "\n")
        channel.flush()

    _lower_limits(int(spec["processes"]))
    signal.signal(signal.SIGALRM, _on_alarm)
    seconds = float(spec["case_seconds"])
    try:
        if mode == "props":
            props = [(name, _define(src, name, "property", seconds)) for name, src in spec["properties"]]
        else:
            entry = _define(spec["program"], spec["entry_point"], "candidate", seconds)
            props = [(name, _define(src, name, "property", seconds)) for name, src in spec.get("properties", [])]
    except _CaseTimeout:
        emit({"i": -1, "k": "timeout", "e": f"could not load: ran past {seconds} s"})
        return
    except BaseException as exc:
        emit({"i": -1, "k": _error_kind(exc), "e": "could not load: " + _error(exc)})
        return
    emit({"i": -1})  # loaded
    if mode == "run":
        for index in range(int(spec["start"]), len(spec["inputs"])):
            args = ast.literal_eval(spec["inputs"][index])
            emit({"i": index, **_call(entry, args, seconds, bool(spec.get("trace")))})
    elif mode == "props":
        for index, (args_text, value) in enumerate(spec["items"]):
            if index >= int(spec["start"]):
                emit({"i": index, **_check(props, ast.literal_eval(args_text), decode(value), seconds)})
    elif mode == "shrink":
        sys.path.extend(spec["path"])
        import hypothesis
        from hypothesis import strategies as st

        strategy = eval(spec["strategy"], {"st": st})  # the problem's own strategy text

        def fails(args: tuple) -> bool:
            record = _call(entry, args, seconds, False)
            return "v" not in record or bool(_check(props, args, decode(record["v"]), seconds))

        conf = hypothesis.settings(
            max_examples=int(spec["max_examples"]),
            database=None,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(hypothesis.HealthCheck),
        )
        try:
            found = hypothesis.find(strategy, fails, settings=conf)
        except hypothesis.errors.NoSuchExample:
            emit({"i": 0, "input": None})
        else:
            emit({"i": 0, "input": repr(found)})


if __name__ == "__main__":
    main(sys.argv)
