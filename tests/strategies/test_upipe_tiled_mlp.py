"""UPipeStrategy's ``tiled_mlp`` and ``offload_activations``: the same training, the same state-dict keys.

One spawn of two gloo ranks trains the project's tiny transformer, a Hugging Face Llama (``LlamaDecoderLayer.mlp``)
and the tiny transformer with FSDP2-sharded parameters (dp = 2 x cp = 1) for a few SGD steps with and without the
paper's benchmark options (activation checkpointing, a tiled MLP, offloaded checkpoint inputs); on CPU the
options change no number beyond summation order (1e-6).
"""

from __future__ import annotations

from typing import Any

import hydra
import pytest
import torch
from torch import nn

from lightning_icml26 import _recipes
from lightning_icml26.modules.causal_lm import TinyCausalTransformer
from lightning_icml26.ops.tiled_mlp import TiledForward
from lightning_icml26.strategies import UPipeStrategy
from lightning_icml26.strategies._blocks import CheckpointedForward, checkpoint_blocks, tile_block_mlps
from tests._support.distributed import run_on_ranks
from tests._support.skips import requires_module
from tests.strategies import _upipe_workers as W

STEPS = 3
ATOL = 1e-6
PAPER = {"activation_checkpointing": True, "tiled_mlp": 3, "offload_activations": True}


SHARDED = {"shard_parameters": True, "context_parallel_size": 1}  # FSDP2 over dp = 2 x cp = 1


@pytest.fixture(scope="module")
def runs() -> list[list[dict[str, Any]]]:
    fits = [
        {"kind": kind, "attention": "upipe", "steps": STEPS, **base, **extra}
        for kind, base in (("tiny", {}), ("llama", {}), ("tiny", SHARDED))
        for extra in ({}, PAPER)
    ]
    return run_on_ranks(W.equivalence_worker, 2, fits, timeout=600)


@pytest.mark.distributed
@requires_module("transformers")
@pytest.mark.parametrize(("index", "kind"), [(0, "tiny"), (2, "llama"), (4, "tiny")], ids=["tiny", "llama", "fsdp2"])
def test_tiled_mlp_and_offloading_train_like_the_plain_strategy(runs: Any, index: int, kind: str) -> None:
    for rank in (0, 1):
        plain, paper = runs[rank][index], runs[rank][index + 1]
        assert "error" not in plain, plain.get("error")
        assert "error" not in paper, paper.get("error")
        assert len(plain["losses"]) == STEPS
        assert paper["losses"] == pytest.approx(plain["losses"], abs=ATOL, rel=0)
        assert plain["state"].keys() == paper["state"].keys()  # state-dict keys unchanged by the options
        for key, value in plain["state"].items():
            torch.testing.assert_close(paper["state"][key], value, rtol=0, atol=ATOL, msg=f"{kind}: {key}")
        start = W.build_net(kind).state_dict()
        assert any(not torch.equal(start[k], v) for k, v in paper["state"].items())  # the steps changed weights
    assert runs[0][index + 1]["sharded"] == (index == 4)


@requires_module("transformers")
@pytest.mark.parametrize("kind", ["tiny", "llama"])
def test_tiling_keeps_state_dict_keys_and_outputs(kind: str) -> None:
    net = W.build_net(kind)
    keys = list(net.state_dict())
    ids = torch.randint(0, 256, (1, 16))
    expected = _logits(net(ids))
    blocks = tile_block_mlps(net, num_tiles=3)
    checkpoint_blocks(net, offload=True)
    assert blocks == 2
    assert list(net.state_dict()) == keys
    mlps = [m for m in net.modules() if isinstance(m.__dict__.get("forward"), TiledForward)]
    assert len(mlps) == 2
    assert all(m.forward.num_tiles == 3 for m in mlps)
    assert sum(isinstance(m.__dict__.get("forward"), CheckpointedForward) for m in net.modules()) == 2
    torch.testing.assert_close(_logits(net(ids)), expected, rtol=0, atol=1e-5)
    assert tile_block_mlps(net, num_tiles=5) == 2  # already tiled: left as is
    assert all(m.forward.num_tiles == 3 for m in mlps)


def _logits(out: Any) -> torch.Tensor:
    return out.logits if hasattr(out, "logits") else out


def test_a_block_without_mlp_is_refused() -> None:
    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ff = nn.Linear(4, 4)

        def forward(self, h: torch.Tensor) -> torch.Tensor:
            return self.ff(h)

    with pytest.raises(ValueError, match="tiled_mlp=2 needs an `mlp` submodule .* Block has none"):
        tile_block_mlps(nn.Sequential(nn.ModuleList([Block()])), num_tiles=2)
    with pytest.raises(ValueError, match="tiled_mlp=2 needs the transformer blocks"):
        tile_block_mlps(nn.Linear(4, 4), num_tiles=2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tiled_mlp": 0}, "tiled_mlp must be None or a positive int"),
        ({"tiled_mlp": 2.5}, "tiled_mlp must be None or a positive int"),
        ({"tiled_mlp": True}, "tiled_mlp must be None or a positive int"),
        ({"offload_activations": "yes"}, "offload_activations must be True or False"),
        ({"offload_activations": True}, "needs activation_checkpointing=True"),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        UPipeStrategy(**kwargs)


def test_recipe_group_exposes_the_options(tmp_path: Any) -> None:
    overrides = ["strategy.tiled_mlp=4", "strategy.activation_checkpointing=true", "strategy.offload_activations=true"]
    cfg = _recipes.compose("upipe_llama", overrides, run_dir=tmp_path)
    strategy = hydra.utils.instantiate(cfg.strategy)
    assert isinstance(strategy, UPipeStrategy)
    assert (strategy.tiled_mlp, strategy.offload_activations, strategy.activation_checkpointing) == (4, True, True)
    default = hydra.utils.instantiate(_recipes.compose("upipe_llama", run_dir=tmp_path / "d").strategy)
    assert (default.tiled_mlp, default.offload_activations) == (None, False)


def test_offloaded_checkpoint_gives_identical_gradients_on_cpu() -> None:
    torch.manual_seed(0)
    net = TinyCausalTransformer(vocab_size=64, hidden_size=16, num_layers=2, num_heads=2)
    ids = torch.randint(0, 64, (2, 12))
    net(ids).logsumexp(-1).sum().backward()
    ref = {n: p.grad.clone() for n, p in net.named_parameters() if p.grad is not None}
    net.zero_grad(set_to_none=True)
    tile_block_mlps(net, num_tiles=5)
    checkpoint_blocks(net, offload=True)
    net(ids).logsumexp(-1).sum().backward()
    for name, grad in ref.items():
        torch.testing.assert_close(dict(net.named_parameters())[name].grad, grad, rtol=0, atol=1e-6, msg=name)
