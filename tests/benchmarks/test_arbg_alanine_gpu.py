"""The prepared GPU script for ArBG on alanine dipeptide: argument checks and a 2-step CPU smoke run."""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path

import pytest

from tests._support.skips import requires_module, requires_no_deps_package

script = importlib.import_module("benchmarks.gpu.arbg_alanine")


def test_defaults_are_the_paper_configuration() -> None:
    args = script.parse_args([])
    assert (args.hidden, args.layers, args.heads, args.bins, args.range) == (256, 8, 8, 4096, 3.0)
    assert (args.batch_size, args.lr) == (512, 5e-4)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--hidden", "30", "--heads", "8"], "divisible"),
        (["--bins", "0"], "--bins must be >= 1"),
        (["--temperatures", "1.0", "-0.5"], "--temperatures must be positive"),
    ],
)
def test_bad_arguments_are_refused(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        script.parse_args(argv)
    assert message in capsys.readouterr().err


@requires_module("openmm")
@requires_no_deps_package("openmmtools", "openmmtools==0.27.0")
@requires_module("transformers")
def test_two_step_cpu_smoke_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "aldp.json"
    argv = "--device cpu --hidden 16 --layers 1 --heads 2 --bins 64 --range 6 --max-steps 2 --batch-size 16"
    argv += " --n-train 48 --n-val 16 --n-test 16 --num-eval 16 --md-burn-in 100 --md-save-every 5"
    record = script.main([*argv.split(), "--temperatures", "0.95", "1.0", "--json", str(out)])
    result = record["result"]
    assert result["steps"] == 2
    assert result["temperature"] in (0.95, 1.0)
    assert 0.0 < result["ess"] <= 1.0
    assert math.isfinite(result["e_w2"])
    assert math.isfinite(result["t_w2"])
    written = json.loads(out.read_text())
    assert set(written["figures"]["targets"]) == {"ess_min", "e_w2_max"}
