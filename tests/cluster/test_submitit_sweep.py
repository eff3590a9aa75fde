"""A two-point sweep through Hydra's submitit launcher (local executor): one job and one folder each (item f)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._support.skips import requires_module

ROOT = Path(__file__).resolve().parents[2]
TINY = [
    "data.num_train=128",
    "data.num_val=64",
    "data.num_test=64",
    "trainer.max_epochs=1",
    "trainer.enable_progress_bar=false",
    "callbacks.plot=null",
]


def _sweep(points: str, root: Path) -> subprocess.CompletedProcess[str]:
    """``icml26 run quickstart -m hydra/launcher=submitit_local POINTS`` at tiny sizes, jobs under ``root``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "ICML26_RUN_ID": "sweep"}
    env.pop("ICML26_RUN_DIR", None)
    command = [sys.executable, "-m", "lightning_icml26.cli", "run", "quickstart", "-m", "hydra/launcher=submitit_local"]
    command += [points, *TINY, "--output-root", str(root)]
    return subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
@requires_module("hydra_plugins.hydra_submitit_launcher")
def test_a_sweep_through_submitit_local_runs_each_point_to_finished(tmp_path: Path) -> None:
    proc = _sweep("model.optimizer.lr=0.01,0.003", tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sweep = tmp_path / "quickstart" / "sweep"
    assert "Submitit 'local' sweep output dir" in proc.stdout + proc.stderr
    for job, lr in (("0", 0.01), ("1", 0.003)):
        summary = json.loads((sweep / job / "summary.json").read_text())
        assert summary["status"] == "finished"
        assert summary["metrics"]["test_acc"] > 0
        config = (sweep / job / "config.yaml").read_text()
        assert f"lr: {lr}" in config
    assert list((sweep / ".submitit").iterdir()), "submitit's own job records are there"


@pytest.mark.slow
@requires_module("hydra_plugins.hydra_submitit_launcher")
def test_a_failed_job_of_a_submitit_sweep_fails_the_launch(tmp_path: Path) -> None:
    proc = _sweep("model.optimizer.lr=0.01,1e30", tmp_path)
    assert proc.returncode == 1, proc.stderr[-3000:]  # the job ran in a worker process; the launch still fails
    assert proc.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "nan" in proc.stderr.splitlines()[-1]
    sweep = tmp_path / "quickstart" / "sweep"
    statuses = {job: json.loads((sweep / job / "summary.json").read_text())["status"] for job in ("0", "1")}
    assert statuses == {"0": "finished", "1": "diverged"}
