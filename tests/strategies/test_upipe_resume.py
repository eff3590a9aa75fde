"""UPipeStrategy stop-and-resume between 2 data-parallel ranks and a 1-rank run (world size 1), both directions.

Each run trains the tiny model for one epoch of 2 steps (AdamW), saves a distributed checkpoint (FSDP2-sharded
parameters) and a full single-file checkpoint, and a run on the other world size resumes it for a second epoch.
The reference is one uninterrupted single-process PyTorch loop over both epochs whose global batch follows the
data-parallel size of each epoch (:func:`tests.strategies._upipe_workers.reference_run`). Tolerance 1e-5
absolute, as in the other strategy tests; resuming adds no error of its own (fp32 weights and moments are stored
exactly).
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
    return [
        {**DCP, "epochs": 1, "ckpt_out": str(ckpt_dir / f"dcp_{world}"), "tag": "dcp"},
        {**FULL, "epochs": 1, "ckpt_out": str(ckpt_dir / f"full_{world}.ckpt"), "tag": "full"},
    ]


def _resume(saved_world: int, ckpt_dir: Path) -> list[dict[str, Any]]:
    dcp, full = str(ckpt_dir / f"dcp_{saved_world}"), str(ckpt_dir / f"full_{saved_world}.ckpt")
    return [
        {**DCP, "epochs": 2, "ckpt_in": dcp, "tag": "dcp"},
        {**FULL, "epochs": 2, "ckpt_in": full, "tag": "full"},
        # a full checkpoint also resumes without sharded parameters, and into the distributed-checkpoint mode
        {**BASE, "epochs": 2, "ckpt_in": full, "tag": "full_unsharded"},
        {**DCP, "epochs": 2, "ckpt_in": full, "tag": "full_to_dcp"},
    ]


@pytest.fixture(scope="module")
def resume_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Save at 2 ranks, resume at 1; save at 1 rank, resume at 2 (three launches in all)."""
    ckpt_dir = tmp_path_factory.mktemp("upipe_resume")
    first_2 = run_on_ranks(W.equivalence_worker, 2, _first(2, ckpt_dir), timeout=600)
    one = run_on_ranks(W.equivalence_worker, 1, [*_first(1, ckpt_dir), *_resume(2, ckpt_dir)], timeout=600)[0]
    then_2 = run_on_ranks(W.equivalence_worker, 2, _resume(1, ckpt_dir), timeout=600)
    tags_first = [r["tag"] for r in _first(1, ckpt_dir)]
    tags_resume = [r["tag"] for r in _resume(1, ckpt_dir)]
    return {
        "dir": ckpt_dir,
        "2to1": {
            "first": {t: [rank[i] for rank in first_2] for i, t in enumerate(tags_first)},
            "resumed": {t: [one[len(tags_first) + i]] for i, t in enumerate(tags_resume)},
        },
        "1to2": {
            "first": {t: [one[i]] for i, t in enumerate(tags_first)},
            "resumed": {t: [rank[i] for rank in then_2] for i, t in enumerate(tags_resume)},
        },
    }


def _global_losses(per_rank: list[dict[str, Any]]) -> list[float]:
    return [sum(step) / len(step) for step in zip(*(r["losses"] for r in per_rank), strict=True)]


def _check(first: list[dict[str, Any]], resumed: list[dict[str, Any]], dps: list[int]) -> None:
    for rank_result in first + resumed:
        assert "error" not in rank_result, rank_result.get("error")
        assert rank_result["cp_size"] == 1
    ref = W.reference_run("tiny", "adamw", dps, steps_per_epoch=STEPS_PER_EPOCH)
    assert len(ref["losses"]) == 2 * STEPS_PER_EPOCH
    got = _global_losses(first) + _global_losses(resumed)
    torch.testing.assert_close(torch.tensor(got), torch.tensor(ref["losses"]), atol=ATOL, rtol=0)
    for rank_result in resumed:
        for name, value in ref["state"].items():
            torch.testing.assert_close(rank_result["state"][name], value, atol=ATOL, rtol=0, msg=name)


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["dcp", "full", "full_unsharded", "full_to_dcp"])
def test_two_ranks_resume_on_one_rank(resume_runs: dict[str, Any], kind: str) -> None:
    runs = resume_runs["2to1"]
    saved = "dcp" if kind == "dcp" else "full"
    _check(runs["first"][saved], runs["resumed"][kind], [2, 1])
    assert runs["resumed"]["dcp"][0]["sharded"]  # FSDP2 on a 1-rank mesh
    assert not runs["resumed"]["full_unsharded"][0]["sharded"]


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["dcp", "full", "full_unsharded", "full_to_dcp"])
def test_one_rank_resumes_on_two_ranks(resume_runs: dict[str, Any], kind: str) -> None:
    runs = resume_runs["1to2"]
    saved = "dcp" if kind == "dcp" else "full"
    _check(runs["first"][saved], runs["resumed"][kind], [1, 2])


@pytest.mark.distributed
@pytest.mark.slow
def test_checkpoint_formats_per_world_size(resume_runs: dict[str, Any]) -> None:
    ckpt_dir: Path = resume_runs["dir"]
    for world in (1, 2):
        assert len(list((ckpt_dir / f"dcp_{world}").glob("*.distcp"))) == world  # one shard file per rank
        assert (ckpt_dir / f"dcp_{world}" / "meta.pt").is_file()
        assert (ckpt_dir / f"full_{world}.ckpt").is_file()
    # the 1-rank and the 2-rank continuations differ (another global batch), so the checks can tell them apart
    one, two = (_global_losses(resume_runs[d]["resumed"]["dcp"]) for d in ("2to1", "1to2"))
    assert one != pytest.approx(two)


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
