"""Every ```python block in README.md and docs/**/*.md runs as written (issue 51 item 6).

Each block is a standalone script: it runs in a fresh subprocess (``sys.executable``, a fresh temporary working
directory, ``MPLBACKEND=Agg``, ``HF_HUB_OFFLINE=1``) and must exit 0. A block whose first line is
``# not run here: <reason>`` is not run; it is collected as its own test id, which asserts that the reason is
given. Blocks of other languages (bash, yaml, text) are not run. The counts (run / not run) are printed in the
terminal summary.
"""

from __future__ import annotations

import os
import subprocess
import sys

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


@pytest.mark.parametrize("block", RUN, ids=[b.test_id for b in RUN])
def test_block_runs(block: Block, tmp_path) -> None:
    script = tmp_path / "block.py"
    script.write_text(block.code, encoding="utf-8")
    work = tmp_path / "cwd"
    work.mkdir()
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=work,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert proc.returncode == 0, (
        f"{block.test_id}: the ```python block exited {proc.returncode}\n--- stderr (tail) ---\n{proc.stderr[-3000:]}"
    )


@pytest.mark.parametrize("block", NOT_RUN, ids=[f"{b.test_id}:not-run" for b in NOT_RUN])
def test_block_marked_not_run(block: Block) -> None:
    assert block.not_run_reason, f"{block.test_id}: '# not run here:' needs a reason after the colon"
