"""Gated Slot Attention (Zhang et al., 2024) as a fixed-size-state baseline, pure torch.

Per head, ``m`` slots of keys and values decay with a data-dependent forget gate ``alpha_t in (0, 1)^m`` and
absorb the new token softly: ``K_t = diag(alpha_t) K_{t-1} + (1 - alpha_t) k_t^T`` (same for ``V``), then the
output is ``o_t = V_t^T softmax(K_t q_t / sqrt(d))``. ``alpha_t = sigmoid(k_t W_alpha) ** (1 / damping)``;
the paper computes the gate from the layer input with a damping temperature of 8, here it is computed from the
key because the attention kinds share a ``(q, k, v)`` interface (a documented deviation).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from lightning_icml26.ops.attention.kv_memory.decode_check import check_decode_step

__all__ = ["GatedSlotAttention", "GSACache"]


@dataclass
class GSACache:
    """Slot state of one GSA layer: ``hk``, ``hv`` ``(B, H, m, d)``, tokens seen, configuration."""

    hk: Tensor
    hv: Tensor
    position: int
    signature: tuple[int, ...]

    def nbytes(self) -> int:
        """Bytes of the slot keys and values."""
        return self.hk.numel() * self.hk.element_size() + self.hv.numel() * self.hv.element_size()

    @property
    def batch_size(self) -> int:
        """Sequences held."""
        return self.hk.shape[0]


class GatedSlotAttention(nn.Module):
    """Gated Slot Attention with a chunked parallel form and its one-token recurrence.

    Args:
        num_heads: heads.
        head_dim: head width ``d``.
        num_slots: slots ``m`` per head (the KV budget in tokens).
        damping: exponent ``1 / damping`` on the sigmoid forget gate (8 in the paper).
        chunk: tokens per chunk of the parallel form (memory ``chunk^2 m`` per head).

    Example:
        >>> gsa = GatedSlotAttention(num_heads=2, head_dim=4, num_slots=6)
        >>> q, k, v = torch.randn(3, 1, 9, 2, 4).unbind(0)
        >>> out, cache = gsa.prefill(q, k, v)
        >>> out.shape, cache.hk.shape
        (torch.Size([1, 9, 2, 4]), torch.Size([1, 2, 6, 4]))
    """

    def __init__(self, num_heads: int, head_dim: int, num_slots: int, damping: float = 8.0, chunk: int = 16) -> None:
        super().__init__()
        for name, value in (
            ("num_heads", num_heads),
            ("head_dim", head_dim),
            ("num_slots", num_slots),
            ("chunk", chunk),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if not damping > 0:
            raise ValueError(f"damping must be > 0, got {damping!r}")
        self.num_heads, self.head_dim, self.num_slots = num_heads, head_dim, num_slots
        self.damping, self.chunk = float(damping), chunk
        self.w_alpha = nn.Parameter(torch.randn(num_heads, head_dim, num_slots) * head_dim**-0.5)

    @property
    def signature(self) -> tuple[int, ...]:
        """What a decode cache must match."""
        return (self.num_heads, self.head_dim, self.num_slots)

    def log_alpha(self, k: Tensor) -> Tensor:
        """``log alpha`` ``(B, H, T, m)`` for keys ``(B, H, T, d)``."""
        return F.logsigmoid(torch.einsum("bhtd,hdm->bhtm", k, self.w_alpha)) / self.damping

    def _chunk(self, q: Tensor, k: Tensor, v: Tensor, hk: Tensor, hv: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        la = self.log_alpha(k)
        a = la.cumsum(2)
        n = q.shape[2]
        causal = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
        gap = (a.unsqueeze(3) - a.unsqueeze(2)).masked_fill(~causal[..., None], float("-inf"))
        decay = torch.exp(gap) * (1 - torch.exp(la)).unsqueeze(2)  # [t, j, s]: weight of token j in slot s at t
        qs = q * self.head_dim**-0.5
        scores = torch.exp(a) * torch.einsum("bhtd,bhsd->bhts", qs, hk)
        scores = scores + torch.einsum("bhtjs,bhtj->bhts", decay, torch.matmul(qs, k.transpose(-1, -2)))
        p = torch.softmax(scores, dim=-1)
        out = torch.einsum("bhts,bhsd->bhtd", p * torch.exp(a), hv)
        out = out + torch.matmul(torch.einsum("bhts,bhtjs->bhtj", p, decay), v)
        last = torch.exp(a[:, :, -1:] - a) * (1 - torch.exp(la))
        new_hk = torch.exp(a[:, :, -1]).unsqueeze(-1) * hk + torch.einsum("bhjs,bhjd->bhsd", last, k)
        new_hv = torch.exp(a[:, :, -1]).unsqueeze(-1) * hv + torch.einsum("bhjs,bhjd->bhsd", last, v)
        return out, new_hk, new_hv

    def prefill(self, q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, GSACache]:
        """Parallel (chunked) form over ``(B, T, H, d)`` plus the state after the last token."""
        self._check(q, k, v)
        qh, kh, vh = (t.transpose(1, 2) for t in (q, k, v))
        b, h, n, d = qh.shape
        hk = qh.new_zeros(b, h, self.num_slots, d)
        hv = torch.zeros_like(hk)
        outs = []
        for s in range(0, n, self.chunk):
            e = min(n, s + self.chunk)
            out, hk, hv = self._chunk(qh[:, :, s:e], kh[:, :, s:e], vh[:, :, s:e], hk, hv)
            outs.append(out)
        return torch.cat(outs, dim=2).transpose(1, 2), GSACache(hk, hv, n, self.signature)

    def forward(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        """Parallel form: ``(B, T, H, d)`` -> ``(B, T, H, d)``."""
        return self.prefill(q, k, v)[0]

    def empty_cache(
        self, batch: int, dtype: torch.dtype = torch.float32, device: torch.device | None = None
    ) -> GSACache:
        """Zero slots before any token."""
        zeros = torch.zeros(batch, self.num_heads, self.num_slots, self.head_dim, dtype=dtype, device=device)
        return GSACache(zeros, zeros.clone(), 0, self.signature)

    def step(self, q: Tensor, k: Tensor, v: Tensor, cache: GSACache) -> tuple[Tensor, GSACache]:
        """The recurrence for one token ``(B, 1, H, d)``."""
        self._check(q, k, v)
        check_decode_step(q, cache, GSACache, self.signature)
        qh, kh, vh = (t.transpose(1, 2)[:, :, 0] for t in (q, k, v))
        alpha = torch.exp(self.log_alpha(kh.unsqueeze(2))[:, :, 0]).unsqueeze(-1)
        hk = alpha * cache.hk + (1 - alpha) * kh.unsqueeze(2)
        hv = alpha * cache.hv + (1 - alpha) * vh.unsqueeze(2)
        p = torch.softmax(torch.einsum("bhsd,bhd->bhs", hk, qh) * self.head_dim**-0.5, dim=-1)
        out = torch.einsum("bhs,bhsd->bhd", p, hv)
        return out.unsqueeze(1), GSACache(hk, hv, cache.position + 1, self.signature)

    def _check(self, q: Tensor, k: Tensor, v: Tensor) -> None:
        for name, t in (("q", q), ("k", k), ("v", v)):
            if not isinstance(t, Tensor) or t.dim() != 4 or t.shape != q.shape:
                raise ValueError(f"{name} must be a (batch, seq, heads, head_dim) tensor shaped like q, got {t!r:.60}")
        if q.shape[2:] != (self.num_heads, self.head_dim):
            raise ValueError(f"q has heads/head_dim {tuple(q.shape[2:])}, expected ({self.num_heads}, {self.head_dim})")
