"""``ARMDecoder``: a small byte-level decoder whose attention kind is a config switch (ARM comparison).

Everything but the attention is shared: token embedding plus an optional token shift (``token_shift=True``,
the default: each position also sees the previous token's embedding through a learned linear map, the same for
every attention kind, so one attention layer can do associative recall without positional encodings: a value
token's key carries the preceding key token), pre-norm blocks with a GELU MLP, tied nothing. No positional
encoding is used, so the same weights decode at any length.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from lightning_icml26.ops.attention.kv_memory.arm import ARMAttention
from lightning_icml26.ops.attention.kv_memory.kinds import KV_ATTENTION_KINDS, build_kv_attention

__all__ = ["ARMDecoder", "DecodeState"]

OptimizerFactory = Callable[[Iterable[Any]], torch.optim.Optimizer]
SchedulerFactory = Callable[[torch.optim.Optimizer], torch.optim.lr_scheduler.LRScheduler]


@dataclass
class DecodeState:
    """Per-layer attention caches and the previous token's embedding (for the token shift)."""

    caches: list[Any]
    prev: Tensor


class _Block(nn.Module):
    def __init__(self, d_model: int, num_heads: int, attn: nn.Module, mlp_ratio: int) -> None:
        super().__init__()
        self.num_heads, self.head_dim = num_heads, d_model // num_heads
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv, self.proj = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)
        self.attn: Any = attn
        self.mlp = nn.Sequential(
            nn.Linear(d_model, mlp_ratio * d_model), nn.GELU(), nn.Linear(mlp_ratio * d_model, d_model)
        )

    def _qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        q, k, v = self.qkv(self.norm1(x)).unflatten(-1, (3, self.num_heads, self.head_dim)).unbind(2)
        return q, k, v

    def _finish(self, x: Tensor, att: Tensor) -> Tensor:
        x = x + self.proj(att.flatten(-2))
        return x + self.mlp(self.norm2(x))

    def forward(self, x: Tensor) -> Tensor:
        return self._finish(x, self.attn(*self._qkv(x)))

    def prefill(self, x: Tensor) -> tuple[Tensor, Any]:
        att, cache = self.attn.prefill(*self._qkv(x))
        return self._finish(x, att), cache

    def step(self, x: Tensor, cache: Any, inplace: bool = False) -> tuple[Tensor, Any]:
        if inplace and isinstance(self.attn, ARMAttention) and self.attn.can_step_inplace:
            att, cache = self.attn.step(*self._qkv(x), cache, inplace=True)
        else:
            att, cache = self.attn.step(*self._qkv(x), cache)
        return self._finish(x, att), cache


