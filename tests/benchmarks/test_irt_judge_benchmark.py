"""benchmarks/irt_judge.py: the ``--quick`` path ends with its JSON, whose targets (some with a note) pass the check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import irt_judge
from benchmarks._common import check_targets, target

TARGETS = {
    "prompt_sensitive_flag_rate",
    "low_discrimination_flag_rate",
    "clean_false_alarm_rate",
    "em_girth_alpha_corr_min",
    "em_girth_cv_rho_gap_max",
    "em_girth_cv_rho_gap_max_sharp_judges",
    "em_speedup_vs_nuts",
    "em_speedup_vs_nuts_sharp_judges",
    "em_nuts_cv_rho_gap_max_sharp_judges",
    "em_nuts_cv_rho_gap_max",
}


def test_quick_run_writes_its_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the paper's regimes at a tenth of their samples, one seed: the same code path as --quick, in seconds
    small = {name: {**cfg, "n_samples": cfg["n_samples"] // 10} for name, cfg in irt_judge.IRT_REGIMES.items()}
    for name, cfg in small.items():  # the package's dict, which the script and the task both read
        monkeypatch.setitem(irt_judge.IRT_REGIMES, name, cfg)
    monkeypatch.setattr(irt_judge, "NUMPYRO", False)  # NUTS is the slow baseline; its targets are then unmeasured
    out = tmp_path / "irt_judge.json"
    irt_judge.main(["--quick", "--seeds", "1", "--json", str(out)])
    figures = json.loads(out.read_text())["figures"]
    targets = check_targets(figures)
    assert set(targets) == TARGETS
    assert targets["em_speedup_vs_nuts"]["note"].startswith("slowest ratio")
    assert targets["em_speedup_vs_nuts"]["met"] is False  # not measured: never met
    rate = targets["prompt_sensitive_flag_rate"]
    assert rate["value"] in (0.0, 1.0)  # one seed: flagged or not
    assert rate["met"] is (rate["value"] >= 0.95)
    assert [row["regime"] for row in figures["rows"]] == list(small)


def test_check_targets_takes_an_optional_note_and_refuses_other_keys() -> None:
    assert check_targets({"targets": {"x": target(1.0, ">=", 0.5, note="why")}})["x"]["note"] == "why"
    with pytest.raises(ValueError, match="optional str 'note'"):
        check_targets({"targets": {"x": {**target(1.0, ">=", 0.5), "comment": "no"}}})
    with pytest.raises(ValueError, match="optional str 'note'"):
        check_targets({"targets": {"x": {**target(1.0, ">=", 0.5), "note": 3}}})
    with pytest.raises(TypeError, match="note must be a str"):
        target(1.0, ">=", 0.5, note=3)  # type: ignore[arg-type]
