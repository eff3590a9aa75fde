"""arbg_vs_flow runs the recipes: its figures equal a recipe run's with the same overrides; flags; matched sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from benchmarks.arbg_vs_flow import FLOW_WIDTH, main
from lightning_icml26.cli import run_recipe
from lightning_icml26.modules.arbg import ArBG, FlowBG
from tests._support.skips import requires_module

pytestmark = [requires_module("transformers"), requires_module("zuko")]


def _effective_parameters(module: nn.Module) -> int:
    """Parameter entries that can change the output: a linear layer's ``mask`` buffer zeroes the others."""
    total = 0
    for layer in module.modules():
        for name, p in layer.named_parameters(recurse=False):
            mask = getattr(layer, "mask", None)
            if name == "weight" and isinstance(mask, torch.Tensor) and mask.shape == p.shape:
                total += int(mask.bool().sum())
            else:
                total += p.numel()
    return total


@pytest.mark.parametrize(("system", "n_atoms", "dim"), [("dw4", 4, 2), ("lj13", 13, 3)])
def test_flow_width_matches_arbg_parameter_count(system: str, n_atoms: int, dim: int) -> None:
    arbg = ArBG(n_atoms, dim, num_bins=512, coord_range=(-6.0, 6.0), scale=1.0, hidden_size=64, num_layers=3)
    width = FLOW_WIDTH[system]
    flow = FlowBG(n_atoms, dim, scale=1.0, transforms=4, hidden_features=(width, width))
    ours, theirs = _effective_parameters(arbg), _effective_parameters(flow)
    assert ours == sum(p.numel() for p in arbg.parameters())  # nothing masked in ArBG
    assert abs(theirs - ours) / ours < 0.015
    assert width >= n_atoms * dim  # a narrower MADE layer would cut autoregressive dependencies


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--lr", "0"], "--lr and --temperatures must be positive"), (["--systems", "aldp"], "must be among"),
     (["--epochs", "0"], "--epochs must be a positive integer")],
)  # fmt: skip
def test_bad_flags_are_refused(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(argv)
    assert message in capsys.readouterr().err


def test_benchmark_equals_recipe(tmp_path: Path) -> None:
    tiny = [f"data.cache_dir={tmp_path / 'cache'}", "data.sampler_kwargs={burn_in: 100, thin: 2}"]
    argv = ["--systems", "dw4", "--seeds", "1", "--seed", "3", "--epochs", "1", "--num-train", "64"]
    argv += ["--num-eval", "16", "--temperatures", "0.9", "1.0", "--run-dir", str(tmp_path / "bench"), "--set", *tiny]
    argv += ["data.num_val=32", "data.num_test=32"]
    record = main([*argv, "--json", str(tmp_path / "out.json")])
    cell = record["systems"]["dw4"]["runs"][0]
    # the same run written as a user would write it on the command line
    overrides = ["seed=3", "trainer.max_epochs=1", "data.num_train=64", "data.batch_size=256", "test_after_fit=true"]
    overrides += ["+model/lr_scheduler=cosine", "model.num_layers=3", "model.coord_range=[-6,6]"]
    overrides += ["callbacks.boltzmann.num_samples=16", "callbacks.boltzmann.test_num_samples=32"]
    overrides += ["callbacks.boltzmann.every_n_epochs=1", "callbacks.boltzmann.temperatures=[0.9,1.0]", *tiny]
    overrides += ["data.num_val=32", "data.num_test=32", "trainer.enable_progress_bar=false"]
    metrics = run_recipe("arbg_dw4", overrides, tmp_path / "recipe")["metrics"]
    assert cell["arbg"]["e_w2"] == pytest.approx(metrics["test/energy_w2"], rel=1e-6)
    assert cell["arbg"]["ess"] == pytest.approx(metrics["test/ess"], rel=1e-6)
    assert cell["arbg"]["val_nll"] == pytest.approx(metrics["eval/nll"], rel=1e-6)
    assert cell["arbg"]["temperature"] == pytest.approx(metrics["test/temperature"])
    assert cell["flow"]["temperature"] == 1.0  # the flow is scored at its own density only
    assert set(record["targets"]) == {"dw4_e_w2_ratio", "dw4_ess_ratio"}
    assert (tmp_path / "out.json").is_file()
