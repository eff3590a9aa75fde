"""The sandbox classifies hand-written programs, survives hangs and memory bombs, and leaves nothing behind."""

from __future__ import annotations

import ast
import tempfile
import time
from pathlib import Path

import pytest

from lightning_icml26.algorithms.pgs import DirectGeneration, PGSRefiner, ReferenceTester, Sandbox, SelfDebug
from lightning_icml26.algorithms.pgs import sandbox as sandbox_module
from lightning_icml26.algorithms.pgs.sandbox import SandboxUnavailableError, ShrinkIncompleteError, _bwrap_args

SORT_PROP = ("is_sorted", "def is_sorted(args, result):\n    assert result == sorted(result), 'not sorted'")


@pytest.fixture
def box() -> Sandbox:
    return Sandbox(case_seconds=0.5, cpu_seconds=4, memory_mb=256, wall_seconds=8)


def test_classifies_each_outcome(box: Sandbox) -> None:
    program = (
        "def f(xs):\n"
        "    if xs == [7]:\n"
        "        while True:\n"
        "            pass\n"
        "    if xs == [8]:\n"
        "        return [0] * (10 ** 10)\n"
        "    if xs == [9]:\n"
        "        return xs[5]\n"
        "    if len(xs) > 2:\n"
        "        return xs\n"
        "    return sorted(xs)\n"
    )
    inputs = ["([2, 1],)", "([3, 1],)", "([7],)", "([8],)", "([9],)", "([3, 2, 1],)"]
    expected = ["[1, 2]", "[3, 1]", None, None, None, None]
    run = box.run(program, "f", inputs, expected=expected, properties=[SORT_PROP])
    kinds = [c.kind for c in run.cases]
    assert kinds == ["pass", "wrong_answer", "timeout", "memory", "runtime_error", "property_violation"]
    assert run.cases[1].output == "[1, 3]"
    assert run.cases[1].expected == "[3, 1]"
    assert run.cases[3].error is not None
    assert run.cases[3].error.startswith("MemoryError")
    assert run.cases[4].error is not None
    assert run.cases[4].error.startswith("IndexError")
    assert run.cases[5].property == "is_sorted"
    assert run.cases[5].error == "AssertionError: not sorted"
    assert not run.passed
    assert len(run.failures) == 5


def test_hang_and_bomb_do_not_hang_the_caller(box: Sandbox) -> None:
    start = time.monotonic()
    hang = box.run("def f(n):\n    while True:\n        n += 1", "f", ["(1,)", "(2,)"])
    # The bomb gets a generous per-case wall clock: the case timer is real time, and on a loaded machine
    # filling 256 MiB by doubling can take longer than the 0.5 s the hang test uses. The outcome under
    # test is the memory limit, not the timer.
    roomy = Sandbox(case_seconds=10, cpu_seconds=8, memory_mb=256, wall_seconds=20)
    bomb = roomy.run("def f(n):\n    s = 'x'\n    while True:\n        s += s", "f", ["(1,)"])
    assert [c.kind for c in hang.cases] == ["timeout", "timeout"]
    assert bomb.cases[0].kind == "memory"
    assert "MemoryError" in (bomb.cases[0].error or "")
    assert time.monotonic() - start < 45


def test_killed_child_is_restarted_after_the_case(tmp_path: Path) -> None:
    # a candidate that ignores the interval timer is stopped by the caller's per-case wall clock
    box = Sandbox(case_seconds=0.2, cpu_seconds=1, memory_mb=256, wall_seconds=3)
    program = (
        "import signal\n"
        "def f(n):\n"
        "    if n == 1:\n"
        "        signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
        "        while True:\n"
        "            pass\n"
        "    return n * 2\n"
    )
    run = box.run(program, "f", ["(1,)", "(3,)"], expected=[None, "6"])
    assert [c.kind for c in run.cases] == ["timeout", "pass"]
    assert "stopped by the caller" in (run.cases[0].error or "")


def test_process_mode_warns_and_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("PGS_SECRET", "leak")
    with pytest.warns(UserWarning, match="does NOT stop"):
        box = Sandbox(case_seconds=1.0, wall_seconds=10, isolation="process")
    program = (
        "import os\ndef f(name):\n    open('junk.txt', 'w').write('x')\n    return (os.environ.get(name), os.getcwd())"
    )
    run = box.run(program, "f", ["('PGS_SECRET',)"])
    output = run.cases[0].output or ""
    assert run.cases[0].kind == "pass"
    assert output.startswith("(None, ")
    assert str(tmp_path) in output  # it ran inside a scratch folder under the temp root ...
    assert list(tmp_path.iterdir()) == []  # ... which is gone


def test_bwrap_mode_runs_in_a_private_tmpfs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGS_SECRET", "leak")
    box = Sandbox(case_seconds=1.0, wall_seconds=10)
    program = (
        "import os, socket\n"
        "def f(name):\n"
        "    open('junk.txt', 'w').write('x')\n"
        "    return (os.environ.get(name), os.getcwd(), os.getuid(), sorted(os.listdir('/')), socket.gethostname())"
    )
    run = box.run(program, "f", ["('PGS_SECRET',)"])
    assert run.cases[0].kind == "pass"
    env, cwd, uid, top, host = ast.literal_eval(run.cases[0].output or "")
    assert (env, cwd, uid, host) == (None, "/tmp", 65534, "sandbox")
    assert "home" not in top
    assert "work" not in top
    assert "etc" not in top


