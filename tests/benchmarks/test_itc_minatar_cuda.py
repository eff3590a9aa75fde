"""The GPU script for ITC on MinAtar: its sizes, a clear refusal without CUDA, and its plumbing on the CPU
(the ``itc_minatar`` recipe with the device and size overrides, the CPU benchmark's targets)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
import torch

pytest.importorskip("minatar")

script = importlib.import_module("benchmarks.gpu.itc_minatar_cuda")
cpu_bench = importlib.import_module("benchmarks.itc_minatar")

TINY = ["train_steps=300", "val_steps=80", "max_episode_steps=80", "d_model=16", "num_layers=1", "num_heads=2",
        "batch_size=8", "wm_steps=4", "val_every=2", "horizon=2", "rollout_starts=4", "ac_updates=2", "ac_batch=2",
        "imagine_horizon=2", "seeds=2", "eval_episodes=1", "eval_steps=20"]  # fmt: skip


def test_sizes_exceed_the_cpu_recipe_defaults() -> None:
    from lightning_icml26.tasks import ItcMinatarConfig

    cpu = ItcMinatarConfig()
    assert (script.GPU["d_model"], script.GPU["num_layers"]) == (128, 4)
    for key in ("train_steps", "d_model", "num_layers", "ac_updates", "ac_batch", "eval_episodes"):
        assert script.GPU[key] > getattr(cpu, key), key
    args = script.parse_args(["--device", "cpu"])
    assert args.games == ["breakout", "freeway"]
    assert args.json.name == "itc_minatar_cuda.json"
    assert args.json.parent.name == "results"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_without_cuda_the_script_refuses_clearly(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        script.parse_args([])
    err = capsys.readouterr().err
    assert "--device cuda needs a CUDA GPU" in err
    assert "torch.cuda.is_available() is False" in err


def test_tiny_cpu_run_goes_through_the_recipe(tmp_path: Path) -> None:
    out = tmp_path / "itc.json"
    figures = script.main(["--device", "cpu", "--games", "breakout", "--agent-seconds", "60", "--set", *TINY,
                           "--json", str(out)])  # fmt: skip
    result = figures["results"]["breakout"]
    assert result["world_model"]["params"] > 0
    for name in ("itc", "sample", "argmax"):
        assert len(result["agents"][name]) == 2
        assert result["agents"]["updates"][name] == [2, 2]  # the cap is far away: every agent runs its budget
        assert len(result["rollouts"][name]["persistence_error_rate"]) == 2
    assert result["agents"]["budgets_equal"] is True
    written = json.loads(out.read_text())["figures"]
    assert written["device"] == "cpu"
    assert written["gpu"] is None
    _, expected = cpu_bench.summarise({"breakout": result}, 2)  # the CPU benchmark's targets, same figures
    assert written["targets"] == json.loads(json.dumps(expected))


def test_a_bad_task_key_is_refused_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="no_such_key"):
        script.main(["--device", "cpu", "--games", "breakout", "--set", "no_such_key=1", "--json", str(tmp_path / "x")])
