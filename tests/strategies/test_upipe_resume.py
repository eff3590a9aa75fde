"""UPipeStrategy stop-and-resume between 2 data-parallel ranks and a 1-rank run: full checkpoints, a plain process.

Complements ``test_upipe_single_rank_resume.py`` (distributed checkpoints both ways, a full one from 1 rank to
2): here a full single-file checkpoint written by a sharded 2-rank run resumes on 1 rank (sharded, unsharded,
and into the distributed-checkpoint mode), a 1-rank full checkpoint resumes on 2 ranks unsharded and into the
distributed-checkpoint mode, and a 2-rank distributed checkpoint resumes in a plain ``python`` process
(``devices=1``, no launcher environment, no process group beforehand). Each run trains the tiny model for one
epoch of 2 steps (AdamW) at dp x cp = 2 x 1 or 1 x 1; the reference is one uninterrupted single-process PyTorch
loop over both epochs whose global batch follows the data-parallel size of each epoch
(:func:`tests.strategies._upipe_workers.reference_run`). Tolerance 1e-5 absolute, as in the other strategy tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from tests._support.distributed import run_on_ranks
from tests.strategies import _upipe_workers as W

ROOT = Path(__file__).resolve().parents[2]
ATOL = 1e-5
STEPS_PER_EPOCH = 2
BASE = {"kind": "tiny", "attention": "upipe", "steps": -1, "opt": "adamw", "context_parallel_size": 1}
DCP = {**BASE, "shard_parameters": True, "save_distributed_checkpoint": True}
FULL = {**BASE, "shard_parameters": True}


def _first(world: int, ckpt_dir: Path) -> list[dict[str, Any]]:
    runs = [{**FULL, "epochs": 1, "ckpt_out": str(ckpt_dir / f"full_{world}.ckpt"), "tag": "full"}]
    if world == 2:  # resumed by the plain-process test
        runs.append({**DCP, "epochs": 1, "ckpt_out": str(ckpt_dir / "dcp_2"), "tag": "dcp"})
    return runs


def _resume(saved_world: int, ckpt_dir: Path) -> list[dict[str, Any]]:
    full = str(ckpt_dir / f"full_{saved_world}.ckpt")
    runs = [
        {**BASE, "epochs": 2, "ckpt_in": full, "tag": "full_unsharded"},
        {**DCP, "epochs": 2, "ckpt_in": full, "tag": "full_to_dcp"},
    ]
    if saved_world == 2:  # 1 -> 2 with sharded parameters is in test_upipe_single_rank_resume.py
        runs.append({**FULL, "epochs": 2, "ckpt_in": full, "tag": "full"})
    return runs


@pytest.fixture(scope="module")
def resume_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Save at 2 ranks, resume at 1; save at 1 rank, resume at 2 (three launches in all)."""
    ckpt_dir = tmp_path_factory.mktemp("upipe_resume")
    first_2 = run_on_ranks(W.equivalence_worker, 2, _first(2, ckpt_dir), timeout=600)
    one = run_on_ranks(W.equivalence_worker, 1, [*_first(1, ckpt_dir), *_resume(2, ckpt_dir)], timeout=600)[0]
    then_2 = run_on_ranks(W.equivalence_worker, 2, _resume(1, ckpt_dir), timeout=600)
    n_first = len(_first(1, ckpt_dir))
    return {
        "dir": ckpt_dir,
        "2to1": {
            "first": {r["tag"]: [rank[i] for rank in first_2] for i, r in enumerate(_first(2, ckpt_dir))},
            "resumed": {r["tag"]: [one[n_first + i]] for i, r in enumerate(_resume(2, ckpt_dir))},
        },
        "1to2": {
            "first": {r["tag"]: [one[i]] for i, r in enumerate(_first(1, ckpt_dir))},
            "resumed": {r["tag"]: [rank[i] for rank in then_2] for i, r in enumerate(_resume(1, ckpt_dir))},
        },
    }


def _check(first: list[dict[str, Any]], resumed: list[dict[str, Any]], dps: list[int]) -> None:
    for rank_result in first + resumed:
        assert "error" not in rank_result, rank_result.get("error")
        assert rank_result["cp_size"] == 1
    W.assert_continues(first, resumed, dps, STEPS_PER_EPOCH, ATOL)


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["full", "full_unsharded", "full_to_dcp"])
def test_two_rank_full_checkpoint_resumes_on_one_rank(resume_runs: dict[str, Any], kind: str) -> None:
    runs = resume_runs["2to1"]
    _check(runs["first"]["full"], runs["resumed"][kind], [2, 1])
    assert runs["resumed"]["full"][0]["sharded"]  # FSDP2 on a 1-rank mesh
    assert runs["resumed"]["full_to_dcp"][0]["sharded"]
    assert not runs["resumed"]["full_unsharded"][0]["sharded"]


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["full_unsharded", "full_to_dcp"])
def test_one_rank_full_checkpoint_resumes_on_two_ranks(resume_runs: dict[str, Any], kind: str) -> None:
    runs = resume_runs["1to2"]
    _check(runs["first"]["full"], runs["resumed"][kind], [1, 2])
    # the 1-rank and the 2-rank continuations differ (another global batch), so the checks can tell them apart
    other = resume_runs["2to1"]["resumed"][kind]
    assert W.global_losses(runs["resumed"][kind]) != pytest.approx(W.global_losses(other))


_FRESH = """
import sys, torch
from tests.strategies import _upipe_workers as W
kwargs = {"shard_parameters": True, "save_distributed_checkpoint": True, "context_parallel_size": 1}
result = W.fit("tiny", "upipe", -1, world_size=1, opt="adamw", epochs=2, ckpt_in=sys.argv[1], **kwargs)
torch.save(result, sys.argv[2])
"""


@pytest.mark.distributed
@pytest.mark.slow
def test_two_ranks_resume_in_a_plain_single_process(resume_runs: dict[str, Any], tmp_path: Path) -> None:
    # as a user runs it: `python train.py` with devices=1, no launcher environment, no process group beforehand
    env = {k: v for k, v in os.environ.items() if k not in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE")}
    env["PYTHONPATH"] = str(ROOT)
    out = tmp_path / "fresh.pt"
    command = [sys.executable, "-c", _FRESH, str(resume_runs["dir"] / "dcp_2"), str(out)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    resumed = torch.load(out, weights_only=False)
    assert resumed["sharded"]
    _check(resume_runs["2to1"]["first"]["dcp"], [resumed], [2, 1])
    assert len(list((resume_runs["dir"] / "dcp_2").glob("*.distcp"))) == 2  # one shard file per rank
