"""Two spawned UPipe ranks: SIGTERM stops both at one step and the resume matches; a stopped rank ends the job."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests._support.skips import requires_module

ROOT = Path(__file__).resolve().parents[2]
TINY = [
    "data.seq_len=32",
    "data.max_bytes=20000",
    "trainer.max_steps=6",
    "trainer.val_check_interval=6",
    "trainer.limit_val_batches=1",
    "trainer.enable_progress_bar=false",
    "callbacks.checkpoint.every_n_train_steps=100",
    "callbacks.plot=null",
    "model.net.hidden_size=16",
    "model.net.intermediate_size=32",
    "model.net.num_hidden_layers=1",
    "model.net.num_attention_heads=2",
    "model.net.num_key_value_heads=2",
    "test_after_fit=false",
]


def _env(run_id: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "ICML26_RUN_ID": run_id}
    env.pop("ICML26_RUN_DIR", None)
    return env


def _icml26(args: list[str], run_id: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "lightning_icml26.cli", *args]
    return subprocess.run(command, env=_env(run_id), cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def _losses(run_dir: Path) -> dict[int, float]:
    with open(run_dir / "logs" / "metrics.csv") as handle:
        return {int(r["step"]): float(r["train_loss"]) for r in csv.DictReader(handle) if r.get("train_loss")}


def _processes_of(run_dir: Path) -> list[int]:
    """Live processes whose environment names this run folder (the ranks inherit ICML26_RUN_DIR)."""
    marker = f"ICML26_RUN_DIR={run_dir}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.timeout(1200)  # three 2-rank launches: about 1.5 min on an idle 2-core machine
@requires_module("transformers")
def test_sigterm_stops_both_ranks_at_one_step_and_the_resume_matches_step_by_step(tmp_path: Path) -> None:
    out = str(tmp_path)
    ref = _icml26(["run", "upipe_llama", *TINY, "--output-root", out], "ref")
    assert ref.returncode == 0, ref.stderr[-3000:]
    # rank 1 plays the scheduler: SIGTERM to the icml26 process, which forwards it to both ranks
    signal_node = "+callbacks.signal={_target_: tests.cluster._signals.SignalAtStep, step: 2, rank: 1, to_parent: true}"
    cut = _icml26(["run", "upipe_llama", *TINY, signal_node, "--output-root", out], "cut")
    run_dir = tmp_path / "upipe_llama" / "cut"
    assert cut.returncode == 143, cut.stderr[-3000:]
    assert "terminate called" not in cut.stderr
    assert _processes_of(run_dir) == [], "no rank is left running"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "preempted"
    step = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=False)["global_step"]
    assert 3 <= step < 6, step
    resumed = _icml26(["resume", str(run_dir), "+callbacks.signal=null"], "cut")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "finished"
    ours, theirs = _losses(run_dir), _losses(tmp_path / "upipe_llama" / "ref")
    assert sorted(ours) == sorted(theirs) == list(range(6))
    assert ours == pytest.approx(theirs, rel=0, abs=1e-5)


@pytest.mark.distributed
@pytest.mark.slow
@requires_module("transformers")
def test_a_rank_that_stops_answering_ends_the_job_with_one_line(tmp_path: Path) -> None:
    stop = "+callbacks.stop={_target_: tests.cluster._signals.StopRankAtStep, step: 2, rank: 1}"
    proc = _icml26(["run", "upipe_llama", *TINY, "strategy.timeout=4", stop, "--output-root", str(tmp_path)], "hang")
    run_dir = tmp_path / "upipe_llama" / "hang"
    assert proc.returncode == 1, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr[-3000:]
    assert "rank 0 timed out after 4 s" in errors[0], errors
    assert "rank 1" in errors[0], errors
    assert len(errors[0]) < 300
    assert (run_dir / "logs" / "rank0.traceback.log").is_file()
    assert _processes_of(run_dir) == [], "the stopped rank is killed, not left behind"
