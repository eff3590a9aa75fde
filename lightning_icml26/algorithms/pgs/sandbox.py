"""Run candidate programs in a separate Python process with CPU-time, memory and wall-clock limits.

Each :meth:`Sandbox.run` starts ``python -I -S`` in a fresh scratch folder (removed afterwards) with an
empty environment, ``RLIMIT_CPU``, ``RLIMIT_AS``, ``RLIMIT_FSIZE`` and no core files, and its own process
group (killed whole on a wall-clock timeout). Inside, every case runs under an interval timer, so an
infinite loop ends as a ``timeout`` outcome and a memory bomb as a ``runtime_error`` (``MemoryError``);
a child that dies anyway (a C-level loop past the CPU limit, a crash) is restarted after the case that
killed it. This isolates the caller from hangs and crashes; it is not a security boundary against
hostile code (no namespaces, no syscall filter).
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lightning_icml26._optional import require

__all__ = ["OUTCOMES", "CaseResult", "RunResult", "Sandbox"]

OUTCOMES = ("pass", "wrong_answer", "property_violation", "runtime_error", "timeout")
"""The outcome kinds: the paper's Pass, WA (on a public test), AssertionError, RuntimeError and TLE."""

_RUNNER = Path(__file__).with_name("_runner.py")


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
        lines: the program lines the call executed (only when run with ``trace=True``).
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


