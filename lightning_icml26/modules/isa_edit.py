"""A small in-context video editor: DiT-style transformer blocks over ``[source ‖ context]`` clip tokens."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from lightning_icml26.ops.attention import ISAAttention, SDPAAttention

__all__ = ["EditBlock", "InContextEditor", "patchify", "unpatchify"]


def patchify(clip: Tensor, patch: int) -> Tensor:
    """``(B, F, C, S, S)`` -> ``(B, F * (S/p)^2, C * p * p)`` tokens, frame by frame, patches row-major."""
    b, f, c, s, _ = clip.shape
    n = s // patch
    x = clip.reshape(b, f, c, n, patch, n, patch).permute(0, 1, 3, 5, 2, 4, 6)
    return x.reshape(b, f * n * n, c * patch * patch)


def unpatchify(tokens: Tensor, frames: int, channels: int, patch: int) -> Tensor:
    """Inverse of :func:`patchify`."""
    b = tokens.shape[0]
    n = int(round((tokens.shape[1] // frames) ** 0.5))
    x = tokens.reshape(b, frames, n, n, channels, patch, patch).permute(0, 1, 4, 2, 5, 3, 6)
    return x.reshape(b, frames, channels, n * patch, n * patch)


class EditBlock(nn.Module):
    """Pre-norm transformer block whose attention core is swappable (dense :class:`SDPAAttention` or ISA).

    The core is called as ``core(q, k, v, target_len, x=normed_hidden)``, so an ISA core with a gate reads
    its gate from the block's normalised hidden states.
    """

    def __init__(self, hidden: int, heads: int, core: nn.Module | None = None) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.core = core if core is not None else SDPAAttention()
        self.proj = nn.Linear(hidden, hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden))

    def forward(self, x: Tensor, target_len: int) -> Tensor:
        """``(B, S, hidden)`` -> same shape."""
        h = self.norm1(x)
        q, k, v = self.qkv(h).view(x.shape[0], x.shape[1], 3, self.heads, -1).unbind(2)
        x = x + self.proj(self.core(q, k, v, target_len, x=h).flatten(2))
        return x + self.mlp(self.norm2(x))


class InContextEditor(pl.LightningModule):
    """Regress the edited clip from ``[source ‖ context]`` tokens; attention dense or ISA (with its gate).

    Each clip is cut into ``patch x patch`` patches (one frame = ``(size/patch)^2`` tokens); the source tokens
    come first (ISA's target part), the context tokens after. Learned positions and a part embedding are
    added; the output head reads the source positions and predicts the edited clip's patches (MSE loss).

    Args:
        frames: frames per clip.
        size: image size in pixels.
        patch: patch side in pixels (divides ``size``).
        hidden: model width.
        heads: attention heads (divide ``hidden``).
        depth: number of blocks.
        lr: AdamW learning rate (used when ``optimizer`` is ``None``).
        optimizer: optional factory ``params -> Optimizer`` (Hydra ``_partial_: true``).
        isa: ``None`` for dense attention, else keyword arguments of :class:`ISAAttention` (its gate is
            sized to ``hidden`` and ``heads`` unless given).

    Example:
        >>> model = InContextEditor(frames=2, size=8, patch=4, hidden=16, heads=2, depth=1)
        >>> model(torch.zeros(3, 2, 3, 8, 8), torch.zeros(3, 2, 3, 8, 8)).shape
        torch.Size([3, 2, 3, 8, 8])
    """

    def __init__(
        self,
        frames: int = 8,
        size: int = 16,
        patch: int = 4,
        hidden: int = 64,
        heads: int = 4,
        depth: int = 2,
        lr: float = 3e-3,
        optimizer: Callable[[Iterable[Tensor]], torch.optim.Optimizer] | None = None,
        isa: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if size % patch:
            raise ValueError(f"patch must divide size={size}, got {patch}")
        if hidden % heads:
            raise ValueError(f"heads must divide hidden={hidden}, got {heads}")
        if isa is not None and not isinstance(isa, dict):
            raise TypeError(f"isa must be a dict of ISAAttention arguments or None, got {type(isa).__name__}")
        self.save_hyperparameters(ignore=["optimizer"])
        self.frames, self.patch, self.lr, self.optimizer_factory = frames, patch, lr, optimizer
        self.n_tokens = frames * (size // patch) ** 2
        dim = 3 * patch * patch
        self.embed = nn.Linear(dim, hidden)
        self.pos = nn.Parameter(0.02 * torch.randn(self.n_tokens, hidden))
        self.part = nn.Parameter(0.02 * torch.randn(2, hidden))
        cores = [self._core(isa, hidden, heads) for _ in range(depth)]
        self.blocks = nn.ModuleList(EditBlock(hidden, heads, core) for core in cores)
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, dim)

    @staticmethod
    def _core(isa: dict[str, Any] | None, hidden: int, heads: int) -> nn.Module:
        if isa is None:
            return SDPAAttention()
        return ISAAttention(**({"gate_dim": hidden, "gate_heads": heads} | isa))

    def forward(self, source: Tensor, context: Tensor) -> Tensor:
        """``(B, F, 3, S, S)`` source and context clips -> the predicted edited clip, same shape."""
        s = self.embed(patchify(source, self.patch)) + self.pos + self.part[0]
        c = self.embed(patchify(context, self.patch)) + self.pos + self.part[1]
        x = torch.cat([s, c], dim=1)
        for block in self.blocks:
            x = block(x, self.n_tokens)
        out = self.head(self.norm(x[:, : self.n_tokens]))
        return unpatchify(out, self.frames, 3, self.patch)

    def _loss(self, batch: list[Tensor]) -> Tensor:
        source, context, target = batch
        return F.mse_loss(self(source, context), target)

    def training_step(self, batch: list[Tensor], batch_idx: int) -> Tensor:
        """MSE of the predicted edited clip."""
        loss = self._loss(batch)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch: list[Tensor], batch_idx: int) -> None:
        """Logs ``val_loss``."""
        self.log("val_loss", self._loss(batch), prog_bar=True)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        """AdamW at ``lr``, or the given factory."""
        if self.optimizer_factory is not None:
            return self.optimizer_factory(self.parameters())
        return torch.optim.AdamW(self.parameters(), lr=self.lr)