def test_unknown_isolation_and_missing_bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="isolation"):
        Sandbox(isolation="docker")
    monkeypatch.setenv("PATH", "/nonexistent")
    sandbox_module._bwrap_problem.cache_clear()
    try:
        with pytest.raises(SandboxUnavailableError, match="apt-get install bubblewrap"):
            Sandbox()
    finally:
        monkeypatch.undo()
        sandbox_module._bwrap_problem.cache_clear()


def test_program_that_does_not_load(box: Sandbox) -> None:
    run = box.run("def f(n) return n", "f", ["(1,)", "(2,)"])
    assert [c.kind for c in run.cases] == ["runtime_error"] * 2
    assert "SyntaxError" in (run.cases[0].error or "")
    missing = box.run("def g(n):\n    return n", "f", ["(1,)"])
    assert "KeyError" in (missing.cases[0].error or "")


def test_hypothesis_shrink_in_the_child(box: Sandbox) -> None:
    pytest.importorskip("hypothesis")
    program = "def f(xs):\n    return sorted(xs)[:3]"
    prop = ("keeps_length", "def keeps_length(args, result):\n    return len(result) == len(args[0])")
    found = box.shrink(program, "f", "st.tuples(st.lists(st.integers()))", properties=[prop])
    assert found is not None
    assert found.kind == "property_violation"
    assert found.input == "([0, 0, 0, 0],)"  # the simplest list longer than three
    assert box.shrink("def f(xs):\n    return xs", "f", "st.tuples(st.lists(st.integers()))", [prop]) is None


def test_hypothesis_shrink_of_a_program_that_always_hangs_stops_with_a_clear_error() -> None:
    pytest.importorskip("hypothesis")
    # every example runs to the per-case limit, so the search spends the child's 2 s of CPU before it reports
    box = Sandbox(case_seconds=0.2, cpu_seconds=2, memory_mb=256, wall_seconds=8)
    hangs = "def f(xs):\n    while True:\n        pass"
    with pytest.raises(ShrinkIncompleteError, match="did not finish") as stopped:
        box.shrink(hangs, "f", "st.tuples(st.lists(st.integers()))")
    assert stopped.value.kind == "timeout"
    assert "CPU limit of 2 s" in stopped.value.reason or "wall clock" in stopped.value.reason


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"case_seconds": 0}, "case_seconds"),
        ({"memory_mb": -1}, "memory_mb"),
        ({"cpu_seconds": 1.5}, "cpu_seconds"),
        ({"wall_seconds": -2.0}, "wall_seconds"),
        ({"processes": 0}, "processes"),
    ],
)
def test_limits_must_be_positive(kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        Sandbox(**kwargs)


def test_inputs_must_be_literals(box: Sandbox) -> None:
    with pytest.raises(ValueError, match="inputs"):
        box.run("def f(n):\n    return n", "f", ["(__import__('os'),)"])
    with pytest.raises(ValueError, match="expected"):
        box.run("def f(n):\n    return n", "f", ["(1,)"], expected=["1", "2"])


def test_trace_records_the_executed_lines(box: Sandbox) -> None:
    program = "def f(n):\n    if n > 0:\n        return 1\n    return 2\n"
    run = box.run(program, "f", ["(5,)", "(-1,)"], trace=True)
    assert [c.lines for c in run.cases] == [(2, 3), (2, 4)]
    assert box.run(program, "f", ["(5,)"]).cases[0].lines is None


class _Scripted:
    """A generator that never changes the program (enough to build refiners)."""

    def generate(self, problem: object) -> str:
        return "def f(n):\n    return n"

    def refine(self, problem: object, program: str, feedback: str) -> str:
        return program

    def reflect(self, problem: object, program: str, feedback: str) -> str:
        return ""

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(t) for t in texts]


def test_refiners_take_the_isolation_option() -> None:
    assert PGSRefiner(_Scripted(), ReferenceTester()).sandbox.isolation == "bwrap"
    with pytest.warns(UserWarning, match="does NOT stop"):
        assert PGSRefiner(_Scripted(), ReferenceTester(), isolation="process").sandbox.isolation == "process"
    with pytest.warns(UserWarning, match="does NOT stop"):
        assert SelfDebug(_Scripted(), isolation="process").sandbox.isolation == "process"
    with pytest.raises(ValueError, match="contradicts"):
        SelfDebug(_Scripted(), Sandbox(), isolation="process")
    with pytest.raises(ValueError, match="isolation must be one of"):
        DirectGeneration(_Scripted(), isolation="container")


def test_binds_under_tmp_are_mounted_over_the_private_tmp() -> None:
    # a virtual environment under /tmp (a CI clone there) must stay visible inside the sandbox: bubblewrap applies
    # its mounts in order, so the private tmpfs on /tmp has to come before any read-only bind beneath it
    args = _bwrap_args(["/tmp/venv/lib/python3.11/site-packages"], tmp_mb=8)
    tmpfs = next(i for i in range(len(args) - 1) if args[i] == "--tmpfs" and args[i + 1] == "/tmp")
    bind = next(i for i in range(len(args) - 2) if args[i] == "--ro-bind" and args[i + 1].startswith("/tmp/venv"))
    assert tmpfs < bind
