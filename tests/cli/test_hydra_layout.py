"""Recipes are plain Hydra: config groups, a typed schema, the pkg:// search path, multirun; same outputs everywhere."""

from __future__ import annotations

import dataclasses
import importlib.resources
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import lightning.pytorch as pl
import pytest
import yaml

from lightning_icml26 import _recipes
from lightning_icml26._schema import TrainerConfig

ROOT = Path(__file__).resolve().parents[2]
RECIPES = [r.name for r in _recipes.list_recipes()]
RECIPE_DIR = ROOT / "lightning_icml26" / "recipes"


def _defaults(recipe: str) -> list[object]:
    return list(yaml.safe_load((RECIPE_DIR / f"{recipe}.yaml").read_text()).get("defaults", []))


# A task recipe picks an option of the ``task`` group in its defaults; the others train with data/model/trainer.
TASKS = {name for name in RECIPES if any(isinstance(d, dict) and "task" in d for d in _defaults(name))}
TRAINING = [name for name in RECIPES if name not in TASKS]
GROUPS = ["trainer", "logger", "callbacks", "data", "model", "model/optimizer", "strategy", "task"]


def test_recipes_are_a_package_found_without_a_symlink() -> None:
    shipped = importlib.resources.files("lightning_icml26.recipes")
    assert shipped.joinpath("quickstart.yaml").is_file()
    for group in GROUPS:
        assert any(p.name.endswith(".yaml") for p in shipped.joinpath(group).iterdir()), group
    tracked = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert not [line for line in tracked.splitlines() if line.startswith("120000")], "no tracked symlink"
    assert not (ROOT / "recipes").exists()


@pytest.mark.parametrize("recipe", RECIPES)
def test_recipe_files_compose_groups_instead_of_repeating_blocks(recipe: str) -> None:
    raw = yaml.safe_load((_recipes.recipes_dir() / f"{recipe}.yaml").read_text())
    defaults = raw["defaults"]
    assert defaults[0] == ("_base" if recipe in TASKS else "_train")
    assert "_target_" not in raw.get("trainer", {}), "the trainer comes from the schema and trainer/ group"
    assert "logger" not in raw
    text = (_recipes.recipes_dir() / f"{recipe}.yaml").read_text()
    assert "lightning_icml26.callbacks.MetricsPlot" not in text
    assert "optimizer:\n    _target_" not in text, "optimizers come from model/optimizer/"


def test_trainer_schema_is_every_trainer_argument_with_lightnings_defaults() -> None:
    signature = inspect.signature(pl.Trainer.__init__).parameters
    expected = {name: p.default for name, p in signature.items() if name not in ("self", "callbacks", "logger")}
    fields = {f.name: f.default for f in dataclasses.fields(TrainerConfig) if f.name != "_target_"}
    assert fields == expected


@pytest.mark.parametrize("recipe", TRAINING)
def test_every_training_recipe_writes_the_same_outputs(recipe: str, tmp_path: Path) -> None:
    cfg = _recipes.compose(recipe, [], run_dir=tmp_path)
    assert cfg.callbacks.plot._target_ == "lightning_icml26.callbacks.MetricsPlot"
    assert cfg.callbacks.plot.filename == "metrics.png"
    assert cfg.callbacks.checkpoint.dirpath == f"{tmp_path}/checkpoints"
    assert cfg.callbacks.checkpoint.filename == "last"
    assert dict(cfg.logger.csv) == {
        "_target_": "lightning.pytorch.loggers.CSVLogger",
        "save_dir": str(tmp_path),
        "name": "logs",
        "version": "",
    }
    assert cfg.trainer.default_root_dir == str(tmp_path)


@pytest.mark.parametrize("recipe", ["quickstart", "rewa_linear", "complementarity_forecasts"])
def test_runs_put_plot_metrics_and_checkpoint_in_the_same_places(recipe: str, tmp_path: Path) -> None:
    overrides = ["trainer=smoke", "trainer.max_epochs=2"]
    if recipe == "complementarity_forecasts":
        overrides.append("data.source=polls")
    summary = _recipes.run(_recipes.compose(recipe, overrides, run_dir=tmp_path))
    assert summary["status"] == "finished"
    assert (tmp_path / "metrics.png").stat().st_size > 1000
    assert (tmp_path / "checkpoints" / "last.ckpt").is_file()
    lines = (tmp_path / "logs" / "metrics.csv").read_text().splitlines()
    assert "epoch" in lines[0].split(",")
    assert len(lines) > 2
    assert (tmp_path / "config.yaml").is_file()
    assert (tmp_path / "summary.json").is_file()


def test_group_options_swap_whole_blocks(tmp_path: Path) -> None:
    cfg = _recipes.compose("rewa_linear", ["model/optimizer=l1_sgd"], run_dir=tmp_path)
    assert cfg.model.optimizer._target_ == "lightning_icml26.optim.L1SGD"
    assert "K" not in cfg.model.optimizer
    upipe = _recipes.compose("upipe_llama", ["strategy.attention=ring"], run_dir=tmp_path)
    assert upipe.trainer.strategy == upipe.strategy
    assert upipe.trainer.strategy.attention == "ring"


def test_multirun_runs_one_job_per_value_each_in_its_own_folder(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ICML26_RUN_ID": "sweep", "OMP_NUM_THREADS": "1"}
    env.pop("ICML26_RUN_DIR", None)
    command = [
        sys.executable, "-m", "lightning_icml26.cli", "run", "quickstart", "-m", "trainer.max_epochs=1,2",
        "trainer=smoke", "data.num_train=128", "data.num_val=64", "data.num_test=64", "--output-root", str(tmp_path),
    ]  # fmt: skip
    proc = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sweep = tmp_path / "quickstart" / "sweep"
    assert sorted(p.name for p in sweep.iterdir() if p.is_dir()) == ["0", "1"]
    for job, epochs in (("0", 1), ("1", 2)):
        run_dir = sweep / job
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["run_dir"] == str(run_dir)
        assert f"trainer.max_epochs={epochs}" in (run_dir / ".hydra" / "overrides.yaml").read_text()
        with open(run_dir / "logs" / "metrics.csv") as handle:
            logged = {line.split(",")[0] for line in handle.readlines()[1:]}
        assert {str(e) for e in range(epochs)} <= logged
        assert (run_dir / "metrics.png").is_file()
        assert (run_dir / "checkpoints" / "last.ckpt").is_file()
    assert proc.stdout.count("== quickstart: done") == 2
