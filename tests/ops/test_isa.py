"""ISA torch reference against independent references: dense SDPA, exact Taylor cases, a direct fp64 loop."""

from __future__ import annotations

import math
import sys

import pytest
import torch
import torch.nn.functional as F

from lightning_icml26.ops.attention import ISAAttention, isa_attention, topk_block_attention


def _dense(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)).transpose(1, 2)


def _qkv(b: int, s: int, h: int, d: int, seed: int = 0, dtype: torch.dtype = torch.float32) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(b, s, h, d, generator=g, dtype=dtype) for _ in range(3)]


def _block_ranges(seq: int, target_len: int, b: int) -> list[range]:
    starts = list(range(0, target_len, b)) + list(range(target_len, seq, b))
    ends = [min(st + b, target_len if st < target_len else seq) for st in starts]
    return [range(st, en) for st, en in zip(starts, ends, strict=True)]


@pytest.mark.parametrize(("seq", "target_len", "block"), [(64, 32, 8), (70, 29, 8), (45, 20, 16)])
def test_dense_equality_when_nothing_is_dropped(seq: int, target_len: int, block: int) -> None:
    q, k, v = _qkv(2, seq, 3, 16)
    out = isa_attention(q, k, v, target_len, block_size=block, context_keep=1, full_fraction=1)
    torch.testing.assert_close(out, _dense(q, k, v), atol=1e-5, rtol=0)


