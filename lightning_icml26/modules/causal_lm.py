"""A causal language-model LightningModule around any next-token network, and a tiny transformers builder.

Batches are dicts with ``input_ids`` and ``labels`` of the same length where ``labels[t]`` is the target of
position ``t`` (already shifted, see :class:`lightning_icml26.data.text.ByteChunkDataset`); an optional
``position_ids`` is forwarded to the network. Because nothing is shifted inside the loss, the same module
trains on full sequences in one process and on sequence shards under a context-parallel strategy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule
from torch import nn

from lightning_icml26._optional import require
from lightning_icml26._requirements import Requirement, declare_requirements
from lightning_icml26.ops.attention import UPipeAttention

__all__ = ["CausalLMModule", "TinyCausalTransformer", "build_hf_causal_lm"]

OptimizerFactory = Callable[[Iterable[Any]], torch.optim.Optimizer]


def _default_optimizer(params: Iterable[Any]) -> torch.optim.Optimizer:
    return torch.optim.AdamW(params, lr=1e-3)


@declare_requirements([Requirement("transformers", "hf", "build_hf_causal_lm")])
def build_hf_causal_lm(
    model_type: str = "llama", attn_implementation: str = "sdpa", seed: int | None = None, **config: Any
) -> nn.Module:
    """A transformers causal LM with random weights, built from a config (nothing is downloaded).

    Args:
        model_type: a transformers model type with a causal-LM head, e.g. ``"llama"``, ``"qwen2"``, ``"qwen3"``.
        attn_implementation: the attention function to start with (``"sdpa"`` or ``"eager"``); a
            context-parallel strategy re-routes it at setup.
        seed: if given, the weights are drawn under ``torch.manual_seed(seed)`` (the global RNG is restored).
        **config: fields of the model's config class (``hidden_size``, ``num_attention_heads``, ...).

    Returns:
        The ``AutoModelForCausalLM`` for that config.

    Raises:
        ValueError: for an unknown ``model_type``.

    Example:
        >>> model = build_hf_causal_lm("llama", seed=0, vocab_size=256, hidden_size=16, intermediate_size=32,
        ...                            num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1)
        >>> model(input_ids=torch.zeros(1, 4, dtype=torch.long)).logits.shape
        torch.Size([1, 4, 256])
    """
    transformers = require("transformers", extra="hf", purpose="build_hf_causal_lm")
    try:
        hf_config = transformers.AutoConfig.for_model(model_type, **config)
    except ValueError as error:
        raise ValueError(f"model_type={model_type!r} is not a transformers model type: {error}") from None
    state = torch.random.get_rng_state()
    try:
        if seed is not None:
            torch.manual_seed(seed)
        model = transformers.AutoModelForCausalLM.from_config(hf_config, attn_implementation=attn_implementation)
    finally:
        if seed is not None:
            torch.random.set_rng_state(state)
    return model


class CausalLMModule(LightningModule):
    """Next-token cross-entropy training of ``net`` on ``{"input_ids", "labels"[, "position_ids"]}`` batches.

    ``net`` is called as ``net(input_ids=..., position_ids=...)`` (``position_ids`` only when the batch has
    it) and returns logits ``(batch, seq, vocab)`` or an object with a ``logits`` attribute (transformers
    models). The loss is the mean over the tokens whose label is not ``ignore_index``.

    Args:
        net: the network.
        optimizer: factory taking the parameters (Hydra ``_partial_: true``); defaults to ``AdamW(lr=1e-3)``.
        ignore_index: label value that is not scored.

    Example:
        >>> class Bigram(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.emb = nn.Embedding(8, 8)
        ...     def forward(self, input_ids, position_ids=None):
        ...         return self.emb(input_ids)
        >>> module = CausalLMModule(Bigram())
        >>> batch = {"input_ids": torch.tensor([[1, 2, 3]]), "labels": torch.tensor([[2, 3, -100]])}
        >>> float(module.training_step(batch, 0).detach()) > 0
        True
    """

    def __init__(self, net: nn.Module, optimizer: OptimizerFactory | None = None, ignore_index: int = -100) -> None:
        super().__init__()
        if not isinstance(net, nn.Module):
            raise TypeError(f"net must be a torch.nn.Module, got {type(net).__name__}")
        self.net = net
        self.optimizer_factory = optimizer or _default_optimizer
        self.ignore_index = ignore_index

    def forward(self, input_ids: torch.Tensor, position_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Logits ``(batch, seq, vocab)`` for ``input_ids``."""
        kwargs: dict[str, Any] = {"input_ids": input_ids}
        if position_ids is not None:
            kwargs["position_ids"] = position_ids
        out = self.net(**kwargs)
        return out if isinstance(out, torch.Tensor) else out.logits

    def _loss(self, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        for key in ("input_ids", "labels"):
            if key not in batch:
                raise ValueError(f"batch must hold '{key}', got keys {sorted(batch)}")
        logits = self(batch["input_ids"], batch.get("position_ids"))
        labels = batch["labels"]
        return F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), ignore_index=self.ignore_index
        )

    def training_step(self, batch: Mapping[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        """Mean next-token cross-entropy of a training batch."""
        loss = self._loss(batch)
        self.log("train_loss", loss, on_step=True, prog_bar=True, sync_dist=True, batch_size=batch["labels"].shape[0])
        return loss

    def validation_step(self, batch: Mapping[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        """Mean next-token cross-entropy of a validation batch."""
        loss = self._loss(batch)
        self.log("val_loss", loss, on_epoch=True, prog_bar=True, sync_dist=True, batch_size=batch["labels"].shape[0])
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        """The optimizer built by the factory."""
        return self.optimizer_factory(self.parameters())


class TinyCausalTransformer(nn.Module):
    """A small pre-norm Llama-style decoder on the project's :class:`~lightning_icml26.ops.attention.UPipeAttention`.

    Embedding, ``num_layers`` blocks of (RMSNorm, UPipeAttention with RoPE and GQA, RMSNorm, SiLU MLP) with
    residuals, a final RMSNorm and an untied output head. The attention runs densely until a context-parallel
    strategy routes it (``UPipeAttention.set_context_parallel``).

    Args:
        vocab_size: number of token ids.
        hidden_size: model width.
        num_layers: number of blocks.
        num_heads: query heads.
        num_kv_heads: KV heads (default ``num_heads``).
        mlp_ratio: MLP width / model width.
        rope_theta: rotary base.

    Example:
        >>> net = TinyCausalTransformer(vocab_size=16, hidden_size=16, num_layers=1, num_heads=2)
        >>> net(input_ids=torch.zeros(2, 5, dtype=torch.long)).shape
        torch.Size([2, 5, 16])
    """

    def __init__(
        self,
        vocab_size: int = 256,
        hidden_size: int = 64,
        num_layers: int = 2,
        num_heads: int = 4,
        num_kv_heads: int | None = None,
        mlp_ratio: int = 4,
        rope_theta: float = 10000.0,
    ) -> None:
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("num_layers", num_layers), ("mlp_ratio", mlp_ratio)):
            if value < 1:
                raise ValueError(f"{name} must be positive, got {value}")
        self.embed = nn.Embedding(vocab_size, hidden_size)
        self.blocks = nn.ModuleList()
        for _ in range(num_layers):
            self.blocks.append(TinyDecoderBlock(hidden_size, num_heads, num_kv_heads, mlp_ratio, rope_theta))
        self.norm = nn.RMSNorm(hidden_size)
        self.head = nn.Linear(hidden_size, vocab_size, bias=False)

    def forward(self, input_ids: torch.Tensor, position_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Logits ``(batch, seq_local, vocab_size)``; ``position_ids`` are the global positions of the tokens."""
        h = self.embed(input_ids)
        for block in self.blocks:
            h = block(h, position_ids=position_ids)
        return self.head(self.norm(h))


class TinyDecoderBlock(nn.Module):
    """One pre-norm block of :class:`TinyCausalTransformer`: RMSNorm, attention, RMSNorm, SiLU MLP, with residuals.

    Example:
        >>> block = TinyDecoderBlock(hidden_size=8, num_heads=2)
        >>> block(torch.zeros(1, 3, 8)).shape
        torch.Size([1, 3, 8])
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        num_kv_heads: int | None = None,
        mlp_ratio: int = 4,
        rope_theta: float = 10000.0,
    ) -> None:
        super().__init__()
        self.norm1 = nn.RMSNorm(hidden_size)
        self.attn = UPipeAttention(hidden_size, num_heads, num_kv_heads, rope_theta=rope_theta)
        self.norm2 = nn.RMSNorm(hidden_size)
        self.mlp = nn.Sequential(
            nn.Linear(hidden_size, mlp_ratio * hidden_size), nn.SiLU(), nn.Linear(mlp_ratio * hidden_size, hidden_size)
        )

    def forward(self, h: torch.Tensor, position_ids: torch.Tensor | None = None) -> torch.Tensor:
        """``h`` plus the attention and MLP updates; ``position_ids`` are the global positions of the tokens."""
        h = h + self.attn(self.norm1(h), position_ids=position_ids)
        return h + self.mlp(self.norm2(h))
