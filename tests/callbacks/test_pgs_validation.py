"""PGSValidationCallback inside Trainer.fit: evaluates on due epochs, logs the figures, checkpoints its history."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import lightning.pytorch as pl
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26.algorithms.pgs import CodeProblem, ReferenceTester
from lightning_icml26.callbacks import PGSValidationCallback

pytest.importorskip("hypothesis")

PROBLEMS = [
    CodeProblem("inc", "inc", "Add one.", "def inc(n: int) -> int:", (("(1,)", "2"),)),
    CodeProblem("dbl", "dbl", "Double n.", "def dbl(n: int) -> int:", (("(3,)", "6"),)),
]
RIGHT = {"inc": "def inc(n):\n    return n + 1", "dbl": "def dbl(n):\n    return 2 * n"}


class EpochGenerator:
    """Fixes a program only once the module has trained for at least ``skill`` epochs."""

    def __init__(self, module: pl.LightningModule) -> None:
        self.epoch = module.trainer.current_epoch

    def generate(self, problem: CodeProblem) -> str:
        return f"def {problem.entry_point}(n):\n    return n"

    def refine(self, problem: CodeProblem, program: str, feedback: str) -> str:
        return RIGHT[problem.name] if self.epoch >= 1 else program

    def reflect(self, problem: CodeProblem, program: str, feedback: str) -> str:
        return ""

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(t) for t in texts]


class Tiny(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        return self.layer(batch[0]).pow(2).mean()

    def validation_step(self, batch: list[torch.Tensor], batch_idx: int) -> None:
        self.log("val_loss", self.layer(batch[0]).pow(2).mean())

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_callback_logs_pass_rates_and_checkpoints(tmp_path: Path) -> None:
    callback = PGSValidationCallback(PROBLEMS, EpochGenerator, ReferenceTester(), max_refinements=2)
    data = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)
    trainer = pl.Trainer(
        max_epochs=2, accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False,
        callbacks=[callback], default_root_dir=tmp_path, num_sanity_val_steps=1,
    )  # fmt: skip
    trainer.fit(Tiny(), data, data)
    assert [h["epoch"] for h in callback.history] == [0.0, 1.0]
    first, second = callback.history
    assert first["initial_pass@1"] == 0.0
    assert first["pass@1"] == 0.0
    assert first["fix_rate"] == 0.0
    assert second["pass@1"] == 1.0
    assert second["fix_rate"] == 1.0
    # one counterexample per failing step: "(1,)" and "(3,)" have 4 characters each
    assert second["counterexample_tokens"] == 4.0
    assert trainer.callback_metrics["pgs/pass@1"] == pytest.approx(1.0)
    restored = PGSValidationCallback(PROBLEMS, EpochGenerator, ReferenceTester())
    restored.load_state_dict(callback.state_dict())
    assert restored.history == callback.history
    restored.load_state_dict({})
    assert restored.history == []


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="problems"):
        PGSValidationCallback([], EpochGenerator, ReferenceTester())
    with pytest.raises(ValueError, match="programs"):
        PGSValidationCallback(PROBLEMS, EpochGenerator, ReferenceTester(), programs=["x"])
    with pytest.raises(ValueError, match="every_n_epochs"):
        PGSValidationCallback(PROBLEMS, EpochGenerator, ReferenceTester(), every_n_epochs=0)
    with pytest.raises(ValueError, match="max_refinements"):
        PGSValidationCallback(PROBLEMS, EpochGenerator, ReferenceTester(), max_refinements=0)
    with pytest.raises(TypeError, match="tester"):
        PGSValidationCallback(PROBLEMS, EpochGenerator, object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="isolation"):
        PGSValidationCallback(PROBLEMS, EpochGenerator, ReferenceTester(), isolation="vm")


def test_isolation_option() -> None:
    assert PGSValidationCallback(PROBLEMS, EpochGenerator, ReferenceTester()).sandbox.isolation == "bwrap"
    with pytest.warns(UserWarning, match="does NOT stop"):
        weak = PGSValidationCallback(PROBLEMS, EpochGenerator, ReferenceTester(), isolation="process")
    assert weak.sandbox.isolation == "process"
