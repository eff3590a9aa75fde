"""The configuration decides the exit code; missing packages are found before training; every run ends
with a verdict in summary.json; trainer=smoke wins over the recipe (issue 51, items 2-5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lightning_icml26 import _recipes, _requirements
from lightning_icml26.cli import main

SMALL = ["data.num_train=64", "data.num_val=32", "data.num_test=32", "trainer.enable_progress_bar=false"]


def _one_error(err: str) -> str:
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, err
    return errors[0]


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize(
    ("recipe", "override", "named"),
    [
        ("quickstart", "model.optimizer.lr=fast", "model.optimizer.lr: 'fast'"),
        ("quickstart", "+model.hidden=3", "model.hidden: 'hidden' is not an argument"),
        ("quickstart", "data.num_train=1.5", "data.num_train: 1.5"),
        ("quickstart", "trainer.strategy=bogus", "strategy='bogus'"),
        ("quickstart", "trainer.max_epochs=-5", "`max_epochs` must be a non-negative integer"),
        ("upipe_llama", "strategy.attention=foo", "attention='foo'"),
        ("upipe_llama", "strategy.timeout=ten", "strategy.timeout"),
        ("fair_compas", "task.steps=abc", "task.steps: 'abc'"),
    ],
)
def test_a_refused_configuration_exits_2_naming_the_key_and_leaves_no_folder(
    recipe: str, override: str, named: str, dry_run: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    code = main(["run", recipe, override, f"run_dir={run_dir}", *(["--dry-run"] if dry_run else [])])
    line = _one_error(capsys.readouterr().err)
    assert code == 2
    assert named in line, line
    assert not run_dir.exists(), "a refused configuration leaves no run folder"


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_missing_optional_package_is_found_before_training(
    dry_run: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plot that must be drawn (``required=true``) needs matplotlib: without it the run is refused before its
    first step. The recipes' default plot (``required: false``) needs nothing (a plain install runs them)."""
    real = _requirements.is_available
    monkeypatch.setattr(_requirements, "is_available", lambda module: module != "matplotlib" and real(module))
    assert _recipes.missing_requirements(_recipes.compose("quickstart", [], run_dir=tmp_path / "probe")) == []
    run_dir = tmp_path / "run"
    overrides = [*SMALL, "callbacks.plot.required=true", f"run_dir={run_dir}"]
    code = main(["run", "quickstart", *overrides, *(["--dry-run"] if dry_run else [])])
    line = _one_error(capsys.readouterr().err)
    assert code == 2
    assert "'matplotlib'" in line
    assert "callbacks.plot" in line
    assert "pip install 'lightning-icml26[plots]'" in line
    assert not run_dir.exists()


def test_task_requirements_follow_the_task_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = _requirements.is_available
    monkeypatch.setattr(_requirements, "is_available", lambda module: module != "matplotlib" and real(module))
    plotting = _recipes.compose("wayse_market", [], run_dir=tmp_path)
    assert [r.module for r in _recipes.missing_requirements(plotting)] == ["matplotlib"]
    quiet = _recipes.compose("wayse_market", ["task.plot=false"], run_dir=tmp_path)
    assert _recipes.missing_requirements(quiet) == []


def test_a_failed_run_exits_1_and_its_summary_says_failed_with_the_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    code = main(["run", "quickstart", *SMALL, "ckpt_path=/nonexistent.ckpt", f"run_dir={run_dir}"])
    line = _one_error(capsys.readouterr().err)
    assert code == 1
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "failed"
    assert f"error: {summary['error']}" == line


def test_a_diverged_run_says_diverged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "run"
    overrides = ["model.optimizer.lr=1e8", "trainer.max_epochs=3", "data.num_train=640", *SMALL[1:]]
    code = main(["run", "quickstart", *overrides, f"run_dir={run_dir}"])
    line = _one_error(capsys.readouterr().err)
    assert code == 1
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "diverged"
    assert line == f"error: {summary['error']}"
    assert summary["error"].startswith("NonFiniteLossError: training loss is ")


def test_smoke_wins_over_the_recipe_and_the_command_line_over_smoke(tmp_path: Path) -> None:
    """quickstart sets 25 epochs, upipe_llama validates every 100 steps: trainer=smoke is one epoch of 2 batches."""
    quick = _recipes.compose("quickstart", ["trainer=smoke"], run_dir=tmp_path)
    assert (quick.trainer.max_epochs, quick.trainer.limit_train_batches, quick.smoke) == (1, 2, True)
    upipe = _recipes.compose("upipe_llama", ["trainer=smoke"], run_dir=tmp_path)
    assert upipe.trainer.val_check_interval is None
    assert upipe.trainer.max_steps == -1
    assert upipe.callbacks.checkpoint.every_n_train_steps == 1
    explicit = _recipes.compose("quickstart", ["trainer=smoke", "trainer.max_epochs=2"], run_dir=tmp_path)
    assert explicit.trainer.max_epochs == 2
    task = _recipes.compose("fair_compas", ["trainer=smoke"], run_dir=tmp_path)
    full = _recipes.compose("fair_compas", [], run_dir=tmp_path)
    assert task.task.steps < full.task.steps
    assert _recipes.compose("quickstart", [], run_dir=tmp_path).trainer.max_epochs == 25
