"""ARM decode paths: the no-grad fast step and the in-place step against the general (autograd) step."""

from __future__ import annotations

import io

import pytest
import torch

from lightning_icml26.ops.attention.kv_memory.arm import ARMAttention, ARMCache

FIELDS = ("mem_k", "mem_v", "occupied", "usage", "win_k", "win_v", "win_valid")

CONFIGS = [
    {"window": 5},
    {"window": 5, "write_mode": "every_token"},
    {"window": 0},
    {"window": 1},
    {"window": 5, "read_clusters": 2},
]


def _layer(**kw: object) -> ARMAttention:
    torch.manual_seed(0)
    cfg: dict[str, object] = {"num_heads": 4, "head_dim": 16, "num_slots": 12, "num_clusters": 3} | kw
    attn = ARMAttention(**cfg).double().eval()  # type: ignore[arg-type]
    with torch.no_grad():
        attn.gate_w.normal_(0, 0.3)
        attn.gate_b.normal_(0, 0.5)
    return attn


def _tokens(n: int, batch: int = 3, seed: int = 1) -> torch.Tensor:
    return torch.randn(3, batch, n, 4, 16, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _snapshot(cache: ARMCache) -> dict[str, torch.Tensor]:
    return {name: getattr(cache, name).detach().clone() for name in FIELDS}


@pytest.mark.parametrize("cfg", CONFIGS)
def test_fast_step_equals_the_general_step_and_leaves_its_input_unchanged(cfg: dict[str, object]) -> None:
    attn = _layer(**cfg)
    q, k, v = _tokens(30)
    with torch.no_grad():
        fast = attn.prefill(q[:, :4], k[:, :4], v[:, :4])[1]
    ref = fast
    for t in range(4, 30):
        qt, kt, vt = q[:, t : t + 1], k[:, t : t + 1], v[:, t : t + 1]
        before = _snapshot(fast)
        with torch.no_grad():
            out_fast, new_fast = attn.step(qt, kt, vt, fast)
            slots_fast = attn.last_slots_read.clone()
        for name, value in before.items():  # the step is functional: its input cache is untouched
            assert torch.equal(getattr(fast, name), value), name
        with torch.enable_grad():
            out_ref, ref = attn.step(qt, kt, vt, ref)
        assert torch.equal(out_fast, out_ref.detach())
        assert torch.equal(slots_fast, attn.last_slots_read)
        for name in FIELDS:
            assert torch.equal(getattr(new_fast, name), getattr(ref, name).detach()), name
        fast = new_fast
    assert fast.position == ref.position == 30


@pytest.mark.parametrize("cfg", CONFIGS)
@pytest.mark.parametrize("prefill", [0, 3])
def test_inplace_step_equals_the_general_step(cfg: dict[str, object], prefill: int) -> None:
    # 26 steps cross the end of the window area several times (it moves its rows to the front every W + 1 steps)
    attn = _layer(**cfg)
    q, k, v = _tokens(30, seed=2)
    if prefill:
        with torch.no_grad():
            ref = attn.prefill(q[:, :prefill], k[:, :prefill], v[:, :prefill])[1]
            mine = attn.prefill(q[:, :prefill], k[:, :prefill], v[:, :prefill])[1]
    else:
        ref, mine = attn.empty_cache(3, dtype=torch.float64), attn.empty_cache(3, dtype=torch.float64)
    for t in range(prefill, 30):
        qt, kt, vt = q[:, t : t + 1], k[:, t : t + 1], v[:, t : t + 1]
        with torch.no_grad():
            out, same = attn.step(qt, kt, vt, mine, inplace=True)
            slots = attn.last_slots_read.clone()
        assert same is mine
        with torch.enable_grad():
            out_ref, ref = attn.step(qt, kt, vt, ref)
        torch.testing.assert_close(out, out_ref.detach(), rtol=1e-12, atol=1e-12)  # another softmax order
        torch.testing.assert_close(slots, attn.last_slots_read, rtol=0, atol=0)
        for name in FIELDS:  # the writes are the same arithmetic: equal bit for bit
            assert torch.equal(getattr(mine, name), getattr(ref, name).detach()), name
    assert mine.position == ref.position == 30
    assert mine.nbytes() == ref.nbytes()


def test_inplace_step_survives_a_replaced_field_and_a_checkpoint() -> None:
    attn = _layer(window=3)
    q, k, v = _tokens(16, seed=3)
    ref, mine = attn.empty_cache(3, dtype=torch.float64), attn.empty_cache(3, dtype=torch.float64)

    def both(t: int, cache: ARMCache) -> ARMCache:
        nonlocal ref
        qt, kt, vt = q[:, t : t + 1], k[:, t : t + 1], v[:, t : t + 1]
        with torch.no_grad():
            out, cache = attn.step(qt, kt, vt, cache, inplace=True)
            out_ref, ref = attn.step(qt, kt, vt, ref)
        torch.testing.assert_close(out, out_ref, rtol=1e-12, atol=1e-12)
        for name in FIELDS:
            assert torch.equal(getattr(cache, name), getattr(ref, name)), name
        return cache

    for t in range(6):
        mine = both(t, mine)
    mine.mem_v = mine.mem_v.clone()  # a field set from outside: the next step rebuilds its buffer from the fields
    for t in range(6, 10):
        mine = both(t, mine)
    buffer = io.BytesIO()
    torch.save(mine, buffer)
    buffer.seek(0)
    mine = torch.load(buffer, weights_only=False)  # decode state resumed from a checkpoint
    for t in range(10, 16):
        mine = both(t, mine)


def test_inplace_step_needs_eval_without_autograd_and_the_fixed_read() -> None:
    q, k, v = _tokens(1)
    attn = _layer(window=2)
    cache = attn.empty_cache(3, dtype=torch.float64)
    with pytest.raises(ValueError, match="inplace=True"):
        attn.step(q, k, v, cache, inplace=True)  # autograd is on
    learned = _layer(window=2, read_policy="learned")
    with torch.no_grad(), pytest.raises(ValueError, match="read_policy='learned'"):
        learned.step(q, k, v, cache, inplace=True)
    with torch.no_grad(), pytest.raises(ValueError, match="training=True"):
        attn.train().step(q, k, v, cache, inplace=True)


def test_fast_step_rechecks_a_window_mask_changed_in_place() -> None:
    # the fast step skips the full-window check for the mask it last saw full; an in-place change must be seen
    attn = _layer(window=3)
    q, k, v = _tokens(8, seed=4)
    with torch.no_grad():
        cache = attn.prefill(q[:, :6], k[:, :6], v[:, :6])[1]
        _, cache = attn.step(q[:, 6:7], k[:, 6:7], v[:, 6:7], cache)  # full window: its mask is remembered
        cache.win_valid[1, 0] = False  # sequence 1's oldest window position now holds no token
        out, fast = attn.step(q[:, 7:8], k[:, 7:8], v[:, 7:8], cache)
    out_ref, ref = attn.step(q[:, 7:8], k[:, 7:8], v[:, 7:8], cache)
    assert torch.equal(out, out_ref.detach())
    for name in FIELDS:
        assert torch.equal(getattr(fast, name), getattr(ref, name).detach()), name


def test_decode_after_inference_mode_still_trains() -> None:
    attn = _layer(window=2)
    q, k, v = _tokens(4, seed=5)
    with torch.inference_mode():
        attn.step(q[:, :1], k[:, :1], v[:, :1], attn.empty_cache(3, dtype=torch.float64))
    cache = attn.empty_cache(3, dtype=torch.float64)
    for t in range(4):
        out, cache = attn.step(q[:, t : t + 1], k[:, t : t + 1], v[:, t : t + 1], cache)
    out.sum().backward()
    assert attn.gate_w.grad is not None
