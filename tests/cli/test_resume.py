"""`icml26 resume` continues a run in its folder and keeps the metrics history; Ctrl-C still writes the summary."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from lightning_icml26 import _outputs
from lightning_icml26.cli import main

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["data.num_train=128", "data.num_val=64", "data.num_test=64", "trainer.enable_progress_bar=false"]


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _shape(rows: list[dict[str, str]]) -> list[tuple[str, str, tuple[str, ...]]]:
    """(epoch, step, logged keys) of the training and validation rows (test rows come from each launch)."""
    out = []
    for row in rows:
        keys = tuple(sorted(k for k, v in row.items() if v and k not in ("epoch", "step")))
        if not any(k.startswith("test_") for k in keys):
            out.append((row["epoch"], row["step"], keys))
    return out


def _launch(argv: list[str], run_id: str, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setenv("ICML26_RUN_ID", run_id)
    monkeypatch.delenv("ICML26_RUN_DIR", raising=False)
    return main(argv)


def test_resume_appends_to_the_metrics_of_its_own_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(tmp_path / "out")
    # the reference: the same three epochs without a break
    assert (
        _launch(["run", "quickstart", *SMALL, "trainer.max_epochs=3", "--output-root", root], "whole", monkeypatch) == 0
    )
    assert (
        _launch(["run", "quickstart", *SMALL, "trainer.max_epochs=2", "--output-root", root], "split", monkeypatch) == 0
    )
    run_dir = tmp_path / "out" / "quickstart" / "split"
    before = _rows(run_dir / "logs" / "metrics.csv")
    monkeypatch.delenv("ICML26_RUN_ID")
    assert main(["resume", str(run_dir), "trainer.max_epochs=3"]) == 0
    after = _rows(run_dir / "logs" / "metrics.csv")
    assert [p.name for p in (tmp_path / "out" / "quickstart").iterdir()].count("split") == 1
    assert sorted(p.name for p in (tmp_path / "out" / "quickstart").iterdir()) == ["split", "whole"]
    # the history from epoch 0 is kept, value for value, and the resumed epoch follows it
    kept = [{k: v for k, v in row.items() if k in before[0]} for row in after[: len(before)]]
    assert kept == before
    assert _shape(after) == _shape(_rows(tmp_path / "out" / "quickstart" / "whole" / "logs" / "metrics.csv"))
    assert {row["epoch"] for row in after if row.get("val_loss")} == {"0", "1", "2"}
    assert not list((run_dir / "logs").glob("*before_resume*"))
    state = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=False)
    assert state["epoch"] == 2
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "finished"
    assert summary["run_dir"] == str(run_dir.resolve())
    # the resume kept the first launch's overrides and replaced max_epochs
    overrides = (run_dir / ".hydra" / "overrides.yaml").read_text()
    assert "data.num_train=128" in overrides
    assert "trainer.max_epochs=3" in overrides
    assert "trainer.max_epochs=2" not in overrides


def test_a_refused_resume_keeps_the_runs_hydra_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(tmp_path / "out")
    assert _launch(["run", "quickstart", *SMALL, "trainer.max_epochs=1", "--output-root", root], "r", monkeypatch) == 0
    run_dir = tmp_path / "out" / "quickstart" / "r"
    before = {p.name: p.read_text() for p in (run_dir / ".hydra").glob("*.yaml")}
    monkeypatch.delenv("ICML26_RUN_ID")
    assert main(["resume", str(run_dir), "trainer.max_epochs=-5"]) == 2
    assert {p.name: p.read_text() for p in (run_dir / ".hydra").glob("*.yaml")} == before
    assert "trainer.max_epochs=1" in before["overrides.yaml"]


def test_resume_without_a_checkpoint_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "config.yaml").write_text("recipe: quickstart\n")
    assert main(["resume", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: cannot resume '{tmp_path}': no checkpoints/last.ckpt (it stopped before one)"]
    assert main(["resume", str(tmp_path / "nowhere")]) == 2
    assert "no config.yaml" in capsys.readouterr().err


def test_ctrl_c_writes_summary_and_plot_then_resume_completes(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ICML26_RUN_ID": "stopped", "OMP_NUM_THREADS": "1"}
    env.pop("ICML26_RUN_DIR", None)
    stop = "+callbacks.stop={_target_: tests.cli._interrupt.InterruptAtEpoch, epoch: 2}"
    command = [sys.executable, "-m", "lightning_icml26.cli", "run", "quickstart", *SMALL, "trainer.max_epochs=4"]
    proc = subprocess.run(
        [*command, stop, "--output-root", str(tmp_path)], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    run_dir = tmp_path / "quickstart" / "stopped"
    assert proc.returncode == 130, proc.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "interrupted"
    assert summary["metrics"]["val_loss"] > 0
    assert (run_dir / "metrics.png").stat().st_size > 1000
    assert torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=False)["epoch"] == 1
    assert {row["epoch"] for row in _rows(run_dir / "logs" / "metrics.csv") if row.get("val_loss")} == {"0", "1"}
    assert "interrupted" in proc.stdout
    # resume without the interrupting callback: epochs 2 and 3 follow 0 and 1 in the same files
    shutil.copy(run_dir / "metrics.png", tmp_path / "interrupted.png")
    resume = [sys.executable, "-m", "lightning_icml26.cli", "resume", str(run_dir), "+callbacks.stop=null"]
    proc = subprocess.run(resume, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "finished"
    val_epochs = [row["epoch"] for row in _rows(run_dir / "logs" / "metrics.csv") if row.get("val_loss")]
    assert val_epochs == ["0", "1", "2", "3"]


def test_atomic_write_keeps_the_old_file_when_the_write_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "summary.json"
    _outputs.atomic_write_text(target, '{"old": 1}')

    def failing_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(_outputs.os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        _outputs.atomic_write_text(target, '{"new": 2}')
    assert target.read_text() == '{"old": 1}'
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"], "no temporary file is left behind"


def test_an_unfinished_merge_is_completed_by_the_next_resume(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    path.write_text("epoch,step,val_loss\n0,1,0.9\n1,3,0.8\n")
    history = _outputs.CsvHistory(path)
    history.set_aside()
    path.write_text("epoch,step,val_loss\n2,5,0.7\n")  # the resumed run was killed before restore()
    again = _outputs.CsvHistory(path)
    again.set_aside()
    path.write_text("epoch,step,val_loss,val_acc\n2,5,0.6,0.5\n3,7,0.5,0.6\n")  # the next resume redoes epoch 2
    again.restore()
    rows = _rows(path)
    assert [(r["epoch"], r["val_loss"], r["val_acc"]) for r in rows] == [
        ("0", "0.9", ""),
        ("1", "0.8", ""),
        ("2", "0.6", "0.5"),
        ("3", "0.5", "0.6"),
    ]
