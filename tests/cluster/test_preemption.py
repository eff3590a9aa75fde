"""Preemption and requeue under a simulated SLURM (issue 56, item b): signal, one checkpoint, resume, same numbers."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
# 5 steps an epoch, a loss logged at every step
SMALL = [
    "data.num_train=320",
    "data.num_val=64",
    "data.num_test=64",
    "trainer.enable_progress_bar=false",
    "trainer.log_every_n_steps=1",
    "trainer.max_epochs=2",
    "callbacks.plot=null",
    "callbacks.best_checkpoint=null",
]
SIGNAL = "+callbacks.signal={_target_: tests.cluster._signals.SignalAtStep, step: 7, signum: SIGUSR1}"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    for key in ("ICML26_RUN_DIR", "ICML26_RUN_ID"):
        env.pop(key, None)
    return {**env, **extra}


def _slurm(tmp_path: Path, restart: int) -> dict[str, str]:
    bin_dir = tmp_path / "bin"  # a fake scontrol that records how it was called
    bin_dir.mkdir(exist_ok=True)
    scontrol = bin_dir / "scontrol"
    scontrol.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "scontrol.log"}\n')
    scontrol.chmod(0o755)
    return {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "SLURM_JOB_ID": "4242",
        "SLURM_JOB_NAME": "icml26",
        "SLURM_NTASKS": "1",
        "SLURM_PROCID": "0",
        "SLURM_LOCALID": "0",
        "SLURM_NODEID": "0",
        "SLURM_NODELIST": "127.0.0.1",
        "SLURM_RESTART_COUNT": str(restart),
    }


def _icml26(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "lightning_icml26.cli", *args]
    return subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)


def _rows(run_dir: Path) -> list[dict[str, str]]:
    with open(run_dir / "logs" / "metrics.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def _losses(rows: list[dict[str, str]]) -> dict[int, float]:
    return {int(r["step"]): float(r["train_loss_step"]) for r in rows if r.get("train_loss_step")}


@pytest.mark.slow
def test_sigusr1_under_slurm_checkpoints_requeues_and_the_requeued_job_resumes_exactly(tmp_path: Path) -> None:
    whole = _icml26(
        ["run", "quickstart", *SMALL, "--output-root", str(tmp_path / "ref")], _env(tmp_path, ICML26_RUN_ID="ref")
    )
    assert whole.returncode == 0, whole.stderr[-3000:]
    ref_dir = tmp_path / "ref" / "quickstart" / "ref"

    out = tmp_path / "out"
    first = _icml26(
        ["run", "quickstart", *SMALL, SIGNAL, "--output-root", str(out)], _env(tmp_path, **_slurm(tmp_path, 0))
    )
    run_dir = out / "quickstart" / "4242"
    assert first.returncode == 143, first.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "preempted"
    assert summary["checkpoint"] == str(run_dir / "checkpoints" / "last.ckpt")
    state = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=False)
    assert (state["global_step"], state["epoch"]) == (8, 1), "stopped after the step the signal came in, mid-epoch"
    assert (tmp_path / "scontrol.log").read_text().split() == ["requeue", "4242"]
    assert not list(run_dir.glob("hpc_ckpt_*.ckpt")), "Lightning's mid-step hpc checkpoint is not written"
    assert "preempted by SIGUSR1 after step 8" in first.stdout

    # SLURM starts the same command again, same job id, restart count 1 (without the test's signal)
    again = _icml26(["run", "quickstart", *SMALL, "--output-root", str(out)], _env(tmp_path, **_slurm(tmp_path, 1)))
    assert again.returncode == 0, again.stderr[-3000:]
    assert "restarted; resuming" in again.stdout
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "finished"
    reference = json.loads((ref_dir / "summary.json").read_text())
    # every step's loss, the history from step 0, and the test metrics of the final weights
    assert sorted(_losses(_rows(run_dir))) == sorted(_losses(_rows(ref_dir))) == list(range(10))
    assert _losses(_rows(run_dir)) == pytest.approx(_losses(_rows(ref_dir)), rel=0, abs=1e-6)
    for key in ("test_loss", "test_acc", "val_loss"):
        assert summary["metrics"][key] == pytest.approx(reference["metrics"][key], abs=1e-6), key
    ours = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]
    theirs = torch.load(ref_dir / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]
    for name, value in theirs.items():
        torch.testing.assert_close(ours[name], value, rtol=0, atol=1e-6)


def test_an_older_hpc_checkpoint_does_not_win_over_a_newer_last_ckpt(tmp_path: Path) -> None:
    from lightning_icml26._checkpoints import AtomicCheckpointIO
    from lightning_icml26._preemption import requeued

    io = AtomicCheckpointIO()
    (tmp_path / "config.yaml").write_text("recipe: quickstart\n")
    io.save_checkpoint({"global_step": 160, "epoch": 16}, tmp_path / "hpc_ckpt_1.ckpt")
    io.save_checkpoint({"global_step": 230, "epoch": 23}, tmp_path / "checkpoints" / "last.ckpt")
    os.utime(tmp_path / "hpc_ckpt_1.ckpt")  # written later, older in steps
    os.environ["SLURM_RESTART_COUNT"] = "1"
    try:
        assert requeued(tmp_path) == tmp_path / "checkpoints" / "last.ckpt"
        (tmp_path / "checkpoints" / "last.ckpt").write_bytes(b"torn")
        assert requeued(tmp_path) == tmp_path / "hpc_ckpt_1.ckpt"
    finally:
        del os.environ["SLURM_RESTART_COUNT"]
