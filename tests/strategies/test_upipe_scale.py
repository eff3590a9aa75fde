"""UPipeStrategy at scale: activation checkpointing, distributed checkpoints across data-parallel sizes, 4 ranks.

References are plain single-process PyTorch loops on the full sequences and the full global batch. Tolerances
(fp32): activation checkpointing recomputes the same operations in the same order, so outputs and gradients
agree to 1e-6; strategy runs against the reference agree to 1e-5 absolute, the tolerance of the other strategy
tests (observed ~1e-7: sharded attention and FSDP's reduce-scatter sum in another order). Resuming from a
checkpoint adds no error of its own (fp32 weights and AdamW moments are stored exactly).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from lightning_icml26.ops import route_attention
from lightning_icml26.strategies import UPipeStrategy
from lightning_icml26.strategies._blocks import CheckpointedForward, checkpoint_blocks, transformer_blocks
from tests._support.distributed import run_on_ranks
from tests._support.skips import requires_module
from tests.strategies import _scale_workers as S
from tests.strategies import _upipe_workers as W

STEPS = 3
ATOL = 1e-5


def _runs(ckpt_dir: str) -> list[dict[str, Any]]:
    ac = {"attention": "upipe", "steps": STEPS, "activation_checkpointing": True}
    dcp = {"kind": "tiny", "attention": "upipe", "steps": -1, "opt": "adamw", "shard_parameters": True}
    full = dict(dcp)
    dcp["save_distributed_checkpoint"] = True
    path = f"{ckpt_dir}/dcp"
    return [
        {**ac, "kind": "tiny", "tag": "ac_tiny"},
        {**ac, "kind": "llama", "shard_parameters": True, "tag": "ac_llama_fsdp"},
        {**ac, "kind": "llama", "shard_parameters": True, "context_parallel_size": 1, "tag": "ac_llama_fsdp_dp2"},
        {**ac, "kind": "no_block_list", "steps": 1, "tag": "ac_no_blocks"},
        # 2 epochs x 2 steps: the first at dp=2 x cp=1 (saved), then resumed at dp=1 x cp=2 and at dp=2 x cp=1
        {**dcp, "epochs": 1, "context_parallel_size": 1, "ckpt_out": path, "tag": "dcp_first"},
        {**dcp, "epochs": 2, "context_parallel_size": 2, "ckpt_in": path, "tag": "dcp_dp1"},
        {**dcp, "epochs": 2, "context_parallel_size": 1, "ckpt_in": path, "tag": "dcp_dp2"},
        # a full (single-file) checkpoint of a sharded run also resumes in the distributed-checkpoint mode
        {**full, "epochs": 1, "context_parallel_size": 1, "ckpt_out": f"{ckpt_dir}/full.ckpt", "tag": "full_first"},
        {**dcp, "epochs": 2, "context_parallel_size": 2, "ckpt_in": f"{ckpt_dir}/full.ckpt", "tag": "full_to_dcp"},
    ]


@pytest.fixture(scope="module")
def scale_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    runs = _runs(str(tmp_path_factory.mktemp("upipe_dcp")))
    return runs, run_on_ranks(W.equivalence_worker, 2, runs, timeout=600)


def _result(scale_runs: Any, tag: str) -> list[dict[str, Any]]:
    runs, results = scale_runs
    index = next(i for i, r in enumerate(runs) if r["tag"] == tag)
    return [rank_result[index] for rank_result in results]


def _assert_matches(per_rank: list[dict[str, Any]], ref: dict[str, Any]) -> None:
    W.assert_matches(W.global_losses(per_rank), per_rank, ref, ATOL)


# ---------------------------------------------------------------------------------------- activation checkpointing
def test_checkpoint_blocks_finds_blocks_and_refuses_a_model_without_them() -> None:
    net = W.build_net("tiny")
    blocks: Any = net.blocks
    assert checkpoint_blocks(net) == 2
    assert all(isinstance(b.__dict__["forward"], CheckpointedForward) for b in blocks)
    first = blocks[0].__dict__["forward"]
    assert checkpoint_blocks(net) == 2
    assert blocks[0].__dict__["forward"] is first
    assert list(net.state_dict()) == list(W.build_net("tiny").state_dict())  # keys unchanged
    with pytest.raises(ValueError, match="activation_checkpointing=True needs the transformer blocks"):
        checkpoint_blocks(W.build_net("no_block_list"))
    # a container without forward contributes its parameter-holding children
    assert len(transformer_blocks(nn.Sequential(nn.ModuleList([nn.ModuleDict({"a": nn.Linear(2, 2)})])))) == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"activation_checkpointing": 1}, "activation_checkpointing must be True or False, got 1"),
        ({"save_distributed_checkpoint": True}, "save_distributed_checkpoint=True needs shard_parameters=True"),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        UPipeStrategy(**kwargs)


@pytest.mark.distributed
@pytest.mark.slow
@requires_module("transformers")
def test_activation_checkpointing_keeps_outputs_and_gradients_and_saves_less() -> None:
    kinds = ["tiny", "llama"]
    results = run_on_ranks(S.checkpointing_worker, 2, kinds, timeout=300)
    for rank_result in results:
        for kind in kinds:
            got = rank_result[kind]
            assert got["blocks"] == 2
            torch.testing.assert_close(got["ac"]["logits"], got["plain"]["logits"], atol=1e-6, rtol=0)
            assert got["ac"]["grads"].keys() == got["plain"]["grads"].keys()
            for name, grad in got["plain"]["grads"].items():
                torch.testing.assert_close(got["ac"]["grads"][name], grad, atol=1e-6, rtol=0, msg=name)
            # without AC the blocks save activations (the fused UPipe operator's input, output and
            # log-sum-exp rows, the MLP's); with AC a block keeps only its inputs (saved by the checkpoint
            # itself), the rest of the model the same
            plain, ac = got["plain_bytes"], got["ac_bytes"]
            assert plain["inside"] > 3 * plain["block_inputs"]
            assert 0 < ac["inside"] <= ac["block_inputs"]
            assert ac["outside"] == plain["outside"]
            assert ac["inside"] + ac["outside"] < plain["inside"] + plain["outside"]


@pytest.mark.distributed
@pytest.mark.slow
@requires_module("transformers")
def test_activation_checkpointing_trains_like_single_process(scale_runs: Any) -> None:
    # (tag, model, data-parallel size): cp = 2 // dp; the llama runs shard their parameters with FSDP2
    for tag, kind, dp in (("ac_tiny", "tiny", 1), ("ac_llama_fsdp", "llama", 1), ("ac_llama_fsdp_dp2", "llama", 2)):
        per_rank = _result(scale_runs, tag)
        assert per_rank[0]["cp_size"] == 2 // dp
        assert per_rank[0]["sharded"] == (kind == "llama")
        _assert_matches(per_rank, W.reference_fit(kind, STEPS, dp=dp))


@pytest.mark.distributed
@pytest.mark.slow
def test_activation_checkpointing_without_block_list_fails_at_setup_on_every_rank(scale_runs: Any) -> None:
    for rank_result in _result(scale_runs, "ac_no_blocks"):
        assert "activation_checkpointing=True needs the transformer blocks" in rank_result["error"]
        assert "found none in CausalLMModule" in rank_result["error"]


# ---------------------------------------------------------------------------------------- distributed checkpoints
@pytest.mark.distributed
@pytest.mark.slow
def test_distributed_checkpoint_resumes_on_another_data_parallel_size(scale_runs: Any) -> None:
    first = _result(scale_runs, "dcp_first")
    runs, _ = scale_runs
    saved = Path(next(r["ckpt_out"] for r in runs if r["tag"] == "dcp_first"))
    assert saved.is_dir()  # torch.distributed.checkpoint format: one shard file per rank and the loop state
    assert len(list(saved.glob("*.distcp"))) == 2
    assert (saved / "meta.pt").is_file()
    for tag, dp in (("dcp_dp1", 1), ("dcp_dp2", 2)):
        resumed = _result(scale_runs, tag)
        assert resumed[0]["cp_size"] == 2 // dp
        assert resumed[0]["sharded"]
        W.assert_continues(first, resumed, [2, dp], 2, ATOL)
    # the two continuations differ (another global batch), so the check above can tell them apart
    dp1, dp2 = (W.global_losses(_result(scale_runs, tag)) for tag in ("dcp_dp1", "dcp_dp2"))
    assert dp1 != pytest.approx(dp2)


@pytest.mark.distributed
@pytest.mark.slow
def test_full_checkpoint_resumes_in_distributed_checkpoint_mode(scale_runs: Any) -> None:
    assert Path(next(r["ckpt_out"] for r in scale_runs[0] if r["tag"] == "full_first")).is_file()
    W.assert_continues(_result(scale_runs, "full_first"), _result(scale_runs, "full_to_dcp"), [2, 1], 2, ATOL)


# ---------------------------------------------------------------------------------------- 4 ranks
@pytest.mark.distributed
@pytest.mark.slow
def test_four_ranks_dp2_cp2_sharded_match_single_process() -> None:
    runs = [{"kind": "tiny", "attention": "upipe", "steps": STEPS, "context_parallel_size": 2}]
    runs[0]["shard_parameters"] = True
    results = run_on_ranks(W.equivalence_worker, 4, runs, timeout=600)
    per_rank = [r[0] for r in results]
    assert per_rank[0]["cp_size"] == 2
    assert per_rank[0]["sharded"]
    ref = W.reference_fit("tiny", STEPS, dp=2)
    first = next(iter(ref["state"]))
    assert not torch.equal(ref["state"][first], W.build_net("tiny").state_dict()[first])  # the weights moved
    _assert_matches(per_rank, ref)


# ---------------------------------------------------------------------------------------- spawned ranks
@pytest.mark.distributed
@pytest.mark.slow
def test_sharded_training_on_spawned_ranks_hands_the_full_weights_back(tmp_path: Path) -> None:
    # Lightning's spawn launcher sends rank 0's weights to the main process; with FSDP2 they are DTensor shards
    # unless the launcher gathers them (it does): the main process's module must hold the trained weights.
    module = W.CausalLMModule(W.build_net("tiny"), optimizer=W.optimizer_factory("sgd"))
    strategy = UPipeStrategy(start_method="spawn", shard_parameters=True, activation_checkpointing=True)
    trainer = W.Trainer(
        accelerator="cpu",
        devices=2,
        strategy=strategy,
        max_steps=STEPS,
        limit_val_batches=0,
        num_sanity_val_steps=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(tmp_path),
    )
    trainer.fit(module, datamodule=W.datamodule())
    ref = W.reference_fit("tiny", STEPS)
    state = module.net.state_dict()
    for name, value in ref["state"].items():
        torch.testing.assert_close(state[name], value, atol=ATOL, rtol=0, msg=name)


# ---------------------------------------------------------------------------------------- CUDA
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_activation_checkpointing_lowers_the_cuda_peak_and_keeps_gradients() -> None:
    torch.manual_seed(0)
    net = W.TinyCausalTransformer(vocab_size=256, hidden_size=512, num_layers=4, num_heads=8, num_kv_heads=2).cuda()
    route_attention(net, None, 1, attention="upipe")
    ids = torch.randint(0, 256, (2, 4096), device="cuda")

    def step() -> tuple[int, dict[str, torch.Tensor]]:
        net.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        net(input_ids=ids).float().square().mean().backward()
        torch.cuda.synchronize()
        grads = {n: p.grad.detach().clone() for n, p in net.named_parameters() if p.grad is not None}
        return torch.cuda.max_memory_allocated() - base, grads

    plain_peak, plain_grads = step()
    checkpoint_blocks(net)
    ac_peak, ac_grads = step()
    assert ac_peak < 0.8 * plain_peak  # four blocks' activations are no longer all alive at the backward's start
    for name, grad in plain_grads.items():
        torch.testing.assert_close(ac_grads[name], grad, atol=1e-5, rtol=1e-4, msg=name)
