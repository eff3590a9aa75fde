"""PGS's detection and comparison studies: the pooled figures against hand-computed values, the settings' checks."""

from __future__ import annotations

import math
import statistics

import pytest

from lightning_icml26.tasks import (
    COUNTEREXAMPLE_CHOICES,
    PgsComparisonConfig,
    PgsDetectionConfig,
    summarise_detection,
)


def _row(public: bool, pgs: bool, tokens: float) -> dict[str, object]:
    row: dict[str, object] = {"public": public, "pgs": pgs, "property": pgs and not public}
    for choice in COUNTEREXAMPLE_CHOICES:
        row[f"{choice}_tokens"] = tokens if pgs else math.nan
        row[f"{choice}_covers"] = 1.0 if pgs else math.nan
    return row


def test_summarise_detection_pools_seeds_and_spreads_the_catch_ratio() -> None:
    seed0 = [_row(True, True, 4.0), _row(False, True, 6.0), _row(False, False, math.nan)]
    seed1 = [_row(True, True, 10.0), _row(True, True, 2.0)]
    seed1[1]["random_tokens"] = 8.0
    table, figures = summarise_detection([{"rows": seed0}, {"rows": seed1}])
    assert [(r["bugs"], r["public caught"], r["PGS caught"]) for r in table] == [(3, 1, 2), (2, 2, 2)]
    assert figures["catch_ratio"] == pytest.approx(4 / 3)
    assert figures["catch_ratio_seed_sd"] == pytest.approx(statistics.stdev([2 / 1, 2 / 2]))
    assert figures["min_token_tokens"] == pytest.approx((4 + 6 + 10 + 2) / 4)
    assert figures["min_token_vs_random"] == pytest.approx(5.5 / ((4 + 6 + 10 + 8) / 4))


def test_detection_counts_whitespace_words_without_a_tokenizer() -> None:
    assert PgsDetectionConfig().count(["f(1, 2)", "x"]) == [2, 1]


def test_detection_rows_pgs_catches_every_bug_the_public_tests_catch() -> None:
    rows = PgsDetectionConfig(per_problem=1, num_inputs=8, n_hidden=16, stride=10, isolation="process").run()["rows"]
    assert rows
    assert all(row["pgs"] or not row["public"] for row in rows)  # PGS's checks include the public tests
    caught = [row for row in rows if row["pgs"]]
    assert all(row["min_token_tokens"] <= row["random_tokens"] for row in caught)


@pytest.mark.parametrize(
    ("cls", "kwargs", "error"),
    [(PgsComparisonConfig, {"model": None}, TypeError), (PgsDetectionConfig, {"per_problem": 0}, ValueError)],
)
def test_settings_checks(cls: type, kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error, match=next(iter(kwargs))):
        cls(**kwargs)
