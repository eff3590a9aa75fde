"""arbg_vs_flow's --value-embedding and --lr flags reach the models; bad values are refused."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from tests._support.skips import requires_module

pytestmark = [requires_module("transformers"), requires_module("zuko")]

bench = importlib.import_module("benchmarks.arbg_vs_flow")
ROOT = Path(__file__).resolve().parents[2]


def _args(value_embedding: str, lr: float) -> argparse.Namespace:
    return argparse.Namespace(
        value_embedding=value_embedding,
        lr=lr,
        dequantization="uniform",
        budget_mode="epochs",
        epochs=1,
        budget=None,
        temperatures=[1.0],
    )


@pytest.mark.parametrize(("flag", "expected"), [("on", True), ("off", False)])
def test_value_embedding_flag_reaches_arbg(flag: str, expected: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[bool] = []

    class Spy(bench.ArBG):  # type: ignore[misc,name-defined]
        def __init__(self, *a: object, **k: object) -> None:
            super().__init__(*a, **k)
            built.append(self.value_embedding is not None)

    monkeypatch.setattr(bench, "ArBG", Spy)
    out = bench.run_seed("dw4", 0, _args(flag, 2e-3), (64, 16, 16, 16))
    assert built == [expected]
    assert out["value_embedding"] is expected
    assert out["lr"] == 2e-3
    assert out["arbg"]["steps"] == 1  # one epoch of 64 at batch 256
    assert out["flow"]["steps"] == 1


@pytest.mark.parametrize(("argv", "message"), [(["--lr", "0"], "--lr must be positive, got 0.0"),
                                               (["--value-embedding", "yes"], "invalid choice: 'yes'")])  # fmt: skip
def test_bad_flags_are_refused(argv: list[str], message: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.arbg_vs_flow", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 2
    assert message in proc.stderr
