"""README "When things go wrong", tried from the wheel in a fresh virtual environment outside the repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_wheel_in_a_fresh_venv_errors_debug_and_resume(tmp_path: Path) -> None:
    wheel_dir = tmp_path / "wheel"
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheel_dir),
                  str(ROOT)], cwd=tmp_path)  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next(wheel_dir.glob("lightning_icml26-*.whl"))
    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path).returncode == 0
    python = venv / "bin" / "python"
    # The dependencies come from this environment (no downloads): a .pth file adds its site-packages after
    # the fresh environment's own, where the wheel is installed.
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=tmp_path)
    (Path(site.stdout.strip()) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = _run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)], cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr[-2000:]
    icml26 = str(venv / "bin" / "icml26")
    work = tmp_path / "outside"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ICML26_DEBUG")}
    located = _run([str(python), "-c", "import lightning_icml26; print(lightning_icml26.__file__)"], work, env)
    assert str(venv) in located.stdout, located.stdout + located.stderr

    # A bad value: one error line with the reason, exit 2.
    bad = _run([icml26, "run", "quickstart", "trainer.max_epochs=-5", "--dry-run"], work, env)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1].startswith("error: cannot build 'trainer': MisconfigurationException")
    # A run-time failure: one line; with ICML26_DEBUG=1 the traceback too.
    small = ["data.num_train=128", "data.num_val=64", "data.num_test=64", "trainer.enable_progress_bar=false"]
    failed = _run([icml26, "run", "quickstart", "ckpt_path=/nonexistent.ckpt", *small], work, env)
    assert failed.returncode == 1
    assert "Traceback" not in failed.stderr
    debug_env = {**env, "ICML26_DEBUG": "1"}
    debug = _run([icml26, "run", "quickstart", "ckpt_path=/nonexistent.ckpt", *small], work, debug_env)
    assert "Traceback (most recent call last)" in debug.stderr
    # A run, then its resume in the same folder: the history is appended.
    run_dir = work / "run"
    first = _run([icml26, "run", "quickstart", "trainer.max_epochs=1", f"run_dir={run_dir}", *small], work, env)
    assert first.returncode == 0, first.stderr[-2000:]
    resumed = _run([icml26, "resume", str(run_dir), "trainer.max_epochs=2"], work, env)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "finished"
    rows = (run_dir / "logs" / "metrics.csv").read_text().splitlines()
    column = rows[0].split(",").index("epoch")
    epochs = {row.split(",")[column] for row in rows[1:]}
    assert {"0", "1"} <= epochs  # the first run's epoch kept, the resumed epoch appended
    assert (run_dir / "metrics.png").is_file()
