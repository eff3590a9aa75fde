"""Module-level workers for the UPipeStrategy tests (pickled into spawned gloo ranks)."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch import Callback, Trainer
from torch.distributed.tensor import DTensor
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from lightning_icml26.data.text import StdlibTextDataModule
from lightning_icml26.modules.causal_lm import (
    CausalLMModule,
    TinyCausalTransformer,
    TinyDecoderBlock,
    build_hf_causal_lm,
)
from lightning_icml26.strategies import UPipeStrategy

SEQ_LEN = 32
BATCH = 2
TINY = {"vocab_size": 256, "hidden_size": 32, "num_layers": 2, "num_heads": 4, "num_kv_heads": 2}
LLAMA = {
    "vocab_size": 256,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 64,
    "tie_word_embeddings": False,
}


def build_net(kind: str, seed: int = 0) -> torch.nn.Module:
    """The network of a test run, with weights drawn from ``seed``."""
    if kind == "tiny_3_heads":
        torch.manual_seed(seed)
        return TinyCausalTransformer(vocab_size=256, hidden_size=24, num_layers=1, num_heads=3)
    if kind == "mlp":
        return torch.nn.Sequential(torch.nn.Embedding(256, 16), torch.nn.Linear(16, 256))
    if kind == "tiny":
        torch.manual_seed(seed)
        return TinyCausalTransformer(**TINY)
    if kind == "llama":
        return build_hf_causal_lm("llama", attn_implementation="sdpa", seed=seed, **LLAMA)
    if kind == "no_block_list":
        torch.manual_seed(seed)
        return NoBlockList()
    raise ValueError(kind)


def optimizer_factory(name: str) -> Any:
    if name == "sgd":
        return functools.partial(torch.optim.SGD, lr=0.5, momentum=0.9)
    return functools.partial(torch.optim.AdamW, lr=3e-3, weight_decay=0.01)


class NoBlockList(torch.nn.Module):
    """Attention the strategy can route, but no ``nn.ModuleList`` of blocks (activation checkpointing refuses it)."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(256, 16)
        self.block = TinyDecoderBlock(16, num_heads=2)
        self.head = torch.nn.Linear(16, 256)

    def forward(self, input_ids: torch.Tensor, position_ids: torch.Tensor | None = None) -> torch.Tensor:
        return self.head(self.block(self.embed(input_ids), position_ids=position_ids))


class MaskedLabels(Dataset):
    """Marks the first ``prefix`` labels of every sample as ignored (-100): unequal scored tokens per shard."""

    def __init__(self, base: Dataset, prefix: int) -> None:
        self.base, self.prefix = base, prefix

    def __len__(self) -> int:
        return len(self.base)  # type: ignore[arg-type]

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        sample = dict(self.base[index])
        labels = sample["labels"].clone()
        labels[: self.prefix] = -100
        sample["labels"] = labels
        return sample


class TestTextData(StdlibTextDataModule):
    def __init__(self, seq_len: int, mask_prefix: int) -> None:
        super().__init__(seq_len=seq_len, batch_size=BATCH, max_bytes=20_000, shuffle=False)
        self.mask_prefix = mask_prefix

    def setup(self, stage: str | None = None) -> None:
        super().setup(stage)
        if self.mask_prefix and not isinstance(self.train_set, MaskedLabels):
            self.train_set = MaskedLabels(self.train_set, self.mask_prefix)  # type: ignore[assignment]


def datamodule(seq_len: int = SEQ_LEN, mask_prefix: int = 0) -> StdlibTextDataModule:
    return TestTextData(seq_len, mask_prefix)


