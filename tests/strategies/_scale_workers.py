"""Workers for the UPipe scale tests: activation checkpointing (saved bytes).

The single-process reference of every strategy test is :func:`tests.strategies._upipe_workers.reference_run`.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from lightning_icml26.distributed import shard_batch
from lightning_icml26.ops import route_attention
from lightning_icml26.strategies._blocks import checkpoint_blocks, transformer_blocks
from tests.strategies import _upipe_workers as W


class SavedBytes:
    """Bytes of the non-parameter tensors autograd saves, split into inside / outside the transformer blocks."""

    def __init__(self, net: nn.Module) -> None:
        self.params = {p.data_ptr() for p in net.parameters()}
        self.depth = 0
        self.seen: set[tuple[int, int]] = set()
        self.inside = 0
        self.outside = 0
        self.inputs: dict[tuple[int, int], int] = {}  # storages of the blocks' tensor inputs
        self.handles = []
        for block in transformer_blocks(net):
            self.handles.append(block.register_forward_pre_hook(self._enter, with_kwargs=True))
            self.handles.append(block.register_forward_hook(self._leave))

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()

    def _enter(self, _module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.depth += 1
        for t in [*args, *kwargs.values(), *kwargs.get("position_embeddings", ())]:
            if isinstance(t, torch.Tensor):
                storage = t.untyped_storage()
                self.inputs[(storage.data_ptr(), storage.nbytes())] = storage.nbytes()

    def _leave(self, *_: Any) -> None:
        self.depth -= 1

    def pack(self, t: torch.Tensor) -> torch.Tensor:
        key = (t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
        if t.data_ptr() not in self.params and key not in self.seen:
            self.seen.add(key)
            if self.depth:
                self.inside += key[1]
            else:
                self.outside += key[1]
        return t


def _loss_and_grads(net: nn.Module, batch: dict[str, torch.Tensor]) -> tuple[dict[str, Any], dict[str, int]]:
    counter = SavedBytes(net)
    net.zero_grad()
    with torch.autograd.graph.saved_tensors_hooks(counter.pack, lambda t: t):
        out = net(input_ids=batch["input_ids"], position_ids=batch["position_ids"])
        logits = out if isinstance(out, torch.Tensor) else out.logits
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch["labels"].reshape(-1))
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in net.named_parameters() if p.grad is not None}
    counter.remove()
    saved = {"inside": counter.inside, "outside": counter.outside, "block_inputs": sum(counter.inputs.values())}
    return {"logits": logits.detach().clone(), "grads": grads}, saved


def checkpointing_worker(rank: int, world_size: int, kinds: list[str]) -> dict[str, Any]:
    """Each model routed with UPipe over all ranks: outputs, gradients and saved bytes without / with AC."""
    torch.manual_seed(1)
    full = {"input_ids": torch.randint(0, 256, (2, W.SEQ_LEN)), "labels": torch.randint(0, 256, (2, W.SEQ_LEN))}
    batch = shard_batch(full, ("input_ids", "labels"), rank=rank, size=world_size)
    results: dict[str, Any] = {}
    for kind in kinds:
        net = W.build_net(kind)
        route_attention(net, dist.group.WORLD, world_size, attention="upipe")
        plain, plain_bytes = _loss_and_grads(net, batch)
        blocks = checkpoint_blocks(net)
        checkpointed, ac_bytes = _loss_and_grads(net, batch)
        results[kind] = {
            "plain": plain,
            "ac": checkpointed,
            "plain_bytes": plain_bytes,
            "ac_bytes": ac_bytes,
            "blocks": blocks,
        }
    return results
