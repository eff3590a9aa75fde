"""itc_minatar: ``icml26 run itc_minatar`` at tiny sizes ends by itself; the Lightning-trained world model's
validation figure equals a direct computation; early stopping at the noise-floor goal; the settings object
refuses bad values; a capped first agent sets its seed's update budget."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import lightning_icml26.tasks.itc_minatar as itc_minatar_module
from lightning_icml26.data.rl import episode_windows
from lightning_icml26.data.rl.minatar import MinAtarEpisodes, noise_floor
from lightning_icml26.tasks import ItcMinatarConfig, itc_minatar_task
from lightning_icml26.tasks.itc_minatar import (
    MinAtarWorld,
    fit_world_model,
    next_frame_fn,
    official_itc,
    prepare_minatar,
    window_loss,
)

pytest.importorskip("minatar")

ROOT = Path(__file__).resolve().parents[2]
TINY = [
    "task.train_steps=600",
    "task.val_steps=150",
    "task.max_episode_steps=100",
    "task.wm_steps=20",
    "task.val_every=10",
    "task.d_model=16",
    "task.num_heads=2",
    "task.num_layers=1",
    "task.horizon=3",
    "task.rollout_starts=8",
    "task.imagine_horizon=3",
    "task.ac_updates=2",
    "task.ac_batch=4",
    "task.seeds=2",
    "task.eval_episodes=1",
    "task.eval_steps=30",
]


def test_recipe_runs_at_tiny_size_and_the_process_exits(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("icml26")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [str(script), "run", "itc_minatar", "task.game=freeway", *TINY, f"run_dir={tmp_path}"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    full = json.loads((tmp_path / "itc_minatar.json").read_text())
    summary = full["summary"]
    assert summary["game"] == "freeway"
    assert summary["wm_steps"] == 20.0
    assert summary["wm_val_over_floor"] == pytest.approx(summary["wm_val_loss"] / summary["noise_floor"])
    for name in ("itc", "sample", "argmax"):
        assert len(full["agents"][name]) == 2
        assert full["agents"]["updates"][name] == [2, 2]
        assert summary[f"{name}_persistence_h3"] == full["rollouts"][name]["persistence_error_rate"][-1]
        assert len(full["rollouts"][name]["object_motion"]) == 3
    assert 0.0 <= summary["itc_equals_sample_h1"] <= 1.0
    recorded = json.loads((tmp_path / "summary.json").read_text())
    assert recorded["status"] == "finished"
    assert recorded["metrics"]["noise_floor"] == summary["noise_floor"]


def test_validation_figure_floor_and_early_stop() -> None:
    config = ItcMinatarConfig(game="breakout", train_steps=300, val_steps=80, max_episode_steps=80, floor_samples=1,
                              d_model=16, num_heads=2, num_layers=1, wm_steps=10, val_every=5)  # fmt: skip
    data = prepare_minatar(config)
    assert data.val_frames.shape[1:] == (5, 5, 5)
    # the floor covers exactly the scored transitions: the last of each window (step first + context - 1)
    _, _, where = episode_windows(data.val_tokens, data.val.actions, 5)
    picked = MinAtarEpisodes(
        "breakout", [], [], [], [], [0], branches=[[data.val.branches[e][s + 3] for e, s in where]]
    )
    assert data.floor == noise_floor(picked, data.book)
    model, record = fit_world_model(config, data, goal_ratio=1e9, verbose=False)
    assert record["steps"] == 5.0  # the goal is met at the first validation
    # window_loss against a dense recomputation with the module's own forward pass
    with torch.no_grad():
        logits = model(data.val_frames[:, :4], data.val_actions)[:, -1]
    dense = torch.nn.functional.cross_entropy(logits.reshape(-1, data.book.size), data.val_frames[:, 4].reshape(-1))
    assert record["val_loss"] == pytest.approx(float(dense), rel=1e-5)
    assert window_loss(next_frame_fn(model), data.val_frames, data.val_actions, batch_size=7) == pytest.approx(
        record["val_loss"], rel=1e-5
    )
    _, longer = fit_world_model(config, data, goal_ratio=1.1, verbose=False)
    assert longer["steps"] == 10.0  # the floor is out of reach in 10 steps: the budget ends the training
    assert longer["val_loss"] < record["val_loss"]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("game", "pong", "game must be one of"), ("device", "tpu", "device must be"), ("seeds", 0, "seeds must be"),
     ("d_model", 30, "divisible"), ("agent_seconds", 0.0, "agent_seconds must be positive")],
)  # fmt: skip
def test_bad_settings_are_refused(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ItcMinatarConfig(**{field: value})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ItcMinatarConfig"):
        itc_minatar_task({"game": "breakout"})  # type: ignore[arg-type]


def test_a_capped_first_agent_sets_the_update_budget_of_its_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, int, int, float | None]] = []

    def fake_agent(config, world, name, seed, **kwargs):  # type: ignore[no-untyped-def]
        calls.append((name, seed, config.ac_updates, kwargs["max_seconds"]))
        return float(seed), 3 + seed if name == "itc" else config.ac_updates  # ITC cut by its cap

    monkeypatch.setattr(itc_minatar_module, "train_agent", fake_agent)
    monkeypatch.setattr(itc_minatar_module, "random_return", lambda config, data, seed: -1.0)
    world = MinAtarWorld(SimpleNamespace(game="breakout"), None, official_itc())  # type: ignore[arg-type]
    config = ItcMinatarConfig(ac_updates=10, seeds=2, agent_seconds=5.0)
    out = itc_minatar_module.train_agents(config, world, verbose=False)
    assert calls == [(n, s, 10 if n == "itc" else 3 + s, 5.0 if n == "itc" else None)
                     for s in (0, 1) for n in ("itc", "sample", "argmax")]  # fmt: skip
    assert out["updates"] == {"itc": [3, 4], "sample": [3, 4], "argmax": [3, 4]}
    assert out["budgets_equal"] is False
    assert out["random"] == [-1.0, -1.0]
