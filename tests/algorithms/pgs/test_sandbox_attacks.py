"""Hostile candidates against the default sandbox: one test per attack class, each effect checked from outside.

Every candidate here is a wrong or malicious program; each test looks at what the attack would change
outside the sandbox (the verdict, a file, a listener, the process table, the caller's life) rather than at
anything the candidate reports about itself. The sandbox is built with its default isolation.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from lightning_icml26.algorithms.pgs import Sandbox

PLUS_ONE = [("(1,)", "2"), ("(2,)", "3"), ("(3,)", "4")]


@pytest.fixture
def box() -> Sandbox:
    return Sandbox(case_seconds=1.0, cpu_seconds=4, memory_mb=256, wall_seconds=15)


def _run(box: Sandbox, program: str, inputs: list[str], expected: list[str | None] | None = None) -> list[str]:
    return [c.kind for c in box.run(program, "f", inputs, expected=expected).cases]


def _processes_with(token: str) -> list[int]:
    """Pids whose command line contains ``token`` (this test's own process excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if token.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _descendants(root: int) -> int:
    """How many live processes descend from ``root``."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    count = 0
    for pid in parent:
        seen, up = 0, parent.get(pid)
        while up is not None and up > 1 and seen < 64:
            if up == root:
                count += 1
                break
            up, seen = parent.get(up), seen + 1
    return count


def _in_caller(work: Callable[[], None]) -> tuple[int, bytes]:
    """Run ``work`` in a forked copy of this process (the "caller"); its exit status and what it printed."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the caller: run the sandbox, then say it is still alive
        os.close(read_fd)
        try:
            work()
            os.write(write_fd, b"alive")
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as fh:
        said = fh.read()
    _, status = os.waitpid(pid, 0)
    return status, said


# ------------------------------------------------------------------------------------- forged verdicts


def test_patching_the_judge_does_not_forge_a_pass(box: Sandbox) -> None:
    # the candidate replaces every judging function it can find in the worker's module with "pass"
    program = (
        "import __main__\n"
        "def _forged(*args, **kwargs):\n"
        "    return {'kind': 'pass', 'output': '0', 'lines': [], 'v': ['i', '0x0']}\n"
        "for _name in list(vars(__main__)):\n"
        "    if callable(getattr(__main__, _name)) and _name.startswith('_') and not _name.startswith('__'):\n"
        "        setattr(__main__, _name, _forged)\n"
        "def f(n):\n"
        "    return -n\n"
    )
    inputs, expected = [i for i, _ in PLUS_ONE], [o for _, o in PLUS_ONE]
    kinds = _run(box, program, inputs, expected)
    assert "pass" not in kinds
    prop = ("positive", "def positive(args, result):\n    assert result > 0")
    checked = box.run(program, "f", inputs, properties=[prop]).cases
    assert "pass" not in [c.kind for c in checked]


def test_appending_records_does_not_forge_a_pass(box: Sandbox) -> None:
    # fake "pass" records, in every format, to the results file and to every open descriptor; then exit
    program = (
        "import json, os\n"
        "fake = ''.join(json.dumps({'index': i, 'kind': 'pass', 'i': i, 'v': ['i', '0x0']}) + '\\n'\n"
        "               for i in range(3))\n"
        "with open('results.jsonl', 'a') as fh:\n"
        "    fh.write(fake)\n"
        "for fd in range(64):\n"
        "    try:\n"
        "        os.write(fd, (json.dumps({'i': -1}) + '\\n' + fake).encode())\n"
        "    except OSError:\n"
        "        pass\n"
        "os._exit(0)\n"
        "def f(n):\n"
        "    return n + 1\n"
    )
    kinds = _run(box, program, [i for i, _ in PLUS_ONE], [o for _, o in PLUS_ONE])
    assert len(kinds) == 3
    assert "pass" not in kinds


# ---------------------------------------------------------------------------------------------- files


def test_no_file_written_outside(box: Sandbox, tmp_path: Path) -> None:
    targets = [tmp_path / "escape.txt", Path.home() / f"pgs-escape-{uuid.uuid4().hex}", Path.cwd() / "escape.txt"]
    program = (
        "def f(paths):\n"
        "    for p in paths:\n"
        "        try:\n"
        "            open(p, 'w').write('escaped')\n"
        "        except OSError:\n"
        "            pass\n"
        "    return 0\n"
    )
    try:
        box.run(program, "f", [repr(([str(p) for p in targets],))])
        assert [p for p in targets if p.exists()] == []
    finally:
        for p in targets:
            p.unlink(missing_ok=True)


def test_caller_file_not_deleted(box: Sandbox, tmp_path: Path) -> None:
    keep = tmp_path / "keep.txt"
    keep.write_text("the caller's data")
    program = "import os, shutil\ndef f(path):\n    os.remove(path)\n    return 0\n"
    box.run(program, "f", [repr((str(keep),))])
    assert keep.read_text() == "the caller's data"


# ---------------------------------------------------------------------------------------------- secrets


def test_caller_environment_not_readable(box: Sandbox) -> None:
    # the caller's environment as the kernel shows it in /proc (its environment at start)
    mine = Path(f"/proc/{os.getpid()}/environ").read_bytes().split(b"\0")
    path = next(e.decode()[5:] for e in mine if e.startswith(b"PATH="))
    program = (
        "import os\n"
        "def f(key):\n"
        "    found = []\n"
        "    for pid in [str(os.getppid())] + [p for p in os.listdir('/proc') if p.isdigit()]:\n"
        "        if pid == str(os.getpid()):\n"
        "            continue\n"
        "        try:\n"
        "            entries = open(f'/proc/{pid}/environ', 'rb').read().split(b'\\0')\n"
        "        except OSError:\n"
        "            continue\n"
        "        found += [e.decode()[len(key) + 1 :][:120] for e in entries if e.startswith(key.encode() + b'=')]\n"
        "    return found\n"
    )
    case = box.run(program, "f", ["('PATH',)"]).cases[0]
    assert case.kind == "pass"
    assert path[:120] not in (case.output or "")


# ---------------------------------------------------------------------------------------------- network


def test_loopback_listener_gets_nothing(box: Sandbox) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        port = listener.getsockname()[1]
        program = (
            "import socket\n"
            "def f(port):\n"
            "    try:\n"
            "        with socket.create_connection(('127.0.0.1', port), timeout=0.5) as s:\n"
            "            s.sendall(b'leaked')\n"
            "        return 'sent'\n"
            "    except OSError as exc:\n"
            "        return str(exc)\n"
        )
        box.run(program, "f", [f"({port},)"])
        listener.settimeout(0.3)
        with pytest.raises(TimeoutError):
            listener.accept()


# ------------------------------------------------------------------------------------- other processes


def test_caller_and_other_processes_survive_kill(box: Sandbox) -> None:
    sentinel = subprocess.Popen(["sleep", "30"])
    program = (
        "import os, signal\n"
        "def f(pid):\n"
        "    for target in (pid, os.getppid()):\n"
        "        try:\n"
        "            os.kill(target, signal.SIGKILL)\n"
        "        except OSError:\n"
        "            pass\n"
        "    return 0\n"
    )

    def caller() -> None:
        box.run(program, "f", [f"({sentinel.pid},)"])

    try:
        status, said = _in_caller(caller)
        assert os.WIFEXITED(status)
        assert said == b"alive"
        assert sentinel.poll() is None  # the bystander process is alive
    finally:
        sentinel.kill()
        sentinel.wait()


def test_spawned_and_detached_processes_do_not_survive(box: Sandbox, tmp_path: Path) -> None:
    token = f"pgs{uuid.uuid4().hex[:12]}"
    late = tmp_path / "late.txt"
    program = (
        "import os, subprocess, time\n"
        "def f(token, path):\n"
        "    script = f'sleep 1.5; echo {token} > {path}'\n"
        "    try:\n"
        "        subprocess.Popen(['/bin/sh', '-c', script], start_new_session=True)\n"
        "    except OSError:\n"
        "        pass\n"
        "    try:\n"
        "        if os.fork() == 0:\n"
        "            os.setsid()\n"
        "            os.execv('/bin/sh', ['/bin/sh', '-c', script])\n"
        "    except OSError:\n"
        "        pass\n"
        "    return 0\n"
    )
    try:
        box.run(program, "f", [repr((token, str(late)))])
        assert _processes_with(token) == []
        time.sleep(2.0)
        assert not late.exists()
        assert _processes_with(token) == []
    finally:
        for pid in _processes_with(token):
            os.kill(pid, signal.SIGKILL)


def test_fork_bomb_is_refused(box: Sandbox) -> None:
    # a bounded bomb: 64 sleeping children (harmless where nothing limits processes)
    program = (
        "import os, time\n"
        "def f(n):\n"
        "    for _ in range(n):\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(3)\n"
        "            os._exit(0)\n"
        "    return n\n"
    )
    peak, done = [0], threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _descendants(os.getpid()))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        kinds = _run(box, program, ["(64,)"])
    finally:
        done.set()
        watcher.join()
    assert kinds == ["resource"]
    assert peak[0] < 8  # bwrap, its init and the worker: no fork succeeded


