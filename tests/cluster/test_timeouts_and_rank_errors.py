"""The collective timeout is a number of seconds on the command line; errors from ranks are one short line."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from hydra.utils import instantiate
from torch.multiprocessing import ProcessExitedException, ProcessRaisedException

from lightning_icml26 import _recipes
from lightning_icml26._rank_errors import rank_error_line
from lightning_icml26.strategies import UPipeStrategy


def test_strategy_timeout_in_seconds_from_the_command_line(tmp_path: Path) -> None:
    cfg = _recipes.compose("upipe_llama", ["strategy.timeout=60"], run_dir=tmp_path)
    strategy = instantiate(cfg.strategy)
    assert strategy._timeout == timedelta(seconds=60)
    default = instantiate(_recipes.compose("upipe_llama", [], run_dir=tmp_path).strategy)
    assert timedelta(minutes=1) <= default._timeout <= timedelta(minutes=10), "minutes, not torch's 30"
    assert UPipeStrategy(timeout=2.5)._timeout == timedelta(seconds=2.5)
    with pytest.raises(ValueError, match="timeout=0 must be positive"):
        UPipeStrategy(timeout=0)
    with pytest.raises(TypeError, match="timeout='soon' must be seconds"):
        UPipeStrategy(timeout="soon")  # type: ignore[arg-type]


def test_an_error_raised_in_a_rank_is_one_short_line_with_the_traceback_in_the_run_folder(tmp_path: Path) -> None:
    frames = "".join(f'  File "/site-packages/lightning/loop_{i}.py", line {i}, in run\n    go()\n' for i in range(30))
    text = f"Traceback (most recent call last):\n{frames}ValueError: learning rate must be positive, got -0.1\n"
    assert len(text) > 1800
    line = rank_error_line(ProcessRaisedException(text, 1, 4321), tmp_path)
    log = tmp_path / "logs" / "rank1.traceback.log"
    assert line == f"rank 1: ValueError: learning rate must be positive, got -0.1 (traceback: {log})"
    assert log.read_text() == text
    killed = rank_error_line(ProcessExitedException("died", 0, 4321, -9, "SIGKILL"))
    assert killed == "rank 0 ended with signal SIGKILL"
    timeout = "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 4000ms"
    line = rank_error_line(ProcessRaisedException(f"Traceback:\n{timeout}\n", 0, 1), None, 4.0, 2)
    assert line.startswith("rank 0 timed out after 4 s in a collective: no answer from rank 1")
