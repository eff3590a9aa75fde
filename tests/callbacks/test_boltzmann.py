"""BoltzmannEvalCallback: metrics from a trained generator, PNGs on rank zero, state round trip; recipe end to end."""

from __future__ import annotations

import math
from pathlib import Path

import lightning.pytorch as pl
import pytest
import torch

from lightning_icml26 import _recipes
from lightning_icml26.callbacks import BoltzmannEvalCallback
from lightning_icml26.data import BoltzmannDataModule
from lightning_icml26.metrics.functional import energy_w2
from lightning_icml26.modules.arbg import ArBG, FlowBG
from tests._support.skips import requires_module

SAMPLER = {"burn_in": 300, "thin": 5}


@requires_module("zuko")
def test_callback_logs_metrics_and_writes_png(tmp_path: Path) -> None:
    dm = BoltzmannDataModule(
        "dw4",
        num_train=512,
        num_val=256,
        num_test=64,
        batch_size=128,
        cache_dir=str(tmp_path / "cache"),
        sampler_kwargs=SAMPLER,
    )
    model = FlowBG(n_atoms=4, dim=2, scale=None, transforms=2, hidden_features=(32,))
    cb = BoltzmannEvalCallback(num_samples=300, every_n_epochs=1, clip_quantile=0.0, dirpath=str(tmp_path / "png"))
    trainer = pl.Trainer(
        max_epochs=2,
        callbacks=[cb],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        default_root_dir=str(tmp_path),
    )
    trainer.fit(model, dm)
    logged = trainer.callback_metrics
    for key in ("eval/ess", "eval/energy_w2", "eval/energy_w2_raw"):
        assert key in logged
        assert math.isfinite(float(logged[key]))
    assert 0.0 < float(logged["eval/ess"]) <= 1.0
    assert sorted(p.name for p in (tmp_path / "png").glob("*.png")) == ["boltzmann_epoch0.png", "boltzmann_epoch1.png"]
    assert cb.evaluations == 2
    # the logged E-W2 is an independent recomputation's equal on the same samples (deterministic seed)
    figs, arrays = cb.evaluate(model, dm.system, dm.reference("val"))
    assert figs["energy_w2"] == pytest.approx(float(energy_w2(arrays["rw_e"], arrays["ref_e"])))
    other = BoltzmannEvalCallback()
    other.load_state_dict(cb.state_dict())
    assert other.evaluations == cb.evaluations
    assert other.last == cb.last
    other.load_state_dict({})  # old checkpoints without fields
    assert other.evaluations == 0


def test_callback_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="temperature"):
        BoltzmannEvalCallback(temperature=0.0)
    with pytest.raises(ValueError, match="num_samples"):
        BoltzmannEvalCallback(num_samples=0)


@requires_module("transformers")
def test_arbg_dw4_recipe_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path / "cache"))
    overrides = [
        "trainer.max_epochs=2",
        "data.num_train=256",
        "data.num_val=128",
        "data.num_test=32",
        "data.batch_size=64",
        "+data.sampler_kwargs={burn_in: 200, thin: 5}",
        "model.hidden_size=16",
        "model.num_layers=1",
        "model.num_heads=2",
        "callbacks.boltzmann.num_samples=128",
        "callbacks.boltzmann.every_n_epochs=2",
    ]
    cfg = _recipes.compose("arbg_dw4", overrides, run_dir=tmp_path / "run")
    summary = _recipes.run(cfg)
    text = str(summary)
    assert "eval/energy_w2" in text
    assert "eval/ess" in text
    assert list((tmp_path / "run").glob("boltzmann_epoch*.png"))
    assert torch.isfinite(torch.tensor(float(summary["metrics"]["eval/energy_w2"]) if "metrics" in summary else 0.0))


@requires_module("transformers")
def test_temperature_chosen_on_validation_and_test_figures(tmp_path: Path) -> None:
    dm = BoltzmannDataModule("dw4", num_train=128, num_val=64, num_test=48, batch_size=64,
                             cache_dir=str(tmp_path / "cache"), sampler_kwargs={"burn_in": 100, "thin": 2})  # fmt: skip
    torch.manual_seed(0)
    model = ArBG(n_atoms=4, dim=2, num_bins=32, coord_range=(-6.0, 6.0), hidden_size=16, num_layers=1, num_heads=2)
    temps = [0.7, 1.0, 1.4]
    cb = BoltzmannEvalCallback(num_samples=64, every_n_epochs=1, plot=False, seed=3, temperatures=temps,
                               test_num_samples=96)  # fmt: skip
    trainer = pl.Trainer(max_epochs=1, callbacks=[cb], logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, default_root_dir=str(tmp_path))  # fmt: skip
    trainer.fit(model, dm)
    # an independent recomputation of each candidate with the same seed: the chosen one has the lowest E-W2
    cb.evaluations -= 1  # the seed of the evaluation that just ran
    scores = {t: cb.evaluate(model, dm.system, dm.reference("val"), temperature=t)[0]["energy_w2"] for t in temps}
    cb.evaluations += 1
    assert cb.chosen_temperature == min(scores, key=lambda t: scores[t])
    assert float(trainer.callback_metrics["eval/temperature"]) == pytest.approx(cb.chosen_temperature)
    assert float(trainer.callback_metrics["eval/energy_w2"]) == pytest.approx(min(scores.values()), rel=1e-5)
    trainer.test(model, dm, verbose=False)
    logged = trainer.callback_metrics
    assert float(logged["test/temperature"]) == pytest.approx(cb.chosen_temperature)
    test = dm.reference("test")
    figs, _ = cb.evaluate(model, dm.system, test, cb.chosen_temperature, 96, seed=3 + 10_007)
    assert float(logged["test/energy_w2"]) == pytest.approx(figs["energy_w2"], rel=1e-5)
    assert float(logged["test/ess"]) == pytest.approx(figs["ess"], rel=1e-5)
    centred = test - test.mean(1, keepdim=True)  # NLL in nats per coordinate of the model's own density
    assert float(logged["test/nll"]) == pytest.approx(-float(model.log_prob(centred).mean()) / 8, rel=1e-5)
    assert cb.state_dict()["temperature"] == cb.chosen_temperature
    with pytest.raises(ValueError, match="temperatures must hold at least one"):
        BoltzmannEvalCallback(temperatures=[])
    with pytest.raises(ValueError, match="temperature"):
        BoltzmannEvalCallback(temperatures=[1.0, -1.0])
    with pytest.raises(ValueError, match="test_num_samples must be >= 1"):
        BoltzmannEvalCallback(test_num_samples=0)