# ------------------------------------------------------------------------------ bounded resource use


@pytest.mark.parametrize(
    ("body", "kind"),
    [  # filling 256 MiB page by page can take a second on a loaded machine: that bomb gets 3 s
        ("    s = 'x'\n    while True:\n        s += s\n", "memory"),
        ("    open('big.bin', 'wb').write(b'0' * (64 << 20))\n", "resource"),
        (
            "    import signal\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n    while True:\n        pass\n",
            "timeout",
        ),
        ("    return sum(range(10 ** 12))\n", "timeout"),
    ],
    ids=["memory_bomb", "file_64mib", "alarm_ignoring_loop", "c_level_loop"],
)
def test_exhaustion_ends_as_a_verdict(body: str, kind: str) -> None:
    # CPU and run limits far above the case's: a loop must be stopped by the per-case clock itself
    box = Sandbox(case_seconds=3.0 if kind == "memory" else 0.5, cpu_seconds=20, wall_seconds=40, memory_mb=256)
    before = set(Path("/tmp").glob("pgs-sandbox-*"))
    case = box.run("def f(n):\n" + body, "f", ["(1,)"]).cases[0]
    assert case.kind == kind
    if kind == "timeout":
        assert "ran past 0.5 s" in (case.error or "")
    assert _descendants(os.getpid()) == 0  # no process left
    assert not Path("/tmp/big.bin").exists()
    assert not (Path.cwd() / "big.bin").exists()
    assert set(Path("/tmp").glob("pgs-sandbox-*")) == before  # no scratch folder left
