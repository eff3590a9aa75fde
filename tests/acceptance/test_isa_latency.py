"""ISA's latency measurement on tiny CPU shapes: its rows, targets, the cosine against numpy, and the time cap."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import pytest
import torch

from lightning_icml26.acceptance import (
    ISA_LATENCY_METHODS,
    IsaLatencySettings,
    isa_latency,
    isa_latency_inputs,
    isa_latency_table,
    isa_latency_targets,
    latency_ms,
    measure_isa_latency,
    sdpa_flash,
)
from lightning_icml26.ops.attention import isa_attention
from tests._support.skips import requires_module

TINY = IsaLatencySettings(
    lengths=(128,), side=8, heads=(2,), head_dim=16, block_size=16, temperatures=(5.0,), warmup=1, repeats=2
)
TORCH_ONLY = ("sdpa_flash", "isa_torch")
TARGET_KEYS = {"isa_triton_latency_ratio_64k", "isa_triton_cosine_min"}


def test_sdpa_flash_equals_a_dense_softmax() -> None:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 40, 3, 16, generator=g, dtype=torch.float64) for _ in range(3))
    logits = torch.einsum("bshd,bthd->bhst", q, k) / 4.0
    expect = torch.einsum("bhst,bthd->bshd", logits.softmax(-1), v)
    torch.testing.assert_close(sdpa_flash(q.float(), k.float(), v.float()).double(), expect, atol=1e-5, rtol=0)


def test_latency_ms_calls_warmup_plus_repeats_and_takes_the_median() -> None:
    calls = []
    ms = latency_ms(lambda: calls.append(1), "cpu", warmup=2, repeats=5)
    assert len(calls) == 7
    assert math.isfinite(ms)
    assert ms >= 0.0


def _numpy_cosine(out: torch.Tensor, ref: torch.Tensor) -> float:
    """Mean over (sample, head) of the cosine of the flattened (seq, head_dim) outputs."""
    a, b = out.double().numpy(), ref.double().numpy()
    cos = [
        float((a[i, :, h] * b[i, :, h]).sum() / np.sqrt((a[i, :, h] ** 2).sum() * (b[i, :, h] ** 2).sum()))
        for i in range(a.shape[0])
        for h in range(a.shape[2])
    ]
    return float(np.mean(cos))


def test_torch_backend_on_cpu_writes_rows_and_targets() -> None:
    written: list[dict[str, Any]] = []
    figures = measure_isa_latency(TINY, "cpu", methods=TORCH_ONLY, write=lambda f: written.append(dict(f)))
    assert figures["complete"] is True
    assert [w["complete"] for w in written] == [False, True]
    (row,) = figures["rows"]
    assert (row["tokens"], row["n_target"], row["heads"], row["errors"]) == (256, 128, 2, {})
    for kind in ("fwd_ms", "fwd_bwd_ms"):
        assert set(row[kind]) == set(TORCH_ONLY)
        assert all(math.isfinite(ms) and ms > 0 for ms in row[kind].values())
    assert row["fwd_ratio"]["isa_torch"] == row["fwd_ms"]["isa_torch"] / row["fwd_ms"]["sdpa_flash"]
    q, k, v = isa_latency_inputs(TINY, 128, 2, 5.0, "cpu")
    isa = isa_attention(q, k, v, 128, block_size=16)
    dense = torch.nn.functional.scaled_dot_product_attention(*(x.transpose(1, 2) for x in (q, k, v))).transpose(1, 2)
    assert row["cosine"]["5.0"]["isa_torch"] == pytest.approx(_numpy_cosine(isa, dense), abs=2e-3)
    assert 0.9 < row["cosine"]["5.0"]["isa_torch"] <= 1.0
    assert set(figures["targets"]) == TARGET_KEYS
    # no Triton row and no 64K row here: both targets are unmeasured, hence missed
    assert all(math.isnan(t["value"]) and t["met"] is False for t in figures["targets"].values())
    assert [r["method"] for r in isa_latency_table(figures["rows"])] == list(TORCH_ONLY)


def test_wall_clock_cap_stops_and_leaves_partial_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    checks = {"n": 0}
    real_check = isa_latency._check_time

    def check(deadline: float) -> None:  # out of time after the cosine pass and both forward timings
        checks["n"] += 1  # 1: config, 2: temperature, 3, 4: sdpa fwd, fwd+bwd, 5, 6: isa_torch fwd, fwd+bwd
        if checks["n"] > 5:
            raise isa_latency._OutOfTime
        real_check(deadline)

    monkeypatch.setattr(isa_latency, "_check_time", check)
    settings = IsaLatencySettings(**{**TINY.__dict__, "lengths": (128, 256)})
    figures = measure_isa_latency(settings, "cpu", methods=TORCH_ONLY)
    assert figures["complete"] is False
    (row,) = figures["rows"]  # the second length was never started
    assert "5.0" in row["cosine"]
    assert list(row["fwd_ms"]) == list(TORCH_ONLY)
    assert list(row["fwd_bwd_ms"]) == ["sdpa_flash"]
    assert math.isnan(row["fwd_bwd_ratio"]["isa_torch"])
    assert set(figures["targets"]) == TARGET_KEYS


def test_tiny_cap_measures_nothing_and_misses_both_targets() -> None:
    settings = IsaLatencySettings(**{**TINY.__dict__, "max_minutes": 1e-9})
    figures = measure_isa_latency(settings, "cpu", methods=TORCH_ONLY)
    assert figures["complete"] is False
    assert figures["rows"] == []
    assert not any(t["met"] for t in figures["targets"].values())
    with pytest.raises(ValueError, match="methods must be among"):
        measure_isa_latency(TINY, "cpu", methods=("flash3",))


def test_targets_read_the_64k_row_at_four_heads_and_the_worst_cosine() -> None:
    rows = [
        {"tokens": 65536, "heads": 16, "fwd_ratio": {"isa_triton": 0.2}, "cosine": {"2.0": {"isa_triton": 0.999}}},
        {"tokens": 32768, "heads": 4, "fwd_ratio": {"isa_triton": 0.9}, "cosine": {"2.0": {"isa_triton": 0.985}}},
        {
            "tokens": 65536,
            "heads": 4,
            "fwd_ratio": {"isa_triton": 0.35},
            "cosine": {"2.0": {"isa_triton": 0.995}, "5.0": {"isa_triton": 0.998}},
        },
    ]
    targets = isa_latency_targets(rows)
    assert targets["isa_triton_latency_ratio_64k"] == {"value": 0.35, "target": "<= 0.4", "met": True}
    assert targets["isa_triton_cosine_min"] == {"value": 0.985, "target": ">= 0.99", "met": False}
    assert math.isnan(isa_latency_targets(rows[:2])["isa_triton_latency_ratio_64k"]["value"])
    failed = [{**rows[2], "cosine": {"2.0": {"isa_triton": float("nan")}}}]  # a failed Triton forward
    assert isa_latency_targets(failed)["isa_triton_cosine_min"]["met"] is False


@requires_module("triton")
def test_triton_path_under_the_interpreter_agrees_with_the_torch_backend() -> None:
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("TRITON_INTERPRET=1 is not set: the Triton kernel cannot run on CPU tensors")
    figures = measure_isa_latency(IsaLatencySettings(**{**TINY.__dict__, "repeats": 1}), "cpu")
    (row,) = figures["rows"]
    assert row["errors"] == {}
    assert set(row["fwd_ms"]) == set(ISA_LATENCY_METHODS)
    # the kernel accumulates in fp32, the torch reference in bf16: they differ by bf16 rounding only
    assert all(0.0 <= x < 0.03 for x in row["triton_vs_torch_rel_l2"].values()), row["triton_vs_torch_rel_l2"]
    cos = row["cosine"]["5.0"]
    assert cos["isa_triton"] == pytest.approx(cos["isa_torch"], abs=1e-3)
    assert figures["targets"]["isa_triton_cosine_min"]["value"] == cos["isa_triton"]
