"""UPipeStrategy stop-and-resume between a one-rank run (dp=1 x cp=1) and two ranks.

A user may train on one process and continue on two (or the reverse) from the same checkpoint. The
checkpoints here are written with ``shard_parameters=True`` and ``save_distributed_checkpoint=True``
(one shard per rank plus metadata; a one-rank run writes one shard) and as a full single file. Each
continuation must give the losses and final weights of one uninterrupted single-process run whose global
batch follows the data-parallel size of each epoch (:func:`tests.strategies._upipe_workers.reference_run`),
to 1e-5 as the other strategy tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests._support.distributed import run_on_ranks
from tests.strategies import _upipe_workers as W

ATOL = 1e-5
DCP = {"kind": "tiny", "attention": "upipe", "steps": -1, "opt": "adamw", "shard_parameters": True}


def _dcp(**kwargs: Any) -> dict[str, Any]:
    return {**DCP, "save_distributed_checkpoint": True, **kwargs}


@pytest.fixture(scope="module")
def resume_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("upipe_one_rank")
    two_dcp, one_dcp, one_full = str(root / "two_dcp"), str(root / "one_dcp"), str(root / "one.ckpt")
    # 1) two ranks, dp=2 x cp=1: the first epoch, saved as a distributed checkpoint
    (two_first,) = zip(
        *run_on_ranks(
            W.equivalence_worker, 2, [_dcp(epochs=1, context_parallel_size=1, ckpt_out=two_dcp)], timeout=600
        ),
        strict=True,
    )
    # 2) one rank (dp=1 x cp=1): continue the two-rank run; then a fresh first epoch saved both ways
    one = run_on_ranks(
        W.equivalence_worker,
        1,
        [
            _dcp(epochs=2, context_parallel_size=1, ckpt_in=two_dcp),
            _dcp(epochs=1, context_parallel_size=1, ckpt_out=one_dcp),
            {**DCP, "epochs": 1, "context_parallel_size": 1, "ckpt_out": one_full},
        ],
        timeout=600,
    )[0]
    # 3) two ranks continue the one-rank checkpoints: dp=2 x cp=1 and dp=1 x cp=2 (distributed), dp=2 (full file)
    two = run_on_ranks(
        W.equivalence_worker,
        2,
        [
            _dcp(epochs=2, context_parallel_size=1, ckpt_in=one_dcp),
            _dcp(epochs=2, context_parallel_size=2, ckpt_in=one_dcp),
            _dcp(epochs=2, context_parallel_size=1, ckpt_in=one_full),
        ],
        timeout=600,
    )
    return {
        "paths": {"two_dcp": two_dcp, "one_dcp": one_dcp, "one_full": one_full},
        "two_first": list(two_first),
        "one": one,
        "two": [[rank[i] for rank in two] for i in range(3)],
    }


@pytest.mark.distributed
@pytest.mark.slow
def test_one_rank_run_is_dp1_cp1_and_writes_one_shard(resume_runs: dict[str, Any]) -> None:
    first = resume_runs["one"][1]
    assert first["cp_size"] == 1
    saved = Path(resume_runs["paths"]["one_dcp"])
    assert len(list(saved.glob("*.distcp"))) == 1
    assert (saved / "meta.pt").is_file()
    assert Path(resume_runs["paths"]["one_full"]).is_file()


@pytest.mark.distributed
@pytest.mark.slow
def test_two_rank_checkpoint_resumes_on_one_rank(resume_runs: dict[str, Any]) -> None:
    W.assert_continues(resume_runs["two_first"], [resume_runs["one"][0]], [2, 1], 2, ATOL)


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.parametrize(("index", "cp"), [(0, 1), (1, 2)])
def test_one_rank_distributed_checkpoint_resumes_on_two_ranks(resume_runs: dict[str, Any], index: int, cp: int) -> None:
    resumed = resume_runs["two"][index]
    assert resumed[0]["cp_size"] == cp
    W.assert_continues([resume_runs["one"][1]], resumed, [1, 2 // cp], 2, ATOL)


@pytest.mark.distributed
@pytest.mark.slow
def test_one_rank_full_checkpoint_resumes_on_two_ranks(resume_runs: dict[str, Any]) -> None:
    W.assert_continues([resume_runs["one"][2]], resume_runs["two"][2], [1, 2], 2, ATOL)


@pytest.mark.distributed
@pytest.mark.slow
def test_the_continuations_differ(resume_runs: dict[str, Any]) -> None:
    """dp=2 and dp=1 continuations see other global batches, so the comparisons above can tell them apart."""
    dp2, dp1 = (W.global_losses(resume_runs["two"][i]) for i in (0, 1))
    assert dp2 != pytest.approx(dp1)
