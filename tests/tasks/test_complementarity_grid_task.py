"""The complementarity grid runner: its weights and gains against closed forms, and its settings checks."""

from __future__ import annotations

import numpy as np
import pytest

from lightning_icml26.data.forecasts import make_forecasting_task
from lightning_icml26.tasks import ComplementarityGridConfig, complementarity_grid_task
from lightning_icml26.tasks.complementarity_grid import calibration_weights


def test_tuned_and_defer_weights_match_the_closed_form_of_the_calibration_loss() -> None:
    cal = make_forecasting_task(300, 1.0, 2.0, -0.3, kind="gaussian", seed=5)
    e_h = (cal.p_human - cal.resolution).numpy()
    e_a = (cal.p_model - cal.resolution).numpy()
    shh, saa, sha = np.mean(e_h**2), np.mean(e_a**2), np.mean(e_h * e_a)
    w_star = np.clip((shh - sha) / (shh + saa - 2 * sha), 0.0, 1.0)  # argmin of the quadratic loss
    w = calibration_weights(cal, (0.5, 3.0), epochs=3)
    assert w["tuned"] == pytest.approx(w_star, abs=1e-5)
    assert w["defer"] == (1.0 if saa < shh else 0.0)
    assert w["average"] == 0.5
    assert 0.0 <= w["combiner"] <= 1.0


def test_gaussian_rows_are_the_closed_form_gain_worst_over_calibration_levels() -> None:
    cfg = ComplementarityGridConfig(rhos=(-0.5,), levels=(0.5, 2.0), binary_levels=(), n_test=500, epochs=3, seeds=1)
    out = complementarity_grid_task(cfg)
    assert len(out["rows"]) == 2
    assert [r["AI level"] for r in out["rows"]] == [0.5, 2.0]
    for row in out["rows"]:
        s, rho = row["AI level"], row["rho"]
        # w = 0.5 for every calibration level: gain = var(e_H) - var(0.5 e_H + 0.5 e_A), sigma_H = 1
        expect = 1.0 - (0.25 + 0.25 * s**2 + 0.5 * rho * s)
        assert row["average"] == pytest.approx(expect, abs=1e-12)
        assert row["robust w*"] >= -1e-12  # the robust weight never loses to the human
    (summary,) = out["summary"]
    assert summary["worst average"] == pytest.approx(min(r["average"] for r in out["rows"]))
    assert summary["max error corr"] < 0
    assert out["spread"][0]["seeds"] == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"seeds": 0}, "seeds must be >= 1"), ({"levels": ()}, "levels must be positive"), ({"n_cal": 3}, "n_cal must")],
)
def test_bad_settings_raise(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ComplementarityGridConfig(**kwargs)
