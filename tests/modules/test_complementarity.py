"""HumanAICombiner: the safe cap against an independent numpy computation, the learned weight against a scipy
optimum of the empirical loss inside the cap, the end-of-fit guarantee, w(x), errors and the recipe."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from lightning.pytorch import Trainer
from scipy import optimize, stats

from lightning_icml26 import _recipes
from lightning_icml26.data import ForecastDataModule
from lightning_icml26.modules import HumanAICombiner


def _trainer(epochs: int) -> Trainer:
    return Trainer(
        max_epochs=epochs,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )


def _data(rho: float, sigma_ai: float, n: int = 2000, kind: str = "gaussian", feature_effect: float = 0.0, batch=400):
    kwargs = {"num_questions": n, "kind": kind, "rho": rho, "sigma_ai": sigma_ai, "seed": 3,
              "feature_effect": feature_effect}  # fmt: skip
    dm = ForecastDataModule("synthetic", kwargs, fractions=(0.6, 0.2), batch_size=batch, seed=0)
    dm.setup("fit")
    return dm


def _adam(params):
    return torch.optim.Adam(params, lr=0.1)


def _numpy_cap(e_h: np.ndarray, e_a: np.ndarray, lo: float, hi: float, confidence: float) -> tuple[float, float]:
    """Independent cap: RMSE, uncentred rho, Fisher-z upper bound, w_bar at both ends of the interval."""
    s_h = math.sqrt(np.mean(e_h**2))
    rho = np.mean(e_h * e_a) / math.sqrt(np.mean(e_h**2) * np.mean(e_a**2))
    rho_hi = math.tanh(math.atanh(rho) + stats.norm.ppf(0.5 + confidence / 2) / math.sqrt(len(e_h) - 3))
    bounds = [2 * (s_h**2 - rho_hi * s_h * s) / (s_h**2 + s**2 - 2 * rho_hi * s_h * s) for s in (lo, hi)]
    return min(max(min(bounds), 0.0), 1.0), s_h


def test_cap_and_learned_weight_match_independent_references():
    dm = _data(rho=-0.3, sigma_ai=0.8, batch=1200)
    train = dm.splits["train"]
    e_h = (train.p_human - train.resolution).float().double().numpy()
    e_a = (train.p_model - train.resolution).float().double().numpy()
    model = HumanAICombiner(sigma_ai_range=(0.5, 3.0), loss="squared", optimizer=_adam)
    _trainer(60).fit(model, datamodule=dm)
    cap, s_h = _numpy_cap(e_h, e_a, 0.5, 3.0, 0.95)
    assert float(model.sigma_human) == pytest.approx(s_h, rel=1e-5)
    assert float(model.weight_cap) == pytest.approx(cap, rel=1e-4)
    # the learned weight minimises the empirical team loss over [0, cap] (scipy's bounded search)
    ref = optimize.minimize_scalar(
        lambda w: np.mean(((1 - w) * e_h + w * e_a) ** 2), bounds=(0, cap), method="bounded", options={"xatol": 1e-8}
    )
    w = float(model.weight().detach())
    assert 0 < w <= cap + 1e-6
    assert w == pytest.approx(ref.x, abs=0.01)
    assert model.guaranteed_gain_ >= 0
    # the cap is binding here: the unconstrained optimum of the training loss lies above it
    free = optimize.minimize_scalar(lambda w: np.mean(((1 - w) * e_h + w * e_a) ** 2), bounds=(0, 1), method="bounded")
    assert free.x > cap
    # robust=False learns the unconstrained optimum instead
    plain = HumanAICombiner(sigma_ai_range=(0.5, 3.0), loss="squared", robust=False, optimizer=_adam)
    _trainer(60).fit(plain, datamodule=dm)
    assert float(plain.weight().detach()) == pytest.approx(free.x, abs=0.01)


def test_high_correlation_keeps_the_human_alone():
    dm = _data(rho=0.8, sigma_ai=1.0)
    model = HumanAICombiner(sigma_ai_range=(0.5, 3.0), loss="squared")
    trainer = _trainer(3)
    trainer.fit(model, datamodule=dm)
    assert float(model.weight_cap) == 0.0
    assert float(model.weight().detach()) == 0.0
    assert float(model.robust_gain) == 0.0
    trainer.test(model, datamodule=dm, verbose=False)
    metrics = trainer.callback_metrics
    assert float(metrics["test_gain_over_human"]) == pytest.approx(0.0, abs=1e-7)
    assert float(metrics["test_loss_team"]) == pytest.approx(float(metrics["test_loss_human"]), rel=1e-6)


@pytest.mark.slow
def test_feature_dependent_weight_follows_the_better_member():
    dm = _data(rho=-0.5, sigma_ai=1.0, n=3000, feature_effect=1.2, batch=900)
    model = HumanAICombiner(sigma_ai_range=(0.2, 3.0), loss="squared", feature_dim=1, hidden=8, optimizer=_adam)
    _trainer(40).fit(model, datamodule=dm)
    with torch.no_grad():
        w = model.weight(torch.tensor([[-0.9], [0.0], [0.9]]))
    cap = float(model.weight_cap)
    assert cap > 0
    assert bool((w >= 0).all())
    assert bool((w <= cap + 1e-6).all())
    # the AI's errors shrink as x falls (s_A = exp(1.2 x)) and the human's grow: more weight on the AI
    assert float(w[0]) > float(w[1]) > float(w[2])
    assert model.guaranteed_gain_ >= 0


def test_binary_brier_training_runs_and_logs():
    dm = _data(rho=-0.5, sigma_ai=1.0, n=1000, kind="binary")
    model = HumanAICombiner(sigma_ai_range=(0.3, 0.5), loss="brier")  # AI's Brier between 0.09 and 0.25
    trainer = _trainer(5)
    trainer.fit(model, datamodule=dm)
    metrics = trainer.callback_metrics
    for key in ("val_loss_team", "val_gain", "val_weight_cap", "val_guaranteed_gain"):
        assert key in metrics
    assert float(metrics["val_guaranteed_gain"]) >= 0
    assert model.guaranteed_gain_ == pytest.approx(float(metrics["val_guaranteed_gain"]), abs=1e-6)


def test_errors():
    with pytest.raises(ValueError, match="inverted"):
        HumanAICombiner(sigma_ai_range=(2.0, 0.5))
    with pytest.raises(ValueError, match="empty set"):
        HumanAICombiner(sigma_ai_range=())
    with pytest.raises(ValueError, match=r"rho_range must lie in \[-1.0, 1.0\]"):
        HumanAICombiner(rho_range=(-2.0, 0.0))
    with pytest.raises(ValueError, match="loss must be"):
        HumanAICombiner(loss="hinge")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"features must have shape \(N, 2\)"):
        HumanAICombiner(feature_dim=2).weight(torch.zeros(3, 1))
    with pytest.raises(RuntimeError, match="not calibrated"):
        HumanAICombiner().worst_case_gain()


def test_recipe_runs_end_to_end(tmp_path: Path):
    overrides = ["data.source=polls", "trainer.max_epochs=2", "trainer.enable_progress_bar=false"]
    summary = _recipes.run(_recipes.compose("complementarity_forecasts", overrides, run_dir=tmp_path))
    saved = json.loads((tmp_path / "summary.json").read_text())["metrics"]
    assert saved["test_loss_human"] == pytest.approx(summary["metrics"]["test_loss_human"])
    # 2016 polls: raw and adjusted errors are highly correlated (far above s_H / hi = 0.5): the human alone
    assert saved["val_rho_train"] > 0.9
    assert saved["test_weight_cap"] == 0.0
    assert saved["test_gain_over_human"] == pytest.approx(0.0, abs=1e-9)
