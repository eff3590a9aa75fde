"""The ArBG DW-4 study's new axes: argument parsing, the probe plan, the range check and the axes claim."""

from __future__ import annotations

import argparse
import importlib
import math

import pytest
import torch

from lightning_icml26.modules.arbg.module import augment
from tests._support.skips import requires_module

pytestmark = [requires_module("transformers"), requires_module("zuko")]

study = importlib.import_module("benchmarks.arbg_dw4_study")


def _args(grids: list[str]) -> argparse.Namespace:
    return argparse.Namespace(
        grids=grids, bins=[128, 512], ranges=[6.0], transforms=[4], spline_bins=[8], lrs=[3e-4, 1e-3], archs=["32x2"]
    )


def test_parse_arch() -> None:
    assert study.parse_arch("256X8") == (256, 8)
    for bad in ("128", "128x", "0x4", "ax4", "1x2x3"):
        with pytest.raises(ValueError, match=f"WIDTHxDEPTH.*got '{bad}'"):
            study.parse_arch(bad)


def test_plan_covers_each_axis_for_both_models() -> None:
    plan = study.plan_runs(_args(["size", "conditioning", "lr", "arch"]), [100, 200], 512, 6.0)
    keys = [(m, g, n) for m, g, n, _ in plan]
    assert keys[:4] == [("arbg", "size", 100), ("flow", "size", 100), ("arbg", "size", 200), ("flow", "size", 200)]
    by_grid = {g: [(m, cfg) for m, gg, _, cfg in plan if gg == g] for g in ("conditioning", "lr", "arch")}
    assert [cfg.get("value_embedding") for m, cfg in by_grid["conditioning"] if m == "arbg"] == [True, None]
    assert [(m, cfg.get("com_noise")) for m, cfg in by_grid["conditioning"] if "com_noise" in cfg] == [
        ("arbg", False),
        ("flow", False),
    ]
    assert [(m, cfg["lr"]) for m, cfg in by_grid["lr"]] == [("arbg", 3e-4), ("flow", 3e-4)]  # 1e-3 is the size row
    assert by_grid["arch"] == [
        ("arbg", {"bins": 512, "range": 6.0, "hidden": 32, "layers": 2}),
        ("flow", {"transforms": 4, "spline_bins": 8, "match": {"hidden": 32, "layers": 2}}),
    ]
    assert all(n == 100 for _, g, n, _ in plan if g != "size")  # every other grid at the smallest size


def test_range_check_against_dense_count() -> None:
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(300, 4, 2, generator=gen, dtype=torch.float64) * 1.5
    out = study.range_check(x, x, 1.0, seed=5)
    centred = (x - x.mean(1, keepdim=True)).reshape(300, -1).abs()
    for r in (3, 4):
        assert out["val"][str(r)]["coords"] == pytest.approx(float((centred > r).double().mean()))
        assert out["val"][str(r)]["conformations"] == pytest.approx(float((centred > r).any(1).double().mean()))
    # the training side is the same augmentation drawn with the same generator, five times
    g = torch.Generator().manual_seed(5)
    aug = torch.cat([augment(x, True, 0.5, g) for _ in range(5)]).reshape(1500, -1).abs()
    assert out["train_augmented"]["3"]["coords"] == pytest.approx(float((aug > 3).double().mean()))
    assert out["train_augmented"]["6"]["max_abs"] == pytest.approx(float(aug.max()))
    assert out["val"]["3"]["coords"] > 0  # the check is sensitive at this spread


def test_axes_claim_only_for_grids_that_ran() -> None:
    rows = [
        {"model": "arbg", "grid": "size", "n_train": 4000, "val_nll": 2.0},
        {"model": "flow", "grid": "size", "n_train": 4000, "val_nll": 1.6},
        {"model": "flow", "grid": "lr", "n_train": 4000, "val_nll": 1.5},  # the flow's own probes do not move it
    ]
    assert study.build_targets(rows) == {}
    rows += [
        {"model": "arbg", "grid": "lr", "n_train": 4000, "val_nll": 1.9},
        {"model": "arbg", "grid": "conditioning", "n_train": 4000, "val_nll": 1.7},
        {"model": "arbg", "grid": "arch", "n_train": 4000, "val_nll": math.nan},  # could not run: never chosen
    ]
    claims = study.build_targets(rows)
    assert set(claims) == {"arbg_axes_gain_share_of_gap"}
    assert claims["arbg_axes_gain_share_of_gap"] == {"value": pytest.approx(0.75), "target": ">= 0.5", "met": True}