class Sandbox:
    r"""Executes a function from candidate source on inputs, optionally checking outputs and properties.

    Args:
        case_seconds: wall-clock limit of one case (and of one property check).
        cpu_seconds: CPU-time limit of the child process (``RLIMIT_CPU``).
        memory_mb: address-space limit of the child process in MiB (``RLIMIT_AS``).
        wall_seconds: wall-clock limit of one child process; the process group is killed past it.
        file_mb: largest file the child may write, in MiB.

    Raises:
        ValueError: if a limit is not positive.

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
    ) -> None:
        _positive("case_seconds", case_seconds)
        _positive("cpu_seconds", cpu_seconds, int)
        _positive("memory_mb", memory_mb, int)
        _positive("wall_seconds", wall_seconds)
        _positive("file_mb", file_mb, int)
        self.case_seconds = float(case_seconds)
        self.cpu_seconds = int(cpu_seconds)
        self.memory_mb = int(memory_mb)
        self.wall_seconds = float(wall_seconds)
        self.file_mb = int(file_mb)

    def _limits(self) -> None:  # runs in the child between fork and exec
        resource.setrlimit(resource.RLIMIT_CPU, (self.cpu_seconds, self.cpu_seconds + 1))
        memory = self.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        size = self.file_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    def _child(self, spec: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
        """Run one child on ``spec``; return its records and, if it died, why."""
        scratch = Path(tempfile.mkdtemp(prefix="pgs-sandbox-"))
        try:
            (scratch / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(_RUNNER)],
                cwd=scratch,
                env={},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                preexec_fn=self._limits,
                start_new_session=True,
            )
            died: str | None = None
            try:
                code = proc.wait(timeout=self.wall_seconds)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                died = f"timeout: the process ran past {self.wall_seconds} s"
            else:
                if code == -signal.SIGXCPU or code == -signal.SIGKILL:
                    died = f"timeout: the process ran past its CPU limit of {self.cpu_seconds} s"
                elif code != 0:
                    died = f"runtime_error: the process died (exit status {code})"
            # the group may hold leftovers (a forked grandchild): end them too
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            path = scratch / "results.jsonl"
            lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
            records = []
            for line in lines:
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError:  # a line cut short by the kill
                    break
            return records, died
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def run(
        self,
        program: str,
        entry_point: str,
        inputs: Sequence[str],
        expected: Sequence[str | None] | None = None,
        properties: Sequence[tuple[str, str]] = (),
        trace: bool = False,
    ) -> RunResult:
        """Call ``entry_point(*args)`` of ``program`` on every input.

        Args:
            program: Python source defining ``entry_point``.
            entry_point: the function's name.
            inputs: argument tuples as Python literal source, e.g. ``"([3, 1], 2)"``.
            expected: per input, the expected return value as literal source, or ``None`` for no check
                (a mismatch is a ``wrong_answer``).
            properties: ``(name, source)`` pairs; ``source`` defines ``name(args, result)``, which
                fails by raising (``AssertionError`` or any error) or returning ``False``.
            trace: record the program lines each call executes (``CaseResult.lines``; slower).

        Returns:
            A :class:`RunResult` with one :class:`CaseResult` per input.

        Raises:
            TypeError: if ``program`` or ``entry_point`` is not a string, or an input is not a string.
            ValueError: if an input or expected value is not a Python literal, or ``expected`` has another length.
        """
        if not isinstance(program, str) or not isinstance(entry_point, str):
            raise TypeError(f"program and entry_point must be str, got {type(program).__name__}, {entry_point!r}")
        cases: list[dict[str, Any]] = [{"input": _literal("inputs[i]", x), "expected": None} for x in inputs]
        if expected is not None:
            if len(expected) != len(cases):
                raise ValueError(f"expected must have one entry per input ({len(cases)}), got {len(expected)}")
            for case, value in zip(cases, expected, strict=True):
                case["expected"] = None if value is None else _literal("expected[i]", value)
        spec = {
            "program": program,
            "entry_point": entry_point,
            "properties": [list(p) for p in properties],
            "case_seconds": self.case_seconds,
            "cases": cases,
            "start": 0,
            "trace": bool(trace),
        }
        results: list[CaseResult] = []
        while len(results) < len(cases):
            spec["start"] = len(results)
            records, died = self._child(spec)
            for record in records:
                if record["index"] == -1:  # the program did not load: every remaining case fails alike
                    results += [_case(c["input"], record) for c in cases[len(results) :]]
                    break
                results.append(_case(cases[record["index"]]["input"], record))
            if died is not None and len(results) < len(cases):
                kind, message = died.split(": ", 1)
                results.append(CaseResult(cases[len(results)]["input"], kind, error=message))
            elif not records and died is None:
                raise RuntimeError("the sandbox child exited without reporting a case")
        return RunResult(results)

    def shrink(
        self,
        program: str,
        entry_point: str,
        strategy: str,
        properties: Sequence[tuple[str, str]] = (),
        max_examples: int = 200,
    ) -> CaseResult | None:
        """Hypothesis's simplest failing input, searched and shrunk inside the child process.

        Args:
            program: candidate source.
            entry_point: the function's name.
            strategy: a Hypothesis strategy expression over ``st`` that draws argument tuples, e.g.
                ``"st.tuples(st.lists(st.integers()))"``.
            properties: ``(name, source)`` property checks, as in :meth:`run`.
            max_examples: the search budget before shrinking.

        Returns:
            The shrunk failing case, or ``None`` when Hypothesis finds no failing input.

        Raises:
            ImportError: if Hypothesis is not installed.
        """
        hypothesis = require("hypothesis", extra="pgs", purpose="Hypothesis shrinking")
        _positive("max_examples", max_examples, int)
        spec = {
            "program": program,
            "entry_point": entry_point,
            "properties": [list(p) for p in properties],
            "case_seconds": self.case_seconds,
            "cases": [],
            "start": 0,
            "shrink": {
                "strategy": strategy,
                "max_examples": max_examples,
                "path": [str(Path(str(hypothesis.__file__)).parents[1])],
            },
        }
        records, died = self._child(spec)
        if not records:
            raise RuntimeError(f"Hypothesis shrinking did not finish: {died}")
        record = records[0]
        if record["index"] == -1:
            return _case("", record)
        return None if record.get("input") is None else _case(record["input"], record)


def _case(text: str, record: dict[str, Any]) -> CaseResult:
    return CaseResult(
        input=text,
        kind=record["kind"],
        output=record.get("output"),
        expected=record.get("expected"),
        error=record.get("error"),
        property=record.get("property"),
        lines=tuple(record["lines"]) if "lines" in record else None,
    )
