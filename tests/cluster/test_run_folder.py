"""One run per folder, checkpoints a crash cannot break, readable errors, file modes (issue 56, item a)."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from lightning_icml26 import _checkpoints
from lightning_icml26._run_lock import LOCK_NAME
from lightning_icml26.cli import main

TINY = [
    "data.num_train=128",
    "data.num_val=64",
    "data.num_test=64",
    "trainer.enable_progress_bar=false",
    "trainer.max_epochs=2",
    "callbacks.plot=null",
]


def _one_error_line(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    return lines[0]


def test_a_second_run_into_a_locked_folder_is_refused_and_a_stale_lock_is_taken_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (run_dir / LOCK_NAME).write_text(f"{os.uname().nodename} {holder.pid}\n")
        assert main(["run", "quickstart", *TINY, f"run_dir={run_dir}"]) == 2
        line = _one_error_line(capsys.readouterr().err)
        assert str(run_dir) in line
        assert str(holder.pid) in line
        assert sorted(p.name for p in run_dir.iterdir()) == [LOCK_NAME], "the refused run wrote nothing"
    finally:
        holder.kill()
        holder.wait()
    # the holder is gone: its lock is stale and the next run takes it over, then releases it
    assert main(["run", "quickstart", *TINY, f"run_dir={run_dir}"]) == 0
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "finished"
    assert not (run_dir / LOCK_NAME).exists()


def test_run_dir_under_a_regular_file_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert main(["run", "quickstart", *TINY, f"run_dir={blocker / 'run'}"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert str(blocker) in line
    assert "is a file" in line


def test_outputs_follow_the_umask_and_two_good_checkpoints_are_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    old = os.umask(0o022)
    try:
        assert main(["run", "quickstart", *TINY, f"run_dir={run_dir}"]) == 0
    finally:
        os.umask(old)
    for name in ("config.yaml", "summary.json", "checkpoints/last.ckpt"):
        assert stat.S_IMODE((run_dir / name).stat().st_mode) == 0o644, name
    last = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=False)
    prev = torch.load(run_dir / "checkpoints" / "last.prev.ckpt", weights_only=False)
    assert (prev["epoch"], last["epoch"]) == (0, 1)
    capsys.readouterr()

    # a torn last.ckpt: the resume names it in one line and continues from the previous one
    (run_dir / "checkpoints" / "last.ckpt").write_bytes(b"\x00" * 100)
    assert main(["resume", str(run_dir), "trainer.max_epochs=3"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, warnings
    assert "'" + str(run_dir / "checkpoints" / "last.ckpt") + "' cannot be loaded" in warnings[0]
    assert "resuming from '" + str(run_dir / "checkpoints" / "last.prev.ckpt") + "'" in warnings[0]
    # it redid epoch 1 from the end of epoch 0, then epoch 2
    assert torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=False)["epoch"] == 2
    val_epochs = [r for r in (run_dir / "logs" / "metrics.csv").read_text().splitlines() if r]
    assert len(val_epochs) > 3


def test_resume_honours_ckpt_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "run"
    assert main(["run", "quickstart", *TINY, f"run_dir={run_dir}"]) == 0
    first = run_dir / "checkpoints" / "first.ckpt"
    os.replace(run_dir / "checkpoints" / "last.prev.ckpt", first)  # the end of epoch 0
    before = (run_dir / "checkpoints" / "last.ckpt").stat().st_mtime_ns
    # max_epochs stays 2: from last.ckpt (epoch 1 done) nothing would train; from first.ckpt epoch 1 is redone
    assert main(["resume", str(run_dir), f"ckpt_path={first}"]) == 0
    assert (run_dir / "checkpoints" / "last.ckpt").stat().st_mtime_ns != before
    assert torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=False)["epoch"] == 1
    # an unloadable path with nothing else to fall back on: one line naming it
    bad = tmp_path / "elsewhere" / "bad.ckpt"
    bad.parent.mkdir()
    bad.write_bytes(b"garbage")
    capsys.readouterr()
    assert main(["resume", str(run_dir), f"ckpt_path={bad}"]) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert str(bad) in line
    assert len(line) < 300


def test_a_failed_save_leaves_the_previous_checkpoint_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "last.ckpt"
    io = _checkpoints.AtomicCheckpointIO()
    io.save_checkpoint({"global_step": 1, "w": torch.ones(3)}, target)
    real_save = torch.save

    def disk_full(obj: object, f: object, *args: object, **kwargs: object) -> None:
        real_save({"partial": torch.zeros(1000)}, f)  # some bytes reach the file, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_checkpoints.torch, "save", disk_full)
    with pytest.raises(OSError, match="No space left"):
        io.save_checkpoint({"global_step": 2, "w": torch.zeros(3)}, target)
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"], "no torn or temporary file is left"
    assert torch.load(target, weights_only=False)["global_step"] == 1
    assert _checkpoints.checkpoint_problem(target) is None
