"""UPipeStrategy: 2-rank context-parallel training equals single-process training on full sequences.

One spawn of two gloo ranks runs every Trainer.fit of this module (fixture ``cp_runs``); the references are
plain PyTorch loops in the test process. Tolerances (fp32): losses 1e-5 absolute, weights 1e-5 absolute
after the steps (observed differences ~1e-7, from the different summation order of sharded attention).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import torch
from lightning.pytorch import Trainer
from lightning.pytorch.strategies import StrategyRegistry

from lightning_icml26.modules.causal_lm import TinyCausalTransformer
from lightning_icml26.ops import check_heads, route_attention
from lightning_icml26.strategies import UPipeStrategy
from tests._support.distributed import run_on_ranks
from tests._support.skips import requires_module
from tests.strategies import _upipe_workers as W

STEPS = 3
ATOL = 1e-5
BACKENDS = ("upipe", "ulysses", "ring")


def _runs(ckpt_dir: str) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = [{"kind": "tiny", "attention": a, "steps": STEPS} for a in BACKENDS]
    runs += [{"kind": "llama", "attention": a, "steps": STEPS} for a in BACKENDS]
    # token weighting: the first 12 of 32 labels are ignored, so rank 0 scores 4 tokens per sample, rank 1 16
    runs += [{"kind": "tiny", "attention": "upipe", "steps": STEPS, "mask_prefix": 12}]
    # data parallel axis: 2 replicas x context 1 (each rank its own samples, full sequences)
    runs += [{"kind": "tiny", "attention": "upipe", "steps": STEPS, "context_parallel_size": 1}]
    # the same with FSDP2 sharding of the parameters over the 2 data-parallel ranks, and 1 x 2 sharded
    sharded = {"kind": "tiny", "attention": "upipe", "steps": STEPS, "shard_parameters": True}
    runs += [{**sharded, "context_parallel_size": 1}, {**sharded, "context_parallel_size": 2}]
    # sharded stop-and-resume (full-state checkpoint, AdamW state gathered from the shards)
    resume = {"kind": "tiny", "attention": "upipe", "steps": -1, "opt": "adamw", "context_parallel_size": 1}
    resume["shard_parameters"] = True
    runs += [
        {**resume, "epochs": 2, "tag": "fsdp_full"},
        {**resume, "epochs": 1, "ckpt_out": f"{ckpt_dir}/fsdp.ckpt", "tag": "fsdp_first"},
        {**resume, "epochs": 2, "ckpt_in": f"{ckpt_dir}/fsdp.ckpt", "tag": "fsdp_resumed"},
    ]
    runs += [
        # stop-and-resume with AdamW (optimizer state must come back): 2 epochs of 2 steps vs 1 + 1
        {"kind": "tiny", "attention": "upipe", "steps": -1, "epochs": 2, "opt": "adamw"},
        {
            "kind": "tiny",
            "attention": "upipe",
            "steps": -1,
            "epochs": 1,
            "opt": "adamw",
            "ckpt_out": f"{ckpt_dir}/a.ckpt",
        },
        {
            "kind": "tiny",
            "attention": "upipe",
            "steps": -1,
            "epochs": 2,
            "opt": "adamw",
            "ckpt_in": f"{ckpt_dir}/a.ckpt",
        },
        # configurations that cannot work: they must raise at setup on every rank, not hang in a collective
        {"kind": "tiny_3_heads", "attention": "upipe", "steps": 1},
        {"kind": "mlp", "attention": "upipe", "steps": 1},
        {"kind": "tiny", "attention": "ring", "steps": 1, "seq_len": 30},
    ]
    return runs


@pytest.fixture(scope="module")
def cp_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    runs = _runs(str(tmp_path_factory.mktemp("upipe_ckpt")))
    results = run_on_ranks(W.equivalence_worker, 2, runs, timeout=600)
    return runs, results


def _global_losses(results: list[list[dict[str, Any]]], index: int) -> list[float]:
    per_rank = [r[index]["losses"] for r in results]
    return [sum(step) / len(step) for step in zip(*per_rank, strict=True)]


@pytest.fixture(scope="module")
def references() -> dict[str, dict[str, Any]]:
    refs = {kind: W.reference_fit(kind, STEPS) for kind in ("tiny", "llama")}
    refs["masked"] = W.reference_fit("tiny", STEPS, mask_prefix=12)
    refs["dp2"] = W.reference_fit("tiny", STEPS, dp=2)
    return refs


def _assert_matches(results: list[list[dict[str, Any]]], index: int, ref: dict[str, Any]) -> None:
    got = _global_losses(results, index)
    assert len(got) == STEPS
    torch.testing.assert_close(torch.tensor(got), torch.tensor(ref["losses"]), atol=ATOL, rtol=0)
    for rank_result in results:
        for name, value in ref["state"].items():
            torch.testing.assert_close(rank_result[index]["state"][name], value, atol=ATOL, rtol=0, msg=name)


@pytest.mark.distributed
@pytest.mark.slow
@requires_module("transformers")
@pytest.mark.parametrize("kind", ["tiny", "llama"])
@pytest.mark.parametrize("attention", BACKENDS)
def test_two_ranks_match_single_process(cp_runs: Any, references: Any, kind: str, attention: str) -> None:
    runs, results = cp_runs
    index = next(
        i
        for i, r in enumerate(runs)
        if (r["kind"], r["attention"], r["steps"]) == (kind, attention, STEPS) and len(r) == 3
    )
    ref = references[kind]
    assert results[0][index]["cp_size"] == 2
    got = _global_losses(results, index)
    assert len(got) == STEPS
    torch.testing.assert_close(torch.tensor(got), torch.tensor(ref["losses"]), atol=ATOL, rtol=0)
    # the weights moved (a real check) and moved the same way on every rank and in the reference
    first = next(iter(ref["state"]))
    assert not torch.equal(ref["state"][first], W.build_net(kind).state_dict()[first])
    for rank_result in results:
        for name, value in ref["state"].items():
            torch.testing.assert_close(rank_result[index]["state"][name], value, atol=ATOL, rtol=0, msg=name)


@pytest.mark.distributed
@pytest.mark.slow
def test_loss_is_token_weighted_over_unequal_shards(cp_runs: Any, references: Any) -> None:
    runs, results = cp_runs
    index = next(i for i, r in enumerate(runs) if r.get("mask_prefix"))
    # ranks score 4 and 16 tokens per sample: an unweighted mean of the local losses would give other gradients
    _assert_matches(results, index, references["masked"])


@pytest.mark.distributed
@pytest.mark.slow
def test_data_parallel_axis_matches_the_global_batch(cp_runs: Any, references: Any) -> None:
    runs, results = cp_runs
    index = next(i for i, r in enumerate(runs) if r.get("context_parallel_size") == 1)
    assert results[0][index]["cp_size"] == 1
    _assert_matches(results, index, references["dp2"])


@pytest.mark.distributed
@pytest.mark.slow
def test_fsdp2_sharded_data_parallel_matches_the_global_batch(cp_runs: Any, references: Any) -> None:
    runs, results = cp_runs
    for cp, ref in ((1, references["dp2"]), (2, references["tiny"])):
        index = next(
            i for i, r in enumerate(runs) if r.get("shard_parameters") and r.get("context_parallel_size") == cp
        )
        assert results[0][index]["cp_size"] == cp
        assert results[0][index]["sharded"]
        _assert_matches(results, index, ref)


@pytest.mark.distributed
@pytest.mark.slow
def test_fsdp2_resume_gives_the_same_losses(cp_runs: Any) -> None:
    runs, results = cp_runs
    full, first, resumed = (
        next(i for i, r in enumerate(runs) if r.get("tag") == f"fsdp_{t}") for t in ("full", "first", "resumed")
    )
    uninterrupted = _global_losses(results, full)
    assert len(uninterrupted) == 4
    assert _global_losses(results, first) == pytest.approx(uninterrupted[:2], abs=1e-6)
    assert _global_losses(results, resumed) == pytest.approx(uninterrupted[2:], abs=1e-6)
    for name, value in results[0][full]["state"].items():
        torch.testing.assert_close(results[0][resumed]["state"][name], value, atol=1e-6, rtol=0)


@pytest.mark.distributed
@pytest.mark.slow
def test_resume_gives_the_same_losses(cp_runs: Any) -> None:
    runs, results = cp_runs
    full, first, resumed = (i for i, r in enumerate(runs) if r.get("opt") == "adamw" and "tag" not in r)
    uninterrupted = _global_losses(results, full)
    assert len(uninterrupted) == 4
    assert _global_losses(results, first) == pytest.approx(uninterrupted[:2], abs=1e-6)
    assert _global_losses(results, resumed) == pytest.approx(uninterrupted[2:], abs=1e-6)
    for name, value in results[0][full]["state"].items():
        torch.testing.assert_close(results[0][resumed]["state"][name], value, atol=1e-6, rtol=0)


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("tiny_3_heads", "num_attention_heads=3 is not divisible by context_parallel_size=2"),
        ("mlp", "found no attention layer to route"),
        ("tiny", "sequence length 30"),
    ],
)
def test_bad_configurations_fail_at_setup_on_every_rank(cp_runs: Any, kind: str, message: str) -> None:
    runs, results = cp_runs
    index = next(i for i, r in enumerate(runs) if r["kind"] == kind and r["steps"] == 1)
    for rank_result in results:
        assert message in rank_result[index]["error"]


def test_registered_names_and_init_params() -> None:
    for name, attention in (("upipe", "upipe"), ("ulysses", "ulysses"), ("ring_attention", "ring")):
        assert name in StrategyRegistry
        strategy = StrategyRegistry.get(name)
        assert isinstance(strategy, UPipeStrategy)
        assert strategy.attention == attention
    UPipeStrategy.register_strategies()  # idempotent


def test_world_size_not_divisible_fails_at_trainer_construction() -> None:
    with pytest.raises(ValueError, match="context_parallel_size=2 does not divide the world size 3"):
        Trainer(accelerator="cpu", devices=3, strategy=UPipeStrategy(context_parallel_size=2), logger=False)
    with pytest.raises(ValueError, match="must equal the world size 4"):
        Trainer(
            accelerator="cpu",
            devices=4,
            strategy=UPipeStrategy(context_parallel_size=2, data_parallel_size=3),
            logger=False,
        )


def test_backend_accelerator_mismatch_fails_at_trainer_construction() -> None:
    with pytest.raises(ValueError, match="process_group_backend='nccl' needs CUDA devices"):
        Trainer(accelerator="cpu", devices=2, strategy=UPipeStrategy(process_group_backend="nccl"), logger=False)


def test_mesh_sizes() -> None:
    assert UPipeStrategy().mesh_sizes(8) == (1, 8)
    assert UPipeStrategy(context_parallel_size=4).mesh_sizes(8) == (2, 4)
    assert UPipeStrategy(data_parallel_size=2).mesh_sizes(8) == (2, 4)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"attention": "flash"}, "attention='flash'"),
        ({"context_parallel_size": 0}, "context_parallel_size"),
        ({"stage_heads": 2, "attention": "ulysses"}, "stage_heads=2 only applies"),
        ({"layout": "zigzag"}, "layout='zigzag'"),
        ({"shard_keys": ("input_ids", "attention_mask")}, "attention_mask"),
        ({"start_method": "thread"}, "start_method='thread'"),
        ({"shard_parameters": "yes"}, "shard_parameters must be True or False, got 'yes'"),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        UPipeStrategy(**kwargs)


def test_head_checks() -> None:
    check_heads(8, 2, 4, "upipe", 4)
    check_heads(8, 8, 4, "ring", None)
    check_heads(6, 6, 4, "ring", None)  # ring splits the sequence only
    with pytest.raises(ValueError, match="num_key_value_heads=3"):
        check_heads(12, 3, 4, "ulysses", None)
    with pytest.raises(ValueError, match="stage_heads=6"):
        check_heads(8, 8, 4, "upipe", 6)
    net = TinyCausalTransformer(vocab_size=8, hidden_size=12, num_layers=2, num_heads=6)
    with pytest.raises(ValueError, match="num_attention_heads=6 is not divisible by context_parallel_size=4"):
        route_attention(net, None, 4, "upipe")
    assert route_attention(net, None, 1, "upipe") == 2


def test_shard_batch_contiguous_and_headtail() -> None:
    strategy = UPipeStrategy(attention="ring")
    strategy._cp_size, strategy._cp_rank = 2, 1
    batch = {"input_ids": torch.arange(16).view(2, 8), "labels": torch.arange(16).view(2, 8) + 100, "meta": 3}
    out = strategy.shard_batch(batch)
    assert out["input_ids"].tolist() == [[2, 3, 4, 5], [10, 11, 12, 13]]  # head-tail: chunks 1 and 2 of 4
    assert out["labels"].tolist() == [[102, 103, 104, 105], [110, 111, 112, 113]]
    assert out["position_ids"].tolist() == [[2, 3, 4, 5], [2, 3, 4, 5]]
    assert out["meta"] == 3
    contiguous = UPipeStrategy(attention="upipe")
    contiguous._cp_size, contiguous._cp_rank = 2, 1
    assert contiguous.shard_batch(batch)["input_ids"].tolist() == [[4, 5, 6, 7], [12, 13, 14, 15]]
    with pytest.raises(ValueError, match="none of shard_keys"):
        contiguous.shard_batch({"x": torch.zeros(2, 8)})


def test_timeout_is_passed_to_the_process_group() -> None:
    strategy = UPipeStrategy(timeout=timedelta(seconds=30))
    assert strategy._timeout == timedelta(seconds=30)


@pytest.mark.distributed
@pytest.mark.slow
def test_a_dead_rank_does_not_leave_the_other_hanging(tmp_path: Any) -> None:
    timeout_s = 20.0
    with pytest.raises(RuntimeError, match="rank 0 failed"):
        run_on_ranks(W.dying_worker, 2, str(tmp_path), timeout_s, timeout=240)
    elapsed, error = (tmp_path / "rank0.txt").read_text().split("\n", 1)
    assert float(elapsed) < timeout_s + 60  # failed by itself, well before the harness's own deadline
    assert error  # the collective raised instead of blocking
