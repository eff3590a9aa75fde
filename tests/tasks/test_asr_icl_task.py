"""The ASR-ICL task: every method on the same rows, figures from the recourse metrics, the JSON written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lightning_icml26.data.recourse_tables import make_credit
from lightning_icml26.tasks import AsrIclConfig, asr_icl_task
from lightning_icml26.tasks.asr_icl import compare_recourse, sample_context


def test_context_has_every_class_and_no_repeats() -> None:
    y = np.array([0] * 50 + [1] * 3 + [2] * 2)
    idx = sample_context(y, 8, np.random.default_rng(0))
    assert len(set(idx.tolist())) == 8
    assert set(y[idx]) == {0, 1, 2}
    with pytest.raises(ValueError, match="n_context must be"):
        sample_context(y, 2, np.random.default_rng(0))


def test_compare_recourse_on_the_same_rows(tmp_path: Path) -> None:
    methods = ("asr_icl", "full_zo", "full_zo_norefine", "wachter")
    out = compare_recourse(make_credit(n=600), AsrIclConfig(predictor="lsa", n_rows=4, methods=methods))
    assert out["full_zo_norefine"]["queries"] == 150.0  # full budget (first query reads the label)
    assert 150.0 - (6 + 5) <= out["full_zo"]["queries"] <= 150.0  # RACOS stops with m + 5 left for refining
    assert out["wachter"]["queries"] == 0.0
    assert out["asr_icl"]["queries"] < out["full_zo"]["queries"]
    assert {m["rows"] for m in out.values()} == {4.0}
    for figures in out.values():  # dense = cost + L1 of discrete + L0 of continuous, each in [0, sparsity]
        assert figures["dense_cost"] >= max(figures["cost"], figures["sparsity"]) - 1e-9
        assert figures["dense_cost"] <= figures["cost"] + figures["sparsity"] + 1e-9
    assert out["full_zo_norefine"]["dense_cost"] > out["full_zo_norefine"]["cost"] + 1.0  # RACOS moves all features
    config = AsrIclConfig(tmp_path, dataset="credit", predictor="kernel", n_rows=2, methods=["dice_random"])
    flat = asr_icl_task(config)
    assert json.loads((tmp_path / "asr_icl.json").read_text()) == flat
    assert 0.0 <= flat["dice_random/validity"] <= 1.0

    def timeless(figures: dict[str, float]) -> dict[str, float]:
        return {k: v for k, v in figures.items() if not k.endswith("/seconds")}

    assert timeless(config.run()) == timeless(flat)  # run() runs the same task
    with pytest.raises(ValueError, match="predictor must be one of"):
        AsrIclConfig(dataset="credit", predictor="tabpfn")
    with pytest.raises(ValueError, match="methods must be a non-empty list"):
        AsrIclConfig(methods=["lime"])
