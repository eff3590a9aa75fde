"""The GPU script for ArBG on alanine dipeptide: one arbg_aldp recipe run; argument checks and a tiny CPU run."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchmarks.gpu.arbg_alanine import PAPER, main
from tests._support.skips import requires_module, requires_no_deps_package


def test_defaults_are_the_paper_configuration() -> None:
    assert {"model.hidden_size=256", "model.num_layers=8", "model.num_heads=8", "model.num_bins=4096"} <= set(PAPER)
    assert {"model.coord_range=[-3.0,3.0]", "data.batch_size=512", "model.optimizer.lr=5e-4"} <= set(PAPER)


@pytest.mark.parametrize("argv", [["--epochs", "0"], ["--temperatures", "1.0", "-0.5"], ["--device", "tpu"]])
def test_bad_arguments_are_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(argv)
    err = capsys.readouterr().err
    assert "must be positive" in err or "invalid choice: 'tpu'" in err


@requires_module("openmm")
@requires_no_deps_package("openmmtools", "openmmtools==0.27.0")
@requires_module("transformers")
def test_tiny_cpu_run_reports_the_recipe_figures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path / "cache"))
    tiny = ["model.hidden_size=16", "model.num_layers=1", "model.num_heads=2", "model.num_bins=64"]
    tiny += ["model.coord_range=[-6.0,6.0]", "data.num_train=48", "data.num_val=16", "data.num_test=16"]
    tiny += ["data.batch_size=16", "data.sampler_kwargs={burn_in_steps: 100, save_every: 5}", "trainer.max_steps=2"]
    argv = ["--device", "cpu", "--epochs", "1", "--num-eval", "16", "--temperatures", "0.95", "1.0"]
    out = tmp_path / "aldp.json"
    record = main([*argv, "--run-dir", str(tmp_path / "run"), "--json", str(out), "--set", *tiny])
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == record["status"] == "finished"
    config = (tmp_path / "run" / "config.yaml").read_text()
    assert "out_of_range: drop" in config
    assert "max_steps: 2" in config
    assert "accelerator: cpu" in config
    result = record["result"]
    assert any(result["temperature"] == pytest.approx(t) for t in (0.95, 1.0))
    assert result["e_w2"] == summary["metrics"]["test/energy_w2"]
    assert 0.0 < result["ess"] <= 1.0
    assert math.isfinite(result["t_w2"])
    written = json.loads(out.read_text())
    assert set(written["figures"]["targets"]) == {"ess_min", "e_w2_max"}