@pytest.mark.parametrize(("seq", "target_len", "masked"), [(64, 32, False), (70, 29, True), (64, 30, True)])
def test_exact_half_is_unmasked_only_for_whole_blocks(
    seq: int, target_len: int, masked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whole blocks leave no padding, so the exact half passes no mask (SDPA's flash backend takes none)."""
    masks: list[object] = []
    real = F.scaled_dot_product_attention

    def spy(*args: object, attn_mask: torch.Tensor | None = None, **kwargs: object) -> torch.Tensor:
        masks.append(attn_mask)
        return real(*args, attn_mask=attn_mask, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    q, k, v = _qkv(1, seq, 2, 8)
    isa_attention(q, k, v, target_len, block_size=8)  # outputs: test_dense_equality_when_nothing_is_dropped
    assert len(masks) == 1
    assert (masks[0] is not None) is masked


def test_taylor_path_exact_for_keys_constant_in_blocks() -> None:
    seq, target_len, block = 70, 29, 8
    q, k, v = _qkv(1, seq, 2, 8, seed=1)
    for r in _block_ranges(seq, target_len, block):  # every key equals its block's first key
        k[:, r.start : r.stop] = k[:, r.start : r.start + 1]
    out = isa_attention(q, k, v, target_len, block_size=block, context_keep=1, routing="taylor")
    torch.testing.assert_close(out, _dense(q, k, v), atol=1e-5, rtol=0)
    # the same keys perturbed: the Taylor path is no longer exact (the test above could fail)
    k2 = k + 0.5 * torch.randn_like(k)
    out2 = isa_attention(q, k2, v, target_len, block_size=block, context_keep=1, routing="taylor")
    assert (out2 - _dense(q, k2, v)).abs().max() > 1e-3


def _loop_reference(q, k, v, target_len, block, info, gate_logits=None):  # type: ignore[no-untyped-def]
    """Direct fp64 loop: exact softmax over kept tokens, or sum_B c_B exp(q.k_B) v_B / sum_B c_B exp(q.k_B)."""
    bsz, seq, heads, d = q.shape
    scale = 1.0 / math.sqrt(d)
    blocks = _block_ranges(seq, target_len, block)
    nt = len(range(0, target_len, block))
    out = torch.zeros(bsz, seq, heads, d, dtype=torch.float64)
    for bi in range(bsz):
        for h in range(heads):
            kept = list(range(nt)) + [nt + int(c) for c in info["kept_context_blocks"][bi, h]]
            kmean = {j: k[bi, list(blocks[j]), h].mean(0) for j in range(len(blocks))}
            vmean = {j: v[bi, list(blocks[j]), h].mean(0) for j in range(len(blocks))}
            for i, rq in enumerate(blocks):
                exact = kept if info["full_blocks"][bi, h, i] else [int(j) for j in info["exact_blocks"][bi, h, i]]
                for t in rq:
                    num, den = torch.zeros(d, dtype=torch.float64), torch.zeros((), dtype=torch.float64)
                    for j in kept:
                        if j in exact:
                            for u in blocks[j]:
                                w = torch.exp(q[bi, t, h] @ k[bi, u, h] * scale)
                                num, den = num + w * v[bi, u, h], den + w
                        else:
                            w = len(blocks[j]) * torch.exp(q[bi, t, h] @ kmean[j] * scale)
                            num, den = num + w * vmean[j], den + w
                    out[bi, t, h] = num / den
            if gate_logits is not None:
                qm = torch.stack([q[bi, list(r), h].mean(0) for r in blocks])
                km, vm = torch.stack(list(kmean.values())), torch.stack(list(vmean.values()))
                coarse = torch.softmax(qm @ km.T * scale, -1) @ vm
                for i, rq in enumerate(blocks):
                    for t in rq:
                        g = gate_logits[bi, t, h if gate_logits.shape[-1] > 1 else 0]
                        out[bi, t, h] += 0.5 * (torch.sigmoid(g) - 0.5) * coarse[i]
    return out


@pytest.mark.parametrize("with_gate", [False, True])
def test_torch_emulation_equals_direct_fp64_loop(with_gate: bool) -> None:
    seq, target_len, block = 52, 27, 6
    q, k, v = _qkv(2, seq, 2, 4, seed=2, dtype=torch.float64)
    gate = torch.randn(2, seq, 2, dtype=torch.float64) * 3 if with_gate else None
    out, info = isa_attention(
        q, k, v, target_len, block_size=block, context_keep=0.5, full_fraction=0.5, exact_block_fraction=0.3,
        gate_logits=gate, return_info=True,
    )  # fmt: skip
    assert info["full_blocks"].any()
    assert (~info["full_blocks"]).any()
    assert info["exact_blocks"].shape[-1] == 2  # floor(0.3 * (5 + 2)) kept blocks
    torch.testing.assert_close(out, _loop_reference(q, k, v, target_len, block, info, gate), atol=1e-10, rtol=0)


def test_planted_salient_context_blocks_are_preselected() -> None:
    g = torch.Generator().manual_seed(3)
    seq, target_len, block, d = 96, 32, 8, 16
    q = 0.3 * torch.randn(1, seq, 2, d, generator=g)
    k = 0.3 * torch.randn(1, seq, 2, d, generator=g)
    direction = torch.randn(d, generator=g)
    q[:, :target_len] += direction  # target queries share a direction ...
    planted = {1: [2, 5], 0: [6, 7]}  # head -> context blocks whose keys align with it
    for h, blocks in planted.items():
        for c in blocks:
            start = target_len + c * block
            k[:, start : start + block, h] += 2 * direction
    _, info = isa_attention(q, k, k, target_len, block_size=block, context_keep=0.25, return_info=True)
    for h, blocks in planted.items():
        assert info["kept_context_blocks"][0, h].tolist() == blocks


def test_sharpness_routing_sends_sharp_blocks_to_exact_attention() -> None:
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(1, 64, 1, 8, generator=g) for _ in range(3))
    q[:, 8:16] *= 8.0  # a high-norm query block has peaked pooled attention
    _, info = isa_attention(q, k, v, 32, block_size=8, full_fraction=0.125, return_info=True)
    assert info["full_blocks"][0, 0].nonzero().flatten().tolist() == [1]
    assert info["computed_scores"] < info["dense_scores"]


def test_gradcheck_fp64() -> None:
    q, k, v = (t.requires_grad_() for t in _qkv(1, 18, 1, 2, seed=5, dtype=torch.float64))
    gate = torch.randn(1, 18, 1, dtype=torch.float64, requires_grad=True)

    def fn(q_, k_, v_, g_):  # type: ignore[no-untyped-def]
        return isa_attention(q_, k_, v_, 9, block_size=4, context_keep=0.5, gate_logits=g_, exact_block_fraction=0.4)

    assert torch.autograd.gradcheck(fn, (q, k, v, gate), eps=1e-6, atol=1e-5)


def test_module_gate_starts_closed_and_learns() -> None:
    q, k, v = _qkv(1, 40, 2, 8, seed=6)
    x = torch.randn(1, 40, 5)
    attn = ISAAttention(block_size=8, gate_dim=5, gate_heads=2)
    plain = isa_attention(q, k, v, 24, block_size=8)
    torch.testing.assert_close(attn(q, k, v, 24, x=x), plain)
    attn(q, k, v, 24, x=x).sum().backward()
    assert attn.gate is not None
    assert attn.gate.weight.grad is not None
    assert attn.gate.weight.grad.abs().sum() > 0
    with torch.no_grad():
        attn.gate.bias.fill_(1e3)  # saturated gate: alpha -> 0.25 exactly at the bound
    gated = attn(q, k, v, 24, x=x)
    assert (gated - plain).abs().max() > 0


def test_random_routing_changes_the_exact_set_not_the_count() -> None:
    q, k, v = _qkv(1, 128, 2, 8, seed=7)
    _, a = isa_attention(q, k, v, 64, block_size=8, return_info=True)
    _, b = isa_attention(q, k, v, 64, block_size=8, routing="random", generator=torch.Generator().manual_seed(0),
                         return_info=True)  # fmt: skip
    assert torch.equal(a["full_blocks"].sum(-1), b["full_blocks"].sum(-1))
    assert not torch.equal(a["full_blocks"], b["full_blocks"])


_q, _k, _v = _qkv(1, 20, 2, 4)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"target_len": 20}, ValueError, "target_len"),
        ({"target_len": 0}, ValueError, "target_len"),
        ({"target_len": 5.0}, ValueError, "target_len"),
        ({"context_keep": 0.0}, ValueError, "context_keep"),
        ({"full_fraction": 1.5}, ValueError, "full_fraction"),
        ({"exact_block_fraction": -0.1}, ValueError, "exact_block_fraction"),
        ({"sharpness_fraction": "a"}, ValueError, "sharpness_fraction"),
        ({"block_size": 0}, ValueError, "block_size"),
        ({"block_size": 2.5}, ValueError, "block_size"),
        ({"k": _k[:, :10]}, ValueError, "same shape"),
        ({"v": _v.double()}, TypeError, "dtype"),
        ({"q": _q[0]}, ValueError, "q must have shape"),
        ({"q": _q.long()}, TypeError, "floating"),
        ({"routing": "greedy"}, ValueError, "routing"),
        ({"backend": "cuda"}, ValueError, "backend"),
        ({"gate_logits": torch.zeros(1, 20, 3)}, ValueError, "gate_logits"),
        ({"scale": -1.0}, ValueError, "scale"),
    ],
)
def test_bad_inputs(kwargs: dict, error: type, match: str) -> None:
    args = {"q": _q, "k": _k, "v": _v, "target_len": 8, "block_size": 4} | kwargs
    with pytest.raises(error, match=match):
        isa_attention(**args)


