"""The UPipe memory benchmark accounts bytes on meta tensors: the same bytes as running the code on CPU."""

from __future__ import annotations

import pytest

from benchmarks.upipe_memory import _build, measure
from lightning_icml26.distributed import ContextParallelGroup

CFG = {"batch": 1, "hidden": 64, "heads": 8, "kv_heads": 2, "head_dim": 16, "dtype": "bf16", "layers": 2}


@pytest.mark.parametrize("scope", ["attn", "layer", "model"])
@pytest.mark.parametrize("method", ["ulysses", "upipe"])
def test_meta_accounting_equals_real_cpu_run(scope: str, method: str) -> None:
    cp = ContextParallelGroup()  # one process: the all-to-all is the identity, every other op runs for real
    on_meta = measure(_build(scope, method, CFG, cp, device="meta"), CFG, 256, 1)
    on_cpu = measure(_build(scope, method, CFG, cp, device="cpu"), CFG, 256, 1)
    assert on_meta == on_cpu
    assert on_meta["peak"] > on_meta["fwd_transient"] > 0


def test_upipe_keeps_less_than_ulysses_in_the_attention_scope() -> None:
    cp = ContextParallelGroup()
    up = measure(_build("attn", "upipe", CFG, cp), CFG, 512, 1)
    uly = measure(_build("attn", "ulysses", CFG, cp), CFG, 512, 1)
    assert up["const"] == uly["const"]
    assert up["fwd_transient"] < uly["fwd_transient"]
    assert up["peak"] < uly["peak"]
