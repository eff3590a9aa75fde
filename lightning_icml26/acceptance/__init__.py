"""Paths measured against their references on any device: the CUDA checks of `make gpu-check`, ISA quality and latency.

``make gpu-check`` (``python -m benchmarks.gpu.acceptance``) runs these on one GPU within a wall-clock budget.
Every piece takes the device as an argument, so the same code runs on the CPU (the tests do).

* :mod:`~lightning_icml26.acceptance.checks`: ``check_x(device, dtype) -> CheckResult`` for UPipe's fused
  operator, SDPA, FSDP2 on one device, ISA's Triton path and ARM, each forward and backward against its
  reference; :data:`ACCEPTANCE_CHECKS` lists them with their dtypes.
* :mod:`~lightning_icml26.acceptance.runner`: :func:`run_acceptance` runs the checks then headline rows
  (:class:`AcceptanceRow`) within a :class:`Budget`, writing partial figures after every stage.
* :mod:`~lightning_icml26.acceptance.isa_latency`: :func:`measure_isa_latency`, ISA's forward and backward
  latency against SDPA's flash backend.
* :mod:`~lightning_icml26.acceptance.isa_quality`: :func:`compare_isa_attention`, ISA's error and score budget
  against dense attention and two equal-budget sparse baselines, with the paper's two insights.
"""

from __future__ import annotations

from lightning_icml26.acceptance.checks import (
    ACCEPTANCE_CHECKS,
    TOLERANCES,
    AcceptanceCheck,
    CheckResult,
    check_arm,
    check_fsdp2_one_device,
    check_isa_triton,
    check_sdpa,
    check_upipe_fused,
    dtype_name,
    relative_error,
)
from lightning_icml26.acceptance.isa_latency import (
    ISA_LATENCY_METHODS,
    IsaLatencySettings,
    isa_latency_inputs,
    isa_latency_table,
    isa_latency_targets,
    latency_ms,
    measure_isa_latency,
    sdpa_flash,
)
from lightning_icml26.acceptance.isa_quality import (
    ISA_COMPARED_METHODS,
    compare_isa_attention,
    context_mass_ratio,
    isa_block_errors,
    zeroth_order_attention,
)
from lightning_icml26.acceptance.runner import (
    AcceptanceRow,
    Budget,
    acceptance_plan,
    acceptance_targets,
    run_acceptance,
    run_check,
    target_entry,
)

__all__ = [
    "ACCEPTANCE_CHECKS",
    "ISA_COMPARED_METHODS",
    "ISA_LATENCY_METHODS",
    "TOLERANCES",
    "AcceptanceCheck",
    "AcceptanceRow",
    "Budget",
    "CheckResult",
    "IsaLatencySettings",
    "acceptance_plan",
    "acceptance_targets",
    "check_arm",
    "check_fsdp2_one_device",
    "check_isa_triton",
    "check_sdpa",
    "check_upipe_fused",
    "compare_isa_attention",
    "context_mass_ratio",
    "dtype_name",
    "isa_block_errors",
    "isa_latency_inputs",
    "isa_latency_table",
    "isa_latency_targets",
    "latency_ms",
    "measure_isa_latency",
    "relative_error",
    "run_acceptance",
    "run_check",
    "sdpa_flash",
    "target_entry",
    "zeroth_order_attention",
]
