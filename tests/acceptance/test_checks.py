"""The acceptance checks on the CPU: each path agrees with its float64 / torch reference, and a broken path fails."""

from __future__ import annotations

import math
import os

import pytest
import torch

from lightning_icml26 import acceptance
from lightning_icml26.acceptance import checks
from tests._support.skips import requires_module

CPU = torch.device("cpu")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_sdpa_and_upipe_fused_agree_with_float64_on_cpu(dtype: torch.dtype) -> None:
    for result in (acceptance.check_sdpa(CPU, dtype, seq_len=64), acceptance.check_upipe_fused(CPU, dtype, seq_len=64)):
        assert result.passed, result
        assert result.tolerance == acceptance.TOLERANCES[dtype]
        # the reduced-precision path is not the float64 reference itself: its error is measured, not zero
        assert 0.0 < result.error < result.tolerance
    assert acceptance.check_sdpa(CPU, torch.bfloat16, seq_len=64).error > 1e2 * acceptance.check_sdpa(CPU).error


def test_a_wrong_kernel_fails_its_check(monkeypatch: pytest.MonkeyPatch) -> None:
    real = checks.F.scaled_dot_product_attention

    def off_by_a_scale(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **kw: object) -> torch.Tensor:
        out = real(q, k, v, **kw)  # type: ignore[arg-type]
        return out if q.dtype == torch.float64 else 1.01 * out  # wrong only on the path under test

    monkeypatch.setattr(checks.F, "scaled_dot_product_attention", off_by_a_scale)
    result = acceptance.check_sdpa(CPU, torch.float32, seq_len=32)
    assert not result.passed
    assert result.error == pytest.approx(0.01, rel=1e-3)


def test_arm_and_fsdp2_agree_on_cpu() -> None:
    arm = acceptance.check_arm(CPU, torch.float32)
    assert arm.passed, arm
    assert arm.tolerance == 1e-4
    fsdp = acceptance.check_fsdp2_one_device(CPU)
    assert fsdp.passed, fsdp
    assert fsdp.tolerance == 1e-5
    assert not torch.distributed.is_initialized()  # the check's own one-rank group is gone
    with pytest.raises(ValueError, match="seq_len must be >= 4"):
        acceptance.check_arm(CPU, seq_len=3)


def test_a_raising_path_is_a_failed_result_not_an_error() -> None:
    def broken(device: torch.device, dtype: torch.dtype) -> acceptance.CheckResult:
        raise RuntimeError("kernel crashed")

    result = acceptance.run_check(acceptance.AcceptanceCheck("broken", broken, (torch.float32,)), CPU, torch.float32)
    assert not result.passed
    assert math.isnan(result.error)
    assert "kernel crashed" in str(result.exception)
    assert result.as_dict()["ok"] is False


@requires_module("triton")
def test_isa_triton_check_under_the_interpreter() -> None:
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("TRITON_INTERPRET=1 is not set: the Triton kernel cannot run on CPU tensors")
    result = acceptance.check_isa_triton(CPU, torch.float32, part_len=128, block_size=16)
    assert result.passed, result
