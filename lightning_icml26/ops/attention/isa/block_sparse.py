"""Top-k block-sparse attention chosen from mean-pooled scores (the selection rule of SpargeAttn-style kernels).

The sequence is cut into blocks of ``block_size`` tokens (the last may be shorter); q and k are mean-pooled
per block; for every query block the ``blocks_per_query`` key blocks with the largest pooled probability
``softmax(q̄ k̄ᵀ · scale)`` are attended exactly and the others are skipped. It is the equal-budget baseline
ISA is compared with; it has no self-similarity filter and no quantisation.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from lightning_icml26.ops.attention.isa.functional import check_same_qkv

__all__ = ["topk_block_attention"]


def topk_block_attention(
    q: Tensor, k: Tensor, v: Tensor, blocks_per_query: int, *, block_size: int = 64, scale: float | None = None
) -> Tensor:
    """Attend every query block exactly to its top ``blocks_per_query`` key blocks by pooled probability.

    Args:
        q: ``(batch, seq, heads, head_dim)``.
        k: same shape and dtype as ``q``.
        v: same shape and dtype as ``q``.
        blocks_per_query: key blocks kept per query block, ``1 <= blocks_per_query <= ceil(seq / block_size)``.
        block_size: tokens per block.
        scale: softmax scale, default ``head_dim ** -0.5``.

    Returns:
        ``(batch, seq, heads, head_dim)``; equal to dense attention when every block is kept.

    Example:
        >>> q, k, v = torch.randn(3, 1, 20, 2, 4).unbind(0)
        >>> topk_block_attention(q, k, v, 2, block_size=8).shape
        torch.Size([1, 20, 2, 4])
    """
    check_same_qkv(q, k, v)
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
    bsz, seq, heads, d = q.shape
    n = -(-seq // block_size)
    if isinstance(blocks_per_query, bool) or not isinstance(blocks_per_query, int) or not 1 <= blocks_per_query <= n:
        raise ValueError(f"blocks_per_query must be an integer in [1, {n}], got {blocks_per_query!r}")
    scale = d**-0.5 if scale is None else scale
    pad = n * block_size - seq
    valid = (torch.arange(n * block_size, device=q.device) < seq).view(n, block_size)
    counts = valid.sum(-1).to(q.dtype)[:, None]
    qp, kp, vp = (F.pad(t.transpose(1, 2), (0, 0, 0, pad)).view(bsz, heads, n, block_size, d) for t in (q, k, v))
    pooled = torch.matmul(qp.sum(3) / counts, (kp.sum(3) / counts).transpose(-1, -2)) * scale
    top = pooled.softmax(-1).topk(blocks_per_query, dim=-1).indices  # (B, H, n, kq)
    flat = top.reshape(bsz, heads, -1)[..., None, None].expand(-1, -1, -1, block_size, d)
    ks = kp.gather(2, flat).view(bsz, heads, n, blocks_per_query * block_size, d)
    vs = vp.gather(2, flat).view(bsz, heads, n, blocks_per_query * block_size, d)
    mask = valid[top].view(bsz, heads, n, 1, blocks_per_query * block_size)
    out = F.scaled_dot_product_attention(qp, ks, vs, attn_mask=mask, scale=scale)  # (B, H, n, b, D)
    return out.reshape(bsz, heads, n * block_size, d)[:, :, :seq].transpose(1, 2)
