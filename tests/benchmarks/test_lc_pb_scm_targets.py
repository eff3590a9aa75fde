"""lc_pb_scm's target builder: same keys for any size, values from the rows at the largest n."""

from __future__ import annotations

import importlib

import numpy as np
import pytest


def _row(method: str, latents: int, n: int, shd: float, sk: float, lat: float) -> dict:
    return {"method": method, "latents": latents, "n": n, "SHD": shd, "skeleton F1": sk, "latent-pair F1": lat}


def test_targets_use_the_largest_n_and_the_better_baseline() -> None:
    build = importlib.import_module("benchmarks.lc_pb_scm").build_targets
    rows = [
        _row("LCPBSCM", 2, 100, 1.0, 0.1, 0.1),  # smaller n: ignored
        _row("LCPBSCM", 2, 1000, 3.0, 0.9, 0.8),
        _row("PC-G", 2, 1000, 6.0, 0.8, np.nan),
        _row("PGFSkeleton", 2, 1000, 5.0, 0.7, 0.0),
        _row("LCPBSCM", 0, 1000, 2.0, 0.9, np.nan),
        _row("PC-G", 0, 1000, 2.0, 0.9, np.nan),
        _row("PGFSkeleton", 0, 1000, 2.0, 0.97, np.nan),
    ]
    targets = build({"accuracy": 0.96}, rows)
    assert set(targets) == {
        "local_class_accuracy",
        "shd_over_best_baseline_latent",
        "latent_pair_f1",
        "skeleton_f1_gap_no_latent",
    }
    assert targets["local_class_accuracy"]["met"] is True
    assert targets["shd_over_best_baseline_latent"] == {"value": pytest.approx(0.6), "target": "<= 0.7", "met": True}
    assert targets["latent_pair_f1"]["value"] == pytest.approx(0.8)
    assert targets["skeleton_f1_gap_no_latent"]["value"] == pytest.approx(0.07)
    assert targets["skeleton_f1_gap_no_latent"]["met"] is False
