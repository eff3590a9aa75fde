"""A user's mistakes end with one ``error:`` line that keeps the root cause (issue: a user's first hour)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from lightning_icml26 import _recipes
from lightning_icml26.data import rl as data_rl

ROOT = Path(__file__).resolve().parents[2]


def _icml26(tmp_path: Path, *args: str, debug: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ICML26_DEBUG", None)
    if debug:
        env["ICML26_DEBUG"] = "1"
    command = [sys.executable, "-m", "lightning_icml26.cli", "run", *args, f"run_dir={tmp_path / 'run'}"]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)


def _error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    # Lightning's own info lines ("GPU available: ...") may come first; the error line is the last word.
    assert proc.stderr.strip().splitlines()[-1] == errors[0]
    return errors[0]


@pytest.mark.parametrize(
    ("overrides", "root_cause"),
    [
        (["trainer.max_epochs=-5"], "MisconfigurationException: `max_epochs` must be a non-negative integer or -1"),
        (["trainer.accelerator=gpu"], "MisconfigurationException: No supported gpu backend found"),
    ],
)
def test_building_the_trainer_keeps_the_reason(tmp_path: Path, overrides: list[str], root_cause: str) -> None:
    proc = _icml26(tmp_path, "quickstart", *overrides, "--dry-run")
    assert proc.returncode == 2
    line = _error_line(proc)
    assert line.startswith("error: cannot build 'trainer': ")
    assert root_cause in line
    assert "InstantiationException" not in line


def test_building_the_strategy_keeps_the_reason(tmp_path: Path) -> None:
    proc = _icml26(tmp_path, "upipe_llama", "strategy.attention=foo", "--dry-run")
    assert proc.returncode == 2
    line = _error_line(proc)
    assert "ValueError: attention='foo' is not supported; choose one of" in line


def test_run_time_error_is_one_line_and_debug_shows_the_traceback(tmp_path: Path) -> None:
    args = ("quickstart", "ckpt_path=/nonexistent.ckpt", "data.num_train=64", "data.num_val=32", "data.num_test=32")
    proc = _icml26(tmp_path, *args)
    assert proc.returncode == 1
    assert _error_line(proc) == "error: FileNotFoundError: Checkpoint file not found: /nonexistent.ckpt"
    debug = _icml26(tmp_path, *args, debug=True)
    assert debug.returncode == 1
    assert "Traceback (most recent call last)" in debug.stderr
    assert debug.stderr.strip().splitlines()[-1].startswith("error: FileNotFoundError")


def test_missing_forecast_file_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing.csv"
    proc = _icml26(tmp_path, "complementarity_forecasts", "data.source=file", f"+data.source_kwargs.path={missing}")
    assert proc.returncode == 1
    assert _error_line(proc) == f"error: FileNotFoundError: no forecast file at {missing}"


def test_diverged_run_fails_naming_the_step(tmp_path: Path) -> None:
    proc = _icml26(tmp_path, "quickstart", "model.optimizer.lr=1e8", "trainer.max_epochs=3", "data.num_train=640")
    assert proc.returncode == 1
    line = _error_line(proc)
    assert line.startswith("error: NonFiniteLossError: training loss is ")
    assert "at epoch 0, batch " in line


def test_missing_optional_package_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`arbg_dw4` without transformers: the error keeps the install hint (not only 'No module named ...')."""
    real_import = importlib.import_module

    def without_transformers(name: str, package: str | None = None) -> ModuleType:
        if name == "transformers" or name.startswith("transformers."):
            raise ModuleNotFoundError("No module named 'transformers'", name="transformers")
        return real_import(name, package)

    monkeypatch.setattr(importlib, "import_module", without_transformers)
    cfg = _recipes.compose("arbg_dw4", [], run_dir=tmp_path)
    with pytest.raises(_recipes.RecipeError) as caught:
        _recipes.build(cfg)
    message = str(caught.value)
    assert message.startswith("cannot build 'model'")
    assert "ImportError: the optional dependency 'transformers' is needed" in message
    assert "pip install 'lightning-icml26[hf]'" in message


def test_missing_gymnasium_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = importlib.import_module

    def without_gymnasium(name: str, package: str | None = None) -> ModuleType:
        if name == "gymnasium":
            raise ModuleNotFoundError("No module named 'gymnasium'", name="gymnasium")
        return real_import(name, package)

    monkeypatch.setattr(importlib, "import_module", without_gymnasium)
    with pytest.raises(ImportError, match=r"pip install 'lightning-icml26\[rl\]'"):
        _ = data_rl.RewardReplacementWrapper


def test_dry_run_rehearses_optimizers_and_data(tmp_path: Path) -> None:
    """The dry run builds what the real run builds first: a bad optimizer fails there, not after it."""
    ok = _icml26(tmp_path, "quickstart", "--dry-run")
    assert ok.returncode == 0, ok.stderr
    assert "# model: ClassifierModule, configure_optimizers -> optimizers [AdamW]" in ok.stdout
    assert "# data: train_dataloader -> first batch ((64, 2) float32, (64,) int64)" in ok.stdout
    bad_optimizer = [
        "model.optimizer._target_=lightning_icml26.optim.L1SGD",
        "~model.optimizer.K",
        "~model.optimizer.M",
        "~model.optimizer.weight_decay",
        "+model.optimizer.l1=0.03",
    ]
    proc = _icml26(tmp_path, "rewa_linear", *bad_optimizer, "--dry-run")
    assert proc.returncode == 2
    line = _error_line(proc)
    # refused before the optimizer is made, by its key: the swapped optimizer takes no `eps`
    assert line.startswith("error: model.optimizer.eps: 'eps' is not an argument of lightning_icml26.optim.L1SGD")