class LossRecorder(Callback):
    """Records the (token-reweighted) training loss of every step on this rank."""

    def __init__(self) -> None:
        self.losses: list[float] = []

    def on_train_batch_end(self, trainer: Trainer, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        self.losses.append(float(outputs["loss"]))


def fit(
    kind: str,
    attention: str,
    steps: int,
    world_size: int,
    opt: str = "sgd",
    ckpt_in: str | None = None,
    ckpt_out: str | None = None,
    epochs: int | None = None,
    seq_len: int = SEQ_LEN,
    extra_callbacks: list[Callback] | None = None,
    mask_prefix: int = 0,
    **strategy_kwargs: Any,
) -> dict[str, Any]:
    """One Trainer.fit under UPipeStrategy in an already launched process group; losses and final weights."""
    module = CausalLMModule(build_net(kind), optimizer=optimizer_factory(opt))
    recorder = LossRecorder()
    trainer = Trainer(
        accelerator="cpu",
        devices=world_size,
        strategy=UPipeStrategy(attention=attention, **strategy_kwargs),
        max_steps=steps if epochs is None else -1,
        max_epochs=epochs,
        limit_train_batches=None if epochs is None else 2,
        limit_val_batches=0,
        num_sanity_val_steps=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[recorder, *(extra_callbacks or [])],
    )
    trainer.fit(module, datamodule=datamodule(seq_len, mask_prefix), ckpt_path=ckpt_in)
    if ckpt_out is not None:
        trainer.save_checkpoint(ckpt_out)
    state = {k: _full(v).detach().clone() for k, v in module.net.state_dict().items()}
    sharded = any(isinstance(p, DTensor) for p in module.net.parameters())
    return {
        "losses": recorder.losses,
        "state": state,
        "cp_size": trainer.strategy.context_parallel_size,
        "sharded": sharded,
    }


def _full(t: torch.Tensor) -> torch.Tensor:
    """The whole tensor of a (possibly FSDP-sharded) parameter."""
    return t.full_tensor() if isinstance(t, DTensor) else t


def equivalence_worker(rank: int, world_size: int, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run several fits one after another in the same two processes (one spawn for all of them)."""
    torch.use_deterministic_algorithms(False)
    results = []
    for run in runs:
        run = {k: v for k, v in run.items() if k != "tag"}  # "tag" only names a run for the test
        try:
            results.append(fit(world_size=world_size, **run))
        except ValueError as error:  # configurations that cannot work must fail at setup, on every rank
            results.append({"error": str(error)})
    return results


def reference_run(
    kind: str, opt: str = "sgd", dps: Sequence[int] = (1,), steps_per_epoch: int | None = None, mask_prefix: int = 0
) -> dict[str, Any]:
    """The model trained in one process on full sequences and the full global batch, plain PyTorch.

    Epoch ``e`` runs with data-parallel size ``dps[e]`` for ``steps_per_epoch`` steps (``None``: the whole epoch).
    Mirrors Lightning's training loaders: a shuffling ``DistributedSampler`` (seed 0, ``set_epoch(e)``) per
    data-parallel rank; the global batch of a step is the concatenation of the replicas' batches.
    """
    net = build_net(kind)
    module = CausalLMModule(net)
    optimizer = optimizer_factory(opt)(net.parameters())
    dm = datamodule(SEQ_LEN, mask_prefix)
    dm.setup("fit")
    data: Any = dm.train_set
    losses = []
    for epoch, dp in enumerate(dps):
        samplers: list[DistributedSampler] = [
            DistributedSampler(data, num_replicas=dp, rank=r, shuffle=True, seed=0) for r in range(dp)
        ]
        for sampler in samplers:
            sampler.set_epoch(epoch)
        loaders = [DataLoader(data, batch_size=BATCH, sampler=s, drop_last=True) for s in samplers]
        for step, parts in enumerate(zip(*loaders, strict=True)):
            if step == steps_per_epoch:
                break
            batch = {key: torch.cat([b[key] for b in parts]) for key in parts[0]}
            loss = module._loss(batch)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
    return {"losses": losses, "state": {k: v.detach().clone() for k, v in net.state_dict().items()}}


def reference_fit(kind: str, steps: int, opt: str = "sgd", mask_prefix: int = 0, dp: int = 1) -> dict[str, Any]:
    """:func:`reference_run` for the first ``steps`` steps of one epoch at data-parallel size ``dp``."""
    return reference_run(kind, opt, [dp], steps_per_epoch=steps, mask_prefix=mask_prefix)


def global_losses(per_rank: Sequence[dict[str, Any]]) -> list[float]:
    """The global loss of each step: the mean of the ranks' (token-reweighted) losses."""
    return [sum(step) / len(step) for step in zip(*(r["losses"] for r in per_rank), strict=True)]


def assert_matches(
    losses: Sequence[float], per_rank: Sequence[dict[str, Any]], ref: dict[str, Any], atol: float
) -> None:
    """``losses`` equal the reference's step by step and every rank's final weights equal the reference's."""
    torch.testing.assert_close(torch.tensor(list(losses)), torch.tensor(ref["losses"]), atol=atol, rtol=0)
    for rank_result in per_rank:
        for name, value in ref["state"].items():
            torch.testing.assert_close(rank_result["state"][name], value, atol=atol, rtol=0, msg=name)


def assert_continues(
    first: Sequence[dict[str, Any]],
    resumed: Sequence[dict[str, Any]],
    dps: Sequence[int],
    steps_per_epoch: int,
    atol: float,
) -> None:
    """A run stopped after epoch 0 and resumed for epoch 1 equals one uninterrupted :func:`reference_run`.

    ``first`` and ``resumed`` are the per-rank results of the two launches, ``dps`` the data-parallel size of
    each epoch (it sets the global batch).
    """
    ref = reference_run("tiny", "adamw", dps, steps_per_epoch=steps_per_epoch)
    assert len(ref["losses"]) == len(dps) * steps_per_epoch
    assert_matches(global_losses(first) + global_losses(resumed), resumed, ref, atol)


class DieAt(Callback):
    """Kills global rank 1 abruptly (no exception, no goodbye) at the start of training batch ``batch_idx``."""

    def __init__(self, batch_idx: int) -> None:
        self.batch_idx = batch_idx

    def on_train_batch_start(self, trainer: Trainer, pl_module: Any, batch: Any, batch_idx: int) -> None:
        if trainer.global_rank == 1 and batch_idx == self.batch_idx:
            os._exit(3)


def dying_worker(rank: int, world_size: int, out_dir: str, timeout_s: float) -> None:
    """Rank 1 dies at step 1; rank 0 records how long it took to fail (it must not hang)."""
    start = time.monotonic()
    try:
        fit("tiny", "upipe", 4, world_size, extra_callbacks=[DieAt(1)], timeout=timedelta(seconds=timeout_s))
    except Exception as error:
        Path(out_dir, f"rank{rank}.txt").write_text(f"{time.monotonic() - start:.2f}\n{type(error).__name__}: {error}")
        raise
