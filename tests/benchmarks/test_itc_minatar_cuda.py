"""The prepared GPU script for ITC on MinAtar: its sizes, a clear refusal without CUDA, tiny CPU runs (full and
cut by the wall-clock cap, with the partial JSON)."""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path

import pytest
import torch

pytest.importorskip("minatar")

script = importlib.import_module("benchmarks.gpu.itc_minatar_cuda")
cpu_bench = importlib.import_module("benchmarks.itc_minatar")

TINY = [
    "--device",
    "cpu",
    "--games",
    "breakout",
    "--train-steps",
    "300",
    "--val-steps",
    "80",
    "--max-episode-steps",
    "80",
    "--d-model",
    "16",
    "--layers",
    "1",
    "--heads",
    "2",
    "--wm-steps",
    "4",
    "--horizon",
    "2",
    "--rollout-starts",
    "4",
    "--ac-updates",
    "2",
    "--ac-batch",
    "2",
    "--imagine-horizon",
    "2",
    "--seeds",
    "2",
    "--eval-episodes",
    "1",
    "--eval-steps",
    "20",
]


def test_sizes_exceed_the_cpu_benchmark() -> None:
    args = script.parse_args(["--device", "cpu"]) if not torch.cuda.is_available() else script.parse_args([])
    assert (args.d_model, args.layers) == (128, 4)  # CPU full size: 64, 2
    assert args.train_steps > 15000
    assert args.ac_updates > 40
    assert args.ac_batch > 32
    assert args.seeds == 3
    assert args.games == ["breakout", "freeway"]
    assert args.max_minutes < 8
    assert args.json.name == "itc_minatar_cuda.json"
    assert args.json.parent.name == "results"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_without_cuda_the_script_refuses_clearly(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        script.parse_args([])
    err = capsys.readouterr().err
    assert "--device cuda needs a CUDA GPU" in err
    assert "torch.cuda.is_available() is False" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--d-model", "30", "--heads", "4"], "divisible"),
        (["--seeds", "0"], "--seeds must be >= 1"),
        (["--max-minutes", "0"], "--max-minutes must be positive"),
        (["--device", "tpu"], "--device must be cuda"),
    ],
)
def test_bad_arguments_are_refused(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        script.parse_args(["--device", "cpu", *argv] if "--device" not in argv else argv)
    assert message in capsys.readouterr().err


def test_tiny_cpu_run_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "itc.json"
    record = script.main([*TINY, "--json", str(out)])
    assert record["complete"] is True
    result = record["results"]["breakout"]
    for name in ("itc", "sample", "argmax"):
        assert len(result["agents"][name]) == 2
        assert result["agents"]["updates"][name] == [2, 2]
    assert result["budgets_equal"] is True
    assert result["budgets_equal_within_seed"] is True
    assert result["agents_complete"] is True
    written = json.loads(out.read_text())["figures"]
    _, expected = cpu_bench.summarise({"breakout": result}, 2)  # the CPU benchmark's targets, same figures
    assert written["targets"] == json.loads(json.dumps(expected))


def test_wall_clock_cap_leaves_a_partial_json(tmp_path: Path) -> None:
    out = tmp_path / "partial.json"
    record = script.main([*TINY, "--max-minutes", "0.0001", "--json", str(out)])
    assert record["complete"] is False
    assert record["stopped_at_deadline"] is True
    written = json.loads(out.read_text())["figures"]
    assert written["results"]["breakout"]["agents"]["itc"] == []
    returns = written["targets"]["breakout_itc_minus_sample_return"]
    assert math.isnan(returns["value"])
    assert returns["met"] is False
    assert "breakout_wm_val_loss_over_floor" in written["targets"]  # the finished stages are kept


def test_time_share_splits_the_time_left() -> None:
    assert script.time_share(100.0, 40.0, 5, 2.0) == 10.0
    assert script.time_share(100.0, 120.0, 5, 2.0) == 1.0  # past the deadline a part still gets a second
    with pytest.raises(ValueError, match="parts_left"):
        script.time_share(100.0, 40.0, 0, 2.0)


def test_a_capped_itc_agent_sets_the_update_budget_of_its_seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, int, int]] = []

    def fake_agent(logits_fn, data, itc, config, name, seed, **kwargs):  # type: ignore[no-untyped-def]
        calls.append((name, seed, config.updates))
        return float(seed), 1 if name == "itc" else config.updates  # ITC cut by its cap after one update

    monkeypatch.setattr(script, "train_agent", fake_agent)
    record = script.main([*TINY, "--json", str(tmp_path / "x.json")])
    assert calls == [(name, seed, 2 if name == "itc" else 1) for seed in (0, 1) for name in ("itc", "sample", "argmax")]
    result = record["results"]["breakout"]
    assert result["agents"]["updates"] == {"itc": [1, 1], "sample": [1, 1], "argmax": [1, 1]}
    assert result["budgets_equal"] is False
    assert result["budgets_equal_within_seed"] is True
