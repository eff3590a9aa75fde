"""KV-cache baselines at a fixed token budget: full causal attention, StreamingLLM, SnapKV- and H2O-style eviction.

All share ARM's interface: ``forward(q, k, v)`` (training form), ``prefill(q, k, v) -> (out, cache)`` and
``step(q, k, v, cache) -> (out, cache)`` on ``(batch, seq, heads, head_dim)`` tensors, and a cache with
``nbytes()``. Scores are written from the papers' descriptions (no code copied):

* StreamingLLM (Xiao et al., 2024): keep the first ``sinks`` tokens and the last ``budget - sinks``.
* SnapKV (Li et al., 2024): after the prompt, the attention of the last ``obs_window`` queries over the earlier
  keys, summed over those queries and smoothed by a 1-d average pool (``kernel``), picks which earlier keys stay;
  the observation window's own keys always stay. The prompt itself is attended in full.
* H2O (Zhang et al., 2023): every key accumulates the attention mass it receives; the ``recent`` newest keys
  always stay, and over budget the key with the smallest accumulated mass among the others is dropped.

Reconstruction choices: SnapKV and H2O are inference-time methods, so their training form is full causal
attention; to hold the budget while decoding, SnapKV re-scores the cache with the last ``obs_window`` queries
whenever it is one token over budget (it drops one key per step), H2O applies its greedy rule each step.
A decode step attends over the kept ``budget`` keys plus the new token, then evicts back to ``budget`` (so the
baselines see one key more than ARM at the same budget: the comparison errs in their favour); StreamingLLM's
training mask matches that (sinks plus the last ``budget - sinks + 1`` tokens).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from lightning_icml26.ops.attention.kv_memory.decode_check import check_decode_step

__all__ = ["EVICTION_KINDS", "EvictionAttention", "KVCache"]

EVICTION_KINDS = ("full", "streaming", "snapkv", "h2o")


@dataclass
class KVCache:
    """Kept keys/values with their positions and scores; ``(B, H, N, ...)``, ``N`` equal over batch and heads.

    Attributes:
        k: ``(B, H, N, d)`` kept keys.
        v: ``(B, H, N, d)`` kept values.
        pos: ``(B, H, N)`` token positions of the kept keys (increasing).
        score: ``(B, H, N)`` H2O's accumulated attention mass (zeros for the other kinds).
        queries: ``(B, H, Q, d)`` the last ``Q`` queries (SnapKV's observation window), oldest first.
        position: tokens seen so far.
        signature: the configuration that made the cache.
    """

    k: Tensor
    v: Tensor
    pos: Tensor
    score: Tensor
    queries: Tensor
    position: int
    signature: tuple[int | str | None, ...]

    def nbytes(self) -> int:
        """Bytes of the kept keys and values."""
        return self.k.numel() * self.k.element_size() + self.v.numel() * self.v.element_size()

    @property
    def batch_size(self) -> int:
        """Sequences held."""
        return self.k.shape[0]


def _gather(t: Tensor, idx: Tensor) -> Tensor:
    if t.dim() == idx.dim():
        return t.gather(2, idx)
    return t.gather(2, idx.unsqueeze(-1).expand(*idx.shape, t.shape[-1]))


class EvictionAttention(nn.Module):
    """Softmax attention whose decode cache holds at most ``budget`` tokens per head (``kind`` picks the rule).

    Args:
        kind: ``"full"`` (no budget), ``"streaming"``, ``"snapkv"`` or ``"h2o"``.
        num_heads: heads.
        head_dim: head width.
        budget: kept tokens per head (ignored by ``"full"``).
        sinks: StreamingLLM's attention sinks (< budget).
        obs_window: SnapKV's observation window (< budget).
        kernel: SnapKV's pooling kernel (odd).
        recent: H2O's protected recent tokens (< budget).

    Example:
        >>> attn = EvictionAttention("h2o", num_heads=1, head_dim=4, budget=6, recent=2)
        >>> q, k, v = torch.randn(3, 1, 10, 1, 4).unbind(0)
        >>> out, cache = attn.prefill(q, k, v)
        >>> out.shape, cache.k.shape[2]
        (torch.Size([1, 10, 1, 4]), 6)
    """

    def __init__(
        self,
        kind: str,
        num_heads: int,
        head_dim: int,
        budget: int | None = None,
        sinks: int = 4,
        obs_window: int = 8,
        kernel: int = 5,
        recent: int = 8,
    ) -> None:
        super().__init__()
        if kind not in EVICTION_KINDS:
            raise ValueError(f"kind must be one of {EVICTION_KINDS}, got {kind!r}")
        if kind != "full" and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
            raise ValueError(f"budget must be an integer >= 1 for kind={kind!r}, got {budget!r}")
        for name, value in (("sinks", sinks), ("obs_window", obs_window), ("recent", recent), ("kernel", kernel)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
        own = {"streaming": ("sinks", sinks), "snapkv": ("obs_window", obs_window), "h2o": ("recent", recent)}
        if kind in own and budget is not None and own[kind][1] >= budget:
            raise ValueError(f"{own[kind][0]}={own[kind][1]} must be < budget={budget} for kind={kind!r}")
        if kernel % 2 == 0:
            raise ValueError(f"kernel must be odd, got {kernel!r}")
        self.kind, self.num_heads, self.head_dim = kind, num_heads, head_dim
        self.budget = None if kind == "full" else budget
        self.sinks, self.obs_window, self.kernel, self.recent = sinks, obs_window, kernel, recent

    @property
    def signature(self) -> tuple[int | str | None, ...]:
        """What a decode cache must match."""
        return (self.kind, self.num_heads, self.head_dim, self.budget, self.sinks, self.obs_window, self.recent)

    def _scores(self, q: Tensor, k: Tensor) -> Tensor:
        return torch.matmul(q, k.transpose(-1, -2)) * self.head_dim**-0.5

    def forward(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        """Training form: StreamingLLM's sink + window mask, full causal attention for the other kinds."""
        self._check(q, k, v)
        qh, kh, vh = (t.transpose(1, 2) for t in (q, k, v))
        n = qh.shape[2]
        pos = torch.arange(n, device=qh.device)
        diff = pos[:, None] - pos[None, :]
        mask = diff >= 0
        if self.kind == "streaming":
            assert self.budget is not None
            mask = mask & ((diff <= self.budget - self.sinks) | (pos[None, :] < self.sinks))
        out = torch.softmax(self._scores(qh, kh).masked_fill(~mask, float("-inf")), dim=-1) @ vh
        return out.transpose(1, 2)

    def _keep_after_prefill(self, qh: Tensor, kh: Tensor, probs: Tensor) -> tuple[Tensor, Tensor]:
        """Indices ``(B, H, budget)`` of kept prompt tokens (sorted) and the H2O scores of all tokens."""
        b, h, n, _ = kh.shape
        budget = self.budget
        assert budget is not None
        mass = probs.sum(2)
        if self.kind == "streaming":
            idx = torch.cat([torch.arange(self.sinks), torch.arange(n - (budget - self.sinks), n)])
            return idx.to(kh.device).expand(b, h, -1), mass
        protect = self.obs_window if self.kind == "snapkv" else self.recent
        if self.kind == "snapkv":
            vote = probs[:, :, n - protect :, : n - protect].sum(2)
            rank = F.avg_pool1d(vote.reshape(b * h, 1, -1), self.kernel, 1, self.kernel // 2, count_include_pad=False)
            rank = rank.reshape(b, h, -1)
        else:
            rank = mass[..., : n - protect]
        top = rank.topk(budget - protect, dim=-1).indices
        recent = torch.arange(n - protect, n, device=kh.device).expand(b, h, -1)
        return torch.cat([top, recent], dim=-1).sort(dim=-1).values, mass

    def prefill(self, q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, KVCache]:
        """Training-form outputs over the prompt, then the cache cut to the budget."""
        self._check(q, k, v)
        out = self.forward(q, k, v)
        qh, kh, vh = (t.transpose(1, 2) for t in (q, k, v))
        b, h, n, d = kh.shape
        pos = torch.arange(n, device=kh.device).expand(b, h, -1)
        causal = torch.ones(n, n, dtype=torch.bool, device=kh.device).tril()
        probs = torch.softmax(self._scores(qh, kh).masked_fill(~causal, float("-inf")), dim=-1)
        mass = probs.sum(2)
        if self.budget is not None and n > self.budget:
            idx, mass = self._keep_after_prefill(qh, kh, probs)
            kh, vh, pos, mass = _gather(kh, idx), _gather(vh, idx), _gather(pos, idx), _gather(mass, idx)
        keep_q = qh[:, :, max(0, n - self.obs_window) :]
        queries = torch.cat([qh.new_zeros(b, h, self.obs_window - keep_q.shape[2], d), keep_q], dim=2)
        if self.kind != "h2o":
            mass = torch.zeros_like(mass)
        return out, KVCache(kh, vh, pos, mass, queries, n, self.signature)

    def empty_cache(
        self, batch: int, dtype: torch.dtype = torch.float32, device: torch.device | None = None
    ) -> KVCache:
        """A cache before any token."""
        h, d = self.num_heads, self.head_dim
        kv = torch.zeros(batch, h, 0, d, dtype=dtype, device=device)
        pos = torch.zeros(batch, h, 0, dtype=torch.long, device=device)
        queries = torch.zeros(batch, h, self.obs_window, d, dtype=dtype, device=device)
        return KVCache(
            kv, kv.clone(), pos, torch.zeros(batch, h, 0, dtype=dtype, device=device), queries, 0, self.signature
        )

    def _victim(self, cache_k: Tensor, pos: Tensor, score: Tensor, queries: Tensor, position: int) -> Tensor:
        """Index ``(B, H)`` of the key dropped when the cache is one over budget."""
        b, h, n, _ = cache_k.shape
        if self.kind == "streaming":
            return torch.full((b, h), self.sinks, dtype=torch.long, device=cache_k.device)
        protect = self.obs_window if self.kind == "snapkv" else self.recent
        if self.kind == "h2o":
            rank = score[..., : n - protect]
        else:
            seen = min(self.obs_window, position + 1)
            qpos = torch.arange(position + 1 - seen, position + 1, device=cache_k.device)
            ok = pos[:, :, None, :] <= qpos[None, None, :, None]
            probs = torch.softmax(self._scores(queries[:, :, -seen:], cache_k).masked_fill(~ok, float("-inf")), -1)
            vote = probs[..., : n - protect].sum(2)
            rank = F.avg_pool1d(vote.reshape(b * h, 1, -1), self.kernel, 1, self.kernel // 2, count_include_pad=False)
            rank = rank.reshape(b, h, -1)
        return rank.argmin(-1)

    def step(self, q: Tensor, k: Tensor, v: Tensor, cache: KVCache) -> tuple[Tensor, KVCache]:
        """Decode one token ``(B, 1, H, d)``: attend over the cache and the token, then evict if over budget."""
        self._check(q, k, v)
        check_decode_step(q, cache, KVCache, self.signature)
        qh, kh, vh = (t.transpose(1, 2) for t in (q, k, v))
        keys, vals = torch.cat([cache.k, kh], dim=2), torch.cat([cache.v, vh], dim=2)
        pos = torch.cat([cache.pos, cache.pos.new_full((*cache.pos.shape[:2], 1), cache.position)], dim=2)
        probs = torch.softmax(self._scores(qh, keys), dim=-1)
        out = probs @ vals
        score = torch.cat([cache.score, cache.score.new_zeros(*cache.score.shape[:2], 1)], dim=2)
        if self.kind == "h2o":
            score = score + probs[:, :, 0]
        queries = torch.cat([cache.queries[:, :, 1:], qh], dim=2)
        if self.budget is not None and keys.shape[2] > self.budget:
            drop = self._victim(keys, pos, score, queries, cache.position)
            n = keys.shape[2]
            keep = torch.arange(n, device=keys.device).expand(*drop.shape, n)
            keep = keep[keep != drop.unsqueeze(-1)].view(*drop.shape, n - 1)
            keys, vals, pos, score = _gather(keys, keep), _gather(vals, keep), _gather(pos, keep), _gather(score, keep)
        return out.transpose(1, 2), KVCache(keys, vals, pos, score, queries, cache.position + 1, self.signature)

    def _check(self, q: Tensor, k: Tensor, v: Tensor) -> None:
        for name, t in (("q", q), ("k", k), ("v", v)):
            if not isinstance(t, Tensor) or t.dim() != 4 or t.shape != q.shape:
                raise ValueError(f"{name} must be a (batch, seq, heads, head_dim) tensor shaped like q, got {t!r:.60}")
        if q.shape[2:] != (self.num_heads, self.head_dim):
            raise ValueError(f"q has heads/head_dim {tuple(q.shape[2:])}, expected ({self.num_heads}, {self.head_dim})")
