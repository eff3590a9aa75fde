"""The GPU script for ISA's latency: its flags map onto IsaLatencySettings, and it refuses without CUDA or triton."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from benchmarks.gpu import isa_latency as script
from lightning_icml26.acceptance import IsaLatencySettings


def test_defaults_are_the_issue_configuration() -> None:
    args, settings = script.parse_args([])
    assert settings == IsaLatencySettings()
    assert settings.lengths == (8192, 16384, 32768)  # N_t = N_c: 16K, 32K, 64K tokens in all
    assert (settings.heads, settings.head_dim, settings.block_size, settings.max_minutes) == ((4,), 64, 64, 6.0)
    assert args.json == Path(script.__file__).resolve().parents[1] / "results" / "isa_latency_cuda.json"
    _, other = script.parse_args(["--heads", "4", "16", "--max-minutes", "2", "--temperatures", "5"])
    assert (other.heads, other.max_minutes, other.temperatures) == ((4, 16), 2.0, (5.0,))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--block-size", "48"], "block_size must be a power of two >= 16"),
        (["--lengths", "1000"], "lengths must be multiples of side**2 = 1024"),
        (["--head-dim", "63"], "head_dim must be even"),
        (["--repeats", "0"], "repeats must be >= 1"),
        (["--max-minutes", "0"], "max_minutes must be positive"),
        (["--heads", "0"], "heads must all be positive"),
    ],
)
def test_bad_arguments_are_refused(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        script.parse_args(argv)
    assert message in capsys.readouterr().err


def test_refuses_to_run_without_cuda_or_triton(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = tmp_path / "never.json"
    with pytest.raises(SystemExit, match=r"needs a CUDA device.*torch\.cuda\.is_available\(\) is False"):
        script.main(["--json", str(out)])
    assert not out.exists()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(script, "is_available", lambda module: module != "triton")
    with pytest.raises(SystemExit, match=r"needs triton: pip install 'lightning-icml26\[kernels\]'"):
        script.main([])