class ARMDecoder(pl.LightningModule):
    """Decoder-only LM for the equal-KV-budget comparison of attention kinds (ARM is experimental).

    Args:
        vocab_size: tokens (256 for bytes and the recall tasks).
        d_model: width; must be divisible by ``num_heads``.
        num_layers: blocks.
        num_heads: heads per block.
        attention: one of ``"full"``, ``"streaming"``, ``"snapkv"``, ``"h2o"``, ``"gsa"``, ``"arm"``.
        budget: key/value tokens per head held while decoding (see ``build_kv_attention``).
        attention_kwargs: extra arguments of the attention module (e.g. ARM's ``num_clusters``).
        mlp_ratio: MLP width multiple.
        optimizer: factory taking the parameters (Hydra ``_partial_: true``); default ``AdamW(lr=1e-3)``.
        lr_scheduler: optional factory taking the optimizer, stepped after every optimizer step (e.g. a linear
            warm-up, ``partial(torch.optim.lr_scheduler.LinearLR, start_factor=0.02, total_iters=49)``).
        aux_weight: weight of the attention modules' auxiliary losses (ARM's read cost and load balance).
        ignore_index: label value that is not scored.
        seed: seed of the Gumbel noise generator (saved in checkpoints, so a resumed run draws the same noise).
        token_shift: add ``W_s e(x_{t-1})`` (zero vector at ``t = 0``) to each token embedding ``e(x_t)``
            before the first block. Without it a one-layer model has no previous-token mechanism and cannot
            learn associative recall; ``False`` is for ablations.

    Example:
        >>> model = ARMDecoder(d_model=32, num_layers=1, num_heads=2, budget=16, attention_kwargs={"num_clusters": 4})
        >>> model = model.eval()
        >>> ids = torch.randint(0, 256, (2, 12))
        >>> logits, state = model.prefill(ids[:, :11])
        >>> step_logits, state = model.step(ids[:, 11], state)
        >>> torch.allclose(step_logits, model(ids)[:, -1], atol=1e-5)
        True
    """

    def __init__(
        self,
        vocab_size: int = 256,
        d_model: int = 128,
        num_layers: int = 2,
        num_heads: int = 4,
        attention: str = "arm",
        budget: int = 64,
        attention_kwargs: dict[str, Any] | None = None,
        mlp_ratio: int = 4,
        optimizer: OptimizerFactory | None = None,
        lr_scheduler: SchedulerFactory | None = None,
        aux_weight: float = 1.0,
        ignore_index: int = -100,
        seed: int = 0,
        token_shift: bool = True,
    ) -> None:
        super().__init__()
        if attention not in KV_ATTENTION_KINDS:
            raise ValueError(f"attention must be one of {KV_ATTENTION_KINDS}, got {attention!r}")
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} must be divisible by num_heads={num_heads}")
        self.save_hyperparameters(ignore=["optimizer", "lr_scheduler"])
        kwargs = dict(attention_kwargs or {})
        self.embed = nn.Embedding(vocab_size, d_model)
        if not isinstance(token_shift, bool):
            raise TypeError(f"token_shift must be a bool, got {token_shift!r}")
        self.shift = nn.Linear(d_model, d_model, bias=False) if token_shift else None
        self.blocks = nn.ModuleList(
            _Block(
                d_model,
                num_heads,
                build_kv_attention(attention, num_heads, d_model // num_heads, budget, i, **kwargs),
                mlp_ratio,
            )
            for i in range(num_layers)
        )
        self.norm, self.head = nn.LayerNorm(d_model), nn.Linear(d_model, vocab_size)
        self.optimizer_factory, self.scheduler_factory = optimizer, lr_scheduler
        self.aux_weight, self.ignore_index = float(aux_weight), ignore_index
        self.gumbel = torch.Generator().manual_seed(seed)
        for layer in self.arm_layers():
            layer.generator = self.gumbel

    def _blocks(self) -> list[_Block]:
        return [cast(_Block, b) for b in self.blocks]

    def arm_layers(self) -> list[ARMAttention]:
        """The ARM attention modules (empty for the other kinds)."""
        return [m for m in self.modules() if isinstance(m, ARMAttention)]

    def _embed(self, ids: Tensor, prev: Tensor | None = None) -> Tensor:
        e = self.embed(ids)
        if self.shift is None:
            return e
        before = F.pad(e[:, :-1], (0, 0, 1, 0)) if prev is None else prev.unsqueeze(1)
        return e + self.shift(before)

    def forward(self, input_ids: Tensor) -> Tensor:
        """Logits ``(B, T, vocab)`` of the parallel (training) form."""
        x = self._embed(input_ids)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))

    def prefill(self, input_ids: Tensor) -> tuple[Tensor, DecodeState]:
        """Parallel-form logits and the per-layer decode caches after the prompt."""
        x = self._embed(input_ids)
        caches = []
        for block in self._blocks():
            x, cache = block.prefill(x)
            caches.append(cache)
        return self.head(self.norm(x)), DecodeState(caches, self.embed(input_ids[:, -1]))

    def step(self, tokens: Tensor, state: DecodeState, inplace: bool = False) -> tuple[Tensor, DecodeState]:
        """Decode one token per sequence, ``(B,)`` -> logits ``(B, vocab)`` and the new state.

        With ``inplace=True`` every ARM layer that can (:attr:`ARMAttention.can_step_inplace`: eval, no autograd,
        fixed read) updates its cache in ``state`` in place, like a preallocated KV cache, instead of returning a new
        one: cheaper per token, but ``state`` must not be reused afterwards (no branching from an old state). The
        other layers return new caches either way; the logits are the same up to floating-point rounding.
        """
        x = self._embed(tokens.unsqueeze(1), state.prev)
        caches = []
        for block, cache in zip(self._blocks(), state.caches, strict=True):
            x, cache = block.step(x, cache, inplace)
            caches.append(cache)
        return self.head(self.norm(x))[:, 0], DecodeState(caches, self.embed(tokens))

    def aux_loss(self) -> Tensor:
        """Sum of the ARM layers' auxiliary losses of the last forward (0 for the other kinds)."""
        total = torch.zeros((), device=self.head.weight.device)
        for layer in self.arm_layers():
            total = total + layer.last_aux_loss
        return total

    def _loss(self, batch: dict[str, Tensor], stage: str) -> Tensor:
        logits = self(batch["input_ids"])
        labels = batch["labels"]
        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=self.ignore_index)
        scored = labels != self.ignore_index
        acc = (logits.argmax(-1)[scored] == labels[scored]).float().mean()
        self.log(f"{stage}_loss", loss, prog_bar=stage != "train", on_epoch=True, on_step=stage == "train")
        self.log(f"{stage}_acc", acc, on_epoch=True, on_step=False)
        return loss

    def training_step(self, batch: dict[str, Tensor], batch_idx: int) -> Tensor:
        """Cross-entropy on the scored tokens plus ``aux_weight`` times the attention auxiliary losses."""
        loss = self._loss(batch, "train")
        return loss + self.aux_weight * self.aux_loss()

    def validation_step(self, batch: dict[str, Tensor], batch_idx: int) -> None:
        """Logs ``val_loss`` and ``val_acc`` (accuracy on scored tokens)."""
        self._loss(batch, "val")

    def test_step(self, batch: dict[str, Tensor], batch_idx: int) -> None:
        """Logs ``test_loss`` and ``test_acc``."""
        self._loss(batch, "test")

    def configure_optimizers(self) -> Any:
        """The optimizer built by the factory (``AdamW(lr=1e-3)`` by default) and the per-step scheduler, if any."""
        if self.optimizer_factory is None:
            optimizer: torch.optim.Optimizer = torch.optim.AdamW(self.parameters(), lr=1e-3)
        else:
            optimizer = self.optimizer_factory(self.parameters())
        if self.scheduler_factory is None:
            return optimizer
        scheduler = {"scheduler": self.scheduler_factory(optimizer), "interval": "step"}
        return {"optimizer": optimizer, "lr_scheduler": scheduler}

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Store the Gumbel generator's state."""
        checkpoint["arm_gumbel_state"] = self.gumbel.get_state()

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Restore the Gumbel generator's state (absent in older checkpoints: left as seeded)."""
        if "arm_gumbel_state" in checkpoint:
            self.gumbel.set_state(checkpoint["arm_gumbel_state"])
