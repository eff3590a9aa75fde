"""Every ```python block in README.md and docs/**/*.md runs as written (issue 51 item 6).

Each block is a standalone script: it runs in a fresh subprocess (``sys.executable``, a fresh temporary working
directory, ``MPLBACKEND=Agg``, ``HF_HUB_OFFLINE=1``) and must exit 0; the selected blocks run a few at a time.
A block whose first line is ``# not run here: <reason>`` is not run; it is collected as its own test id, which
asserts that the reason is given. Blocks of other languages (bash, yaml, text) are not run. The counts (run /
not run) are printed in the terminal summary.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.docs._blocks import REPO, Block, python_blocks

BLOCKS = python_blocks()
RUN = [b for b in BLOCKS if b.not_run_reason is None]
NOT_RUN = [b for b in BLOCKS if b.not_run_reason is not None]
TIMEOUT_S = 120


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        MPLBACKEND="Agg",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p),
        OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "2"),
    )
    return env


def test_blocks_found() -> None:
    # The README has runnable examples; finding none means the fence parser broke, not that all is well.
    assert any(b.path == "README.md" for b in RUN)


def _run(block: Block, tmp: Path) -> subprocess.CompletedProcess[str]:
    tmp.mkdir(parents=True)
    script = tmp / "block.py"
    script.write_text(block.code, encoding="utf-8")
    work = tmp / "cwd"
    work.mkdir()
    try:
        return subprocess.run(
            [sys.executable, str(script)],
            cwd=work,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(exc.cmd, -1, "", f"timed out after {TIMEOUT_S} s")


@pytest.fixture(scope="module")
def outcomes(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Run the selected blocks, a few at a time (each is its own process), and keep their results by test id."""
    selected = {
        item.callspec.params["block"].test_id
        for item in request.session.items
        if getattr(item, "originalname", None) == "test_block_runs" and hasattr(item, "callspec")
    }
    todo = [b for b in RUN if b.test_id in selected]
    root = tmp_path_factory.mktemp("blocks")
    workers = max(1, min(4, os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {b.test_id: pool.submit(_run, b, root / f"b{i}") for i, b in enumerate(todo)}
        return {test_id: f.result() for test_id, f in futures.items()}


@pytest.mark.parametrize("block", RUN, ids=[b.test_id for b in RUN])
def test_block_runs(block: Block, outcomes: dict[str, Any]) -> None:
    proc = outcomes[block.test_id]
    assert proc.returncode == 0, (
        f"{block.test_id}: the ```python block exited {proc.returncode}\n--- stderr (tail) ---\n{proc.stderr[-3000:]}"
    )


@pytest.mark.parametrize("block", NOT_RUN, ids=[f"{b.test_id}:not-run" for b in NOT_RUN])
def test_block_marked_not_run(block: Block) -> None:
    assert block.not_run_reason, f"{block.test_id}: '# not run here:' needs a reason after the colon"
