"""The prepared GPU script for ISA's latency: refusal without CUDA, and its measuring pieces on tiny CPU shapes."""

from __future__ import annotations

import importlib
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from lightning_icml26.ops.attention import isa_attention
from tests._support.skips import requires_module

# the interpreter works only if TRITON_INTERPRET=1 was set before triton was first imported (tests/conftest.py
# sets it on machines without a GPU; the imports above do not import triton, the script below does)
INTERPRETER = os.environ.get("TRITON_INTERPRET") == "1" or "triton" not in sys.modules
os.environ.setdefault("TRITON_INTERPRET", "1")
script = importlib.import_module("benchmarks.gpu.isa_latency")

TINY = "--lengths 128 --side 8 --heads 2 --head-dim 16 --block-size 16 --temperatures 5 --warmup 1 --repeats 2"
CPU = torch.device("cpu")
TARGET_KEYS = {"isa_triton_latency_ratio_64k", "isa_triton_cosine_min"}


def test_defaults_are_the_issue_configuration() -> None:
    args = script.parse_args([])
    assert args.lengths == [8192, 16384, 32768]  # N_t = N_c: 16K, 32K, 64K tokens in all
    assert (args.heads, args.head_dim, args.block_size, args.max_minutes) == ([4], 64, 64, 6.0)
    assert args.json == Path(script.__file__).resolve().parents[1] / "results" / "isa_latency_cuda.json"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--block-size", "48"], "--block-size must be a power of two >= 16"),
        (["--lengths", "1000"], "--lengths must be multiples of side**2 = 1024"),
        (["--head-dim", "63"], "--head-dim must be even"),
        (["--repeats", "0"], "--repeats must be >= 1"),
        (["--max-minutes", "0"], "--max-minutes must be positive"),
        (["--heads", "0"], "--heads must all be positive"),
    ],
)
def test_bad_arguments_are_refused(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        script.parse_args(argv)
    assert message in capsys.readouterr().err


def test_refuses_to_run_without_cuda(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = tmp_path / "never.json"
    with pytest.raises(SystemExit, match=r"needs a CUDA device.*torch\.cuda\.is_available\(\) is False"):
        script.main(["--json", str(out)])
    assert not out.exists()


def test_refuses_to_run_without_triton(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(script, "is_available", lambda module: module != "triton")
    with pytest.raises(SystemExit, match=r"needs triton: pip install 'lightning-icml26\[kernels\]'"):
        script.main([])


def test_sdpa_flash_equals_a_dense_softmax() -> None:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 40, 3, 16, generator=g, dtype=torch.float64) for _ in range(3))
    logits = torch.einsum("bshd,bthd->bhst", q, k) / 4.0
    expect = torch.einsum("bhst,bthd->bshd", logits.softmax(-1), v)
    got = script.sdpa_flash(q.float(), k.float(), v.float())
    torch.testing.assert_close(got.double(), expect, atol=1e-5, rtol=0)


def test_latency_ms_calls_warmup_plus_repeats_and_takes_the_median() -> None:
    calls = []
    ms = script.latency_ms(lambda: calls.append(1), CPU, warmup=2, repeats=5)
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


def test_torch_backend_run_on_cpu_writes_rows_and_targets(tmp_path: Path) -> None:
    args = script.parse_args(TINY.split())
    out = tmp_path / "lat.json"
    figures = script.run(args, CPU, methods=("sdpa_flash", "isa_torch"), json_path=out)
    assert figures["complete"] is True
    (row,) = figures["rows"]
    assert (row["tokens"], row["n_target"], row["heads"], row["errors"]) == (256, 128, 2, {})
    for kind in ("fwd_ms", "fwd_bwd_ms"):
        assert set(row[kind]) == {"sdpa_flash", "isa_torch"}
        assert all(math.isfinite(ms) and ms > 0 for ms in row[kind].values())
    assert row["fwd_ratio"]["isa_torch"] == row["fwd_ms"]["isa_torch"] / row["fwd_ms"]["sdpa_flash"]
    # the recorded cosine is that of ISA against dense attention on the same bf16 inputs (numpy reference)
    q, k, v = script.make_inputs(128, 2, 16, 8, 5.0, 0, CPU)
    isa = isa_attention(q, k, v, 128, block_size=16)
    dense = torch.nn.functional.scaled_dot_product_attention(*(x.transpose(1, 2) for x in (q, k, v))).transpose(1, 2)
    assert row["cosine"]["5.0"]["isa_torch"] == pytest.approx(_numpy_cosine(isa, dense), abs=2e-3)
    assert 0.9 < row["cosine"]["5.0"]["isa_torch"] <= 1.0
    written = json.loads(out.read_text())
    assert written["benchmark"] == "isa_latency_cuda"
    assert set(written["figures"]["targets"]) == TARGET_KEYS
    assert written["figures"]["complete"] is True
    # no Triton row and no 64K row here: both targets are unmeasured, hence missed
    assert all(math.isnan(t["value"]) and t["met"] is False for t in figures["targets"].values())


def test_wall_clock_cap_stops_and_writes_partial_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checks = {"n": 0}
    real_check = script._check_time

    def check(deadline: float) -> None:  # out of time after the cosine pass and both forward timings
        checks["n"] += 1  # 1: config, 2: temperature, 3, 4: sdpa fwd, fwd+bwd, 5, 6: isa_torch fwd, fwd+bwd
        if checks["n"] > 5:
            raise script.OutOfTime
        real_check(deadline)

    monkeypatch.setattr(script, "_check_time", check)
    args = script.parse_args([*TINY.split(), "--lengths", "128", "256"])
    out = tmp_path / "partial.json"
    figures = script.run(args, CPU, methods=("sdpa_flash", "isa_torch"), json_path=out)
    written = json.loads(out.read_text())["figures"]
    assert written["complete"] is False
    assert figures["complete"] is False
    (row,) = written["rows"]  # the second length was never started
    assert "5.0" in row["cosine"]
    assert list(row["fwd_ms"]) == ["sdpa_flash", "isa_torch"]
    assert list(row["fwd_bwd_ms"]) == ["sdpa_flash"]
    assert row["fwd_ratio"]["isa_torch"] == row["fwd_ms"]["isa_torch"] / row["fwd_ms"]["sdpa_flash"]
    assert math.isnan(row["fwd_bwd_ratio"]["isa_torch"])
    assert set(written["targets"]) == TARGET_KEYS


def test_tiny_cap_measures_nothing_and_misses_both_targets(tmp_path: Path) -> None:
    args = script.parse_args([*TINY.split(), "--max-minutes", "1e-9"])
    figures = script.run(args, CPU, methods=("sdpa_flash", "isa_torch"), json_path=tmp_path / "none.json")
    assert figures["complete"] is False
    assert figures["rows"] == []
    assert set(figures["targets"]) == TARGET_KEYS
    assert not any(t["met"] for t in figures["targets"].values())


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
    targets = script.build_targets(rows)
    assert targets["isa_triton_latency_ratio_64k"] == {"value": 0.35, "target": "<= 0.4", "met": True}
    assert targets["isa_triton_cosine_min"] == {"value": 0.985, "target": ">= 0.99", "met": False}
    assert math.isnan(script.build_targets(rows[:2])["isa_triton_latency_ratio_64k"]["value"])
    failed = [{**rows[2], "cosine": {"2.0": {"isa_triton": float("nan")}}}]  # a failed Triton forward
    assert script.build_targets(failed)["isa_triton_cosine_min"]["met"] is False


@requires_module("triton")
def test_triton_path_under_the_interpreter_agrees_with_the_torch_backend(tmp_path: Path) -> None:
    if not INTERPRETER or os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("triton was imported before TRITON_INTERPRET=1 was set: its kernels cannot run on CPU tensors")
    args = script.parse_args([*TINY.split(), "--repeats", "1"])
    figures = script.run(args, CPU, json_path=tmp_path / "triton.json")
    (row,) = figures["rows"]
    assert row["errors"] == {}
    assert set(row["fwd_ms"]) == set(script.METHODS)
    # the kernel accumulates in fp32, the torch reference in bf16: they differ by bf16 rounding only
    assert all(0.0 <= x < 0.03 for x in row["triton_vs_torch_rel_l2"].values()), row["triton_vs_torch_rel_l2"]
    cos = row["cosine"]["5.0"]
    assert cos["isa_triton"] == pytest.approx(cos["isa_torch"], abs=1e-3)
    assert figures["targets"]["isa_triton_cosine_min"]["value"] == cos["isa_triton"]