def test_module_bad_inputs() -> None:
    with pytest.raises(ValueError, match="full_fraction"):
        ISAAttention(full_fraction=0)
    with pytest.raises(ValueError, match="gate_dim"):
        ISAAttention(gate_dim=0)
    with pytest.raises(ValueError, match="x "):
        ISAAttention(block_size=4, gate_dim=3)(_q, _k, _v, 8)


def test_topk_block_attention_dense_when_all_kept_and_skips_otherwise() -> None:
    q, k, v = _qkv(2, 37, 2, 8, seed=8)
    torch.testing.assert_close(topk_block_attention(q, k, v, 5, block_size=8), _dense(q, k, v), atol=1e-5, rtol=0)
    # one block per query block: each query block sees only the tokens of its top pooled key block
    out = topk_block_attention(q, k, v, 1, block_size=8)
    scale = 8**-0.5
    for h in range(2):
        qm = torch.stack([q[0, i : i + 8, h].mean(0) for i in range(0, 37, 8)])
        km = torch.stack([k[0, i : i + 8, h].mean(0) for i in range(0, 37, 8)])
        best = (qm @ km.T).argmax(-1)
        for i, j in enumerate(best.tolist()):
            rows, cols = slice(8 * i, 8 * i + 8), slice(8 * j, 8 * j + 8)
            p = torch.softmax(q[0, rows, h] @ k[0, cols, h].T * scale, -1)
            torch.testing.assert_close(out[0, rows, h], p @ v[0, cols, h], atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="blocks_per_query"):
        topk_block_attention(q, k, v, 6, block_size=8)


def test_triton_backend_without_triton_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "triton", None)  # makes `import triton` fail as if it were absent
    with pytest.raises(ImportError, match="kernels"):
        isa_attention(_q, _k, _v, 8, block_size=16, backend="triton")
