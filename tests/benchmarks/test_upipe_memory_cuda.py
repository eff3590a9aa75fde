"""The prepared CUDA script of the UPipe memory benchmark: a clear refusal without CUDA, its path on CPU / meta."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
import torch

script = importlib.import_module("benchmarks.gpu.upipe_memory_cuda")
TINY = ["--hidden", "64", "--heads", "8", "--kv-heads", "2", "--head-dim", "16", "--layers", "2", "--world", "2"]
TINY += ["--seq", "128", "--max-minutes", "30"]  # a cap that a loaded machine stays under


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_without_cuda_it_fails_with_a_clear_message(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        script.main(["--device", "cuda"])
    assert "needs a CUDA GPU" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--scope", "layer"], "--scope must be"),
        (["--world", "3"], "divide --heads"),
        (["--heads", "6", "--kv-heads", "4"], "divisible by --kv-heads"),
        (["--max-minutes", "0"], "--max-minutes positive"),
    ],
)
def test_bad_arguments_are_refused(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        script.main([*argv, "--device", "meta"])
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_pieces_run_on_tiny_shapes(device: str, tmp_path: Path) -> None:
    out = tmp_path / "cuda.json"
    record = script.main([*TINY, "--device", device, "--json", str(out)])
    assert record["partial"] is False
    for scope in ("attn", "model"):
        rows = record["memory"][scope]["2"]
        assert set(rows) == {"ulysses", "upipe", "sdpa"}
        assert rows["upipe"]["peak"] < rows["ulysses"]["peak"]  # the head-chunked stages keep less
        assert rows["ulysses"]["max_seq"] >= rows["ulysses"]["seq"]  # Ulysses fits its own cap
        assert all(r["max_seq"] > 0 for r in rows.values())
    assert record["memory"]["model"]["2"]["upipe"]["mlp_tiles"] >= 1
    written = json.loads(out.read_text())
    assert set(written["figures"]["targets"]) == {
        "cuda_attn_peak_P2",
        "cuda_attn_max_seq_P2",
        "cuda_model_ckpt_max_seq_P2",
    }


def test_the_wall_clock_cap_writes_partial_figures() -> None:
    record = script.main([*TINY[:-1], "0.0001", "--device", "meta"])
    assert record["partial"] is True
    assert "deadline" in record["memory"]["stopped"]
    assert all(t["met"] is False for t in record["targets"].values())
