"""ARMAttention: Gumbel routing, gated writes, reads against dense references, decode == parallel, errors."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from lightning_icml26.ops.attention.kv_memory.arm import ARMAttention, ARMCache, read_cost_at
from lightning_icml26.ops.attention.kv_memory.arm_memory import gumbel_select, slot_write


def _qkv(t: int, h: int = 2, d: int = 4, b: int = 2, seed: int = 0) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(b, t, h, d, generator=g, dtype=torch.float64) for _ in range(3))


def _layer(**kw: object) -> ARMAttention:
    torch.manual_seed(1)
    cfg: dict[str, object] = {"num_heads": 2, "head_dim": 4, "num_slots": 8, "num_clusters": 4, "window": 3}
    cfg.update(kw)
    attn = ARMAttention(**cfg).double().eval()  # type: ignore[arg-type]
    with torch.no_grad():
        attn.gate_w.normal_(0, 0.5)
        attn.gate_b.normal_(0, 0.5)
    return attn


def test_hard_gumbel_is_one_hot_with_the_soft_relaxations_gradient() -> None:
    logits = torch.randn(5, 7, dtype=torch.float64, requires_grad=True)
    weights = torch.randn(5, 7, dtype=torch.float64)
    torch.manual_seed(3)
    hard = gumbel_select(logits, tau=0.7, training=True)
    assert torch.equal(hard.sum(-1), torch.ones(5, dtype=torch.float64))
    assert set(hard.detach().unique().tolist()) == {0.0, 1.0}
    (grad_hard,) = torch.autograd.grad((hard * weights).sum(), logits)
    torch.manual_seed(3)  # same Gumbel noise, soft relaxation
    soft = F.gumbel_softmax(logits, tau=0.7, hard=False)
    (grad_soft,) = torch.autograd.grad((soft * weights).sum(), logits)
    assert torch.equal(hard.argmax(-1), soft.argmax(-1))
    torch.testing.assert_close(grad_hard, grad_soft)
    assert grad_hard.abs().sum() > 0
    evald = gumbel_select(logits, tau=0.7, training=False)
    assert torch.equal(evald.argmax(-1), logits.argmax(-1))


def test_training_routing_choice_does_not_depend_on_tau() -> None:
    # The hard choice is argmax(logits + Gumbel noise): annealing tau changes the gradient, not how random the
    # training-time routing is (docs/arm.md, diagnosis). Reference: the argmax of logits plus the same noise.
    logits = torch.randn(200, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    picks = []
    for tau in (2.0, 1.0, 0.2, 0.01):
        picks.append(gumbel_select(logits, tau, True, torch.Generator().manual_seed(7)).argmax(-1))
    uniform = torch.rand(logits.shape, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    reference = (logits - torch.log(-torch.log(uniform))).argmax(-1)
    for pick in picks:
        assert torch.equal(pick, reference)
    assert not torch.equal(reference, logits.argmax(-1))  # the noise does move choices


def test_gate_zero_keeps_memory_and_gate_one_overwrites_exactly() -> None:
    g = torch.Generator().manual_seed(0)
    mk, mv = torch.randn(2, 3, 6, 4, generator=g), torch.randn(2, 3, 6, 4, generator=g)
    occ = torch.rand(2, 3, 6, generator=g) > 0.5
    k, v = torch.randn(2, 3, 4, generator=g), torch.randn(2, 3, 4, generator=g)
    z = F.one_hot(torch.randint(0, 6, (2, 3), generator=g), 6).float()
    w = torch.randn(3, 12, generator=g)
    nk, nv, nocc = slot_write(mk, mv, occ, k, v, z, w, torch.full((3,), float("-inf")))
    assert torch.equal(nk, mk)
    assert torch.equal(nv, mv)
    nk, nv, nocc = slot_write(mk, mv, occ, k, v, z, w, torch.full((3,), float("inf")))
    hit = z.bool()
    assert torch.equal(nk[hit], k.reshape(-1, 4))
    assert torch.equal(nv[hit], v.reshape(-1, 4))
    assert torch.equal(nk[~hit], mk[~hit])
    assert torch.equal(nv[~hit], mv[~hit])
    assert torch.equal(nocc, occ | hit)


def test_memory_size_is_constant_as_the_sequence_grows() -> None:
    attn = _layer()
    q, k, v = _qkv(40)
    sizes = {attn.prefill(q[:, :n], k[:, :n], v[:, :n])[1].nbytes() for n in (1, 5, 20, 40)}
    cache = attn.empty_cache(2, dtype=torch.float64)
    for t in range(40):
        _, cache = attn.step(q[:, t : t + 1], k[:, t : t + 1], v[:, t : t + 1], cache)
        sizes.add(cache.nbytes())
    assert sizes == {2 * 2 * 2 * (8 + 3) * 4 * 8}  # K and V, batch, heads, (M + W), d, fp64 bytes
    assert cache.position == 40
    assert bool(cache.occupied.any())


@pytest.mark.parametrize("write_mode", ["on_eviction", "every_token"])
def test_fixed_read_over_all_clusters_is_dense_attention_over_window_and_slots(write_mode: str) -> None:
    attn = _layer(write_mode=write_mode)
    q, k, v = _qkv(12)
    _, cache = attn.prefill(q[:, :11], k[:, :11], v[:, :11])
    out, new = attn.step(q[:, 11:], k[:, 11:], v[:, 11:], cache)
    for b in range(2):
        for h in range(2):
            used = new.occupied[b, h]
            kk = torch.cat([new.win_k[b, h], new.mem_k[b, h][used]])
            vv = torch.cat([new.win_v[b, h], new.mem_v[b, h][used]])
            ref = torch.softmax(kk @ q[b, 11, h] / 2.0, dim=0) @ vv
            torch.testing.assert_close(out[b, 0, h], ref)
    assert attn.last_slots_read == 8


@pytest.mark.parametrize(("write_mode", "window"), [("on_eviction", 0), ("on_eviction", 3), ("every_token", 0)])
def test_fresh_slot_per_token_with_gate_one_is_full_causal_attention(write_mode: str, window: int) -> None:
    class FreshSlots(ARMAttention):
        def route(self, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            z = F.one_hot(torch.arange(k.shape[2]), self.num_slots).to(k.dtype).expand(*k.shape[:2], -1, -1)
            return z, z[..., : self.num_clusters]

    attn = FreshSlots(2, 4, num_slots=16, num_clusters=4, window=window, write_mode=write_mode).double().eval()
    with torch.no_grad():
        attn.gate_w.normal_()
        attn.gate_b.fill_(float("inf"))
    q, k, v = _qkv(16)
    qh, kh, vh = (t.transpose(1, 2) for t in (q, k, v))
    ref = F.scaled_dot_product_attention(qh, kh, vh, is_causal=True).transpose(1, 2)
    torch.testing.assert_close(attn(q, k, v), ref)


@pytest.mark.parametrize(
    "cfg",
    [
        {"read_policy": "fixed", "read_clusters": 2},
        {"read_policy": "fixed", "window": 0},
        {"read_policy": "top_p", "top_p": 0.6, "write_mode": "every_token"},
        {"read_policy": "learned"},
        {"read_policy": "learned", "window": 0, "read_clusters": 3},
        {"slot_balance_weight": 0.5, "noise_scale": 0.3, "balance_weight": 0.1},
        {"usage_penalty": 3.0},
        {"usage_penalty": 3.0, "write_mode": "every_token", "window": 0, "read_policy": "learned"},
    ],
)
def test_incremental_decode_reproduces_the_parallel_forward(cfg: dict[str, object]) -> None:
    attn = _layer(**cfg)
    q, k, v = _qkv(20, seed=4)
    ref = attn(q, k, v)
    cache = attn.empty_cache(2, dtype=torch.float64)
    outs = []
    for t in range(20):
        out, cache = attn.step(q[:, t : t + 1], k[:, t : t + 1], v[:, t : t + 1], cache)
        outs.append(out)
    torch.testing.assert_close(torch.cat(outs, dim=1), ref)
    head, cache = attn.prefill(q[:, :9], k[:, :9], v[:, :9])
    tail = [attn.step(q[:, t : t + 1], k[:, t : t + 1], v[:, t : t + 1], cache := cache)[0] for t in range(9, 10)]
    torch.testing.assert_close(torch.cat([head, *tail], dim=1), ref[:, :10])


def test_top_p_extremes_match_fixed_budgets() -> None:
    q, k, v = _qkv(15, seed=2)
    one = _layer(read_policy="top_p", top_p=1e-9)(q, k, v)
    torch.testing.assert_close(one, _layer(read_policy="fixed", read_clusters=1)(q, k, v))
    full = _layer(read_policy="top_p", top_p=1.0)(q, k, v)
    torch.testing.assert_close(full, _layer(read_policy="fixed")(q, k, v))


def test_training_gradients_reach_router_gate_and_policy() -> None:
    attn = _layer(read_policy="learned", balance_weight=0.1).train()
    q, k, v = (t.requires_grad_() for t in _qkv(12))
    out = attn(q, k, v)
    (out.square().sum() + attn.last_aux_loss).backward()
    for name in ("w_cluster", "w_slot", "gate_w", "gate_b"):
        assert getattr(attn, name).grad.abs().sum() > 0, name
    assert attn.policy is not None
    first = attn.policy[0]
    assert isinstance(first, torch.nn.Linear)
    assert first.weight.grad is not None
    assert first.weight.grad.abs().sum() > 0
    assert 0 < float(attn.last_slots_read) <= 8


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"num_slots": 10, "num_clusters": 4}, "divisible"),
        ({"window": -1}, "window"),
        ({"tau": 0.0}, "tau"),
        ({"read_clusters": 5}, "read_clusters"),
        ({"read_policy": "greedy"}, "read_policy"),
        ({"write_mode": "sometimes"}, "write_mode"),
        ({"top_p": 1.5}, "top_p"),
        ({"slot_balance_weight": -0.1}, "slot_balance_weight"),
        ({"noise_scale": -1.0}, "noise_scale"),
        ({"usage_penalty": -1.0}, "usage_penalty"),
        ({"usage_penalty": float("inf")}, "usage_penalty"),
        ({"initial_full_read": 0.9}, "initial_full_read applies to read_policy='learned'"),
        ({"read_policy": "learned", "initial_full_read": 1.0}, "initial_full_read must be a probability"),
        ({"read_policy": "learned", "initial_full_read": True}, "initial_full_read must be a probability"),
    ],
)
def test_bad_configuration_errors(kw: dict[str, object], match: str) -> None:
    cfg: dict[str, object] = {"num_heads": 2, "head_dim": 4, "num_slots": 8, "num_clusters": 4, "window": 3}
    cfg.update(kw)
    with pytest.raises(ValueError, match=match):
        ARMAttention(**cfg)  # type: ignore[arg-type]


def test_bad_runtime_inputs_error() -> None:
    attn = _layer()
    with pytest.raises(ValueError, match="tau"):
        attn.tau = -1.0
    q, k, v = _qkv(4)
    other = _layer(window=2).empty_cache(2, dtype=torch.float64)
    with pytest.raises(ValueError, match="configuration"):
        attn.step(q[:, :1], k[:, :1], v[:, :1], other)
    with pytest.raises(ValueError, match="configuration"):
        attn.step(q[:, :1], k[:, :1], v[:, :1], "cache")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="one token"):
        attn.step(q, k, v, attn.empty_cache(2, dtype=torch.float64))
    with pytest.raises(ValueError, match="shape"):
        attn(q[..., :3], k, v)
    with pytest.raises(TypeError, match="4-d"):
        attn(q[0], k, v)
    assert isinstance(attn.empty_cache(1), ARMCache)


def test_generator_noise_is_reproducible_and_straight_through() -> None:
    logits = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    weights = torch.randn(4, 6, dtype=torch.float64)
    hard = gumbel_select(logits, 0.5, True, torch.Generator().manual_seed(7))
    again = gumbel_select(logits, 0.5, True, torch.Generator().manual_seed(7))
    assert torch.equal(hard, again)
    assert torch.equal(hard.sum(-1), torch.ones(4, dtype=torch.float64))
    (grad_hard,) = torch.autograd.grad((hard * weights).sum(), logits)
    u = torch.rand(4, 6, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    soft = torch.softmax((logits - torch.log(-torch.log(u))) / 0.5, dim=-1)
    (grad_soft,) = torch.autograd.grad((soft * weights).sum(), logits)
    torch.testing.assert_close(grad_hard, grad_soft)
    assert torch.equal(hard.argmax(-1), soft.argmax(-1))


def test_slot_balance_loss_matches_a_hand_computation() -> None:
    attn = _layer(num_slots=8, num_clusters=2)
    _, k, _ = _qkv(7, seed=5)
    kh = k.transpose(1, 2)  # (B, H, T, d)
    z = attn.route(kh)[0]
    loss = attn.slot_balance_loss(kh, z)
    b, h, t, _ = kh.shape
    per_cluster = 4
    total = 0.0
    for i in range(b):
        for j in range(h):
            counts = [0.0] * 8
            mass = [0.0] * 8
            for s in range(t):
                key = kh[i, j, s].tolist()
                r1 = [sum(key[e] * float(attn.w_cluster[j, e, c].detach()) for e in range(4)) for c in range(2)]
                r2 = [sum(key[e] * float(attn.w_slot[j, e, m].detach()) for e in range(4)) for m in range(8)]
                p1 = [math.exp(x) / sum(math.exp(y) for y in r1) for x in r1]
                for m in range(8):
                    c = m // per_cluster
                    block = r2[c * per_cluster : (c + 1) * per_cluster]
                    mass[m] += p1[c] * math.exp(r2[m]) / sum(math.exp(y) for y in block) / t
                counts[int(z[i, j, s].argmax())] += 1.0 / t
            total += 8 * sum(f * p for f, p in zip(counts, mass, strict=True))
    torch.testing.assert_close(loss, torch.tensor(total / (b * h), dtype=torch.float64))
    # it is what the layer adds to its auxiliary loss, and it trains both routers
    base = _layer(num_slots=8, num_clusters=2)
    q, k, v = _qkv(7, seed=5)
    base(q, k, v)
    weighted = _layer(num_slots=8, num_clusters=2, slot_balance_weight=0.7)
    out = weighted(q, k, v)
    torch.testing.assert_close(out, base(q, k, v))
    torch.testing.assert_close(weighted.last_aux_loss, base.last_aux_loss + 0.7 * loss)
    keys = k.clone().requires_grad_()
    weighted(q, keys, v)
    weighted.last_aux_loss.backward()
    assert keys.grad is None or keys.grad.abs().sum() == 0  # trains the routers, not the keys
    assert weighted.w_cluster.grad is not None
    assert weighted.w_cluster.grad.abs().sum() > 0
    assert weighted.w_slot.grad is not None
    assert weighted.w_slot.grad.abs().sum() > 0
    # uniform use of every slot by every sequence reaches the minimum, 1
    flat = _layer(num_slots=8, num_clusters=2)
    with torch.no_grad():
        flat.w_cluster.zero_()
        flat.w_slot.zero_()
    spread = F.one_hot(torch.arange(16) % 8, 8).to(torch.float64).expand(2, 2, 16, 8)
    torch.testing.assert_close(flat.slot_balance_loss(torch.randn(2, 2, 16, 4, dtype=torch.float64), spread),
                               torch.tensor(1.0, dtype=torch.float64))  # fmt: skip


def test_noise_scale_sets_how_random_the_training_choice_is() -> None:
    logits = torch.randn(300, 6, generator=torch.Generator().manual_seed(2), dtype=torch.float64, requires_grad=True)
    weights = torch.randn(300, 6, dtype=torch.float64)
    u = torch.rand(300, 6, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    gumbel = -torch.log(-torch.log(u))
    for scale in (0.25, 1.0, 3.0):
        hard = gumbel_select(logits, 0.5, True, torch.Generator().manual_seed(9), noise_scale=scale)
        assert torch.equal(hard.argmax(-1), (logits + scale * gumbel).argmax(-1))
        (grad_hard,) = torch.autograd.grad((hard * weights).sum(), logits)
        soft = torch.softmax((logits + scale * gumbel) / 0.5, dim=-1)
        (grad_soft,) = torch.autograd.grad((soft * weights).sum(), logits)
        torch.testing.assert_close(grad_hard, grad_soft)
    torch.manual_seed(0)
    zero = gumbel_select(logits, 0.5, True, noise_scale=0.0)  # argmax in training, relaxation's gradient
    assert torch.equal(zero.argmax(-1), logits.argmax(-1))
    (grad_zero,) = torch.autograd.grad((zero * weights).sum(), logits)
    (grad_ref,) = torch.autograd.grad((torch.softmax(logits / 0.5, dim=-1) * weights).sum(), logits)
    torch.testing.assert_close(grad_zero, grad_ref)
    attn = _layer(noise_scale=0.0).train()
    _, k, _ = _qkv(9, seed=3)
    kh = k.transpose(1, 2)
    train_choice = attn.route(kh)[0].argmax(-1)
    assert torch.equal(train_choice, attn.eval().route(kh)[0].argmax(-1))
    with pytest.raises(ValueError, match="noise_scale"):
        attn.noise_scale = -0.5
    with pytest.raises(TypeError, match="noise_scale"):
        attn.noise_scale = "none"  # type: ignore[assignment]


def test_learned_read_policy_gets_the_straight_through_gradient_of_the_task() -> None:
    # Routing by argmax (noise_scale=0) draws no noise, so the generator's only draw is the policy's Gumbel noise.
    tau = 0.6
    attn = _layer(read_policy="learned", budget_cost=0.0, noise_scale=0.0, tau=tau).train()
    attn.generator = torch.Generator().manual_seed(4)
    assert attn.policy is not None
    captured: list[torch.Tensor] = []

    def keep(module: torch.nn.Module, inputs: object, output: torch.Tensor) -> None:
        output.retain_grad()
        captured.append(output)

    attn.policy.register_forward_hook(keep)
    q, k, v = _qkv(12, seed=6)
    weights = torch.randn(q.shape, generator=torch.Generator().manual_seed(8), dtype=torch.float64)
    out = attn(q, k, v)
    (out * weights).sum().backward()
    (logits,) = captured
    assert logits.grad is not None
    # reference: the read at each budget, by the fixed rule with the same weights (argmax routing = eval mode)
    reads = []
    for budget in attn.budgets:
        fixed = _layer(read_policy="fixed", read_clusters=budget, noise_scale=0.0, tau=tau)
        fixed.load_state_dict(attn.state_dict(), strict=False)
        reads.append(fixed(q, k, v).transpose(1, 2).detach())  # (B, H, T, d) like the logits' leading dims
    u = torch.rand(logits.shape, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    soft = torch.softmax((logits.detach() - torch.log(-torch.log(u))) / tau, dim=-1)
    chosen = soft.argmax(-1)
    expected = torch.stack(reads, dim=-2).gather(-2, chosen[..., None, None].expand(*chosen.shape, 1, 4))[..., 0, :]
    torch.testing.assert_close(out.transpose(1, 2), expected)  # the forward is the chosen budget's read
    # d loss / d logit_j = soft_j (a_j - sum_i soft_i a_i) / tau with a_i = <dL/d out, read at budget i>
    a = torch.stack([(r * weights.transpose(1, 2)).sum(-1) for r in reads], dim=-1)
    ref = soft * (a - (soft * a).sum(-1, keepdim=True)) / tau
    torch.testing.assert_close(logits.grad, ref)
    assert ref.abs().sum() > 0
    # and it reaches the policy MLP's first layer (the task gradient alone: the read cost is 0 here)
    first = attn.policy[0]
    assert isinstance(first, torch.nn.Linear)
    assert first.weight.grad is not None
    assert first.weight.grad.abs().sum() > 0


def test_frozen_read_policy_reads_the_same_and_gets_an_exact_zero_gradient() -> None:
    q, k, v = (t.requires_grad_() for t in _qkv(12, seed=5))
    runs = {}
    for trainable in (True, False):
        attn = _layer(read_policy="learned", budget_cost=0.3, noise_scale=0.0).train()
        attn.generator = torch.Generator().manual_seed(2)  # the same policy draws in both runs
        attn.train_read_policy = trainable
        out = attn(q, k, v)
        (out.square().sum() + attn.last_aux_loss).backward()
        assert attn.policy is not None
        grads = [p.grad for p in attn.policy.parameters() if p.grad is not None]
        assert len(grads) == 4  # still in the graph: DDP reduces every parameter
        runs[trainable] = (out.detach(), float(attn.last_aux_loss.detach()), grads, attn.w_slot.grad)
        q.grad = k.grad = v.grad = None
    out_on, cost_on, grads_on, slot_on = runs[True]
    out_off, cost_off, grads_off, slot_off = runs[False]
    torch.testing.assert_close(out_off, out_on)  # the same choices select the same read
    assert cost_off == pytest.approx(cost_on)
    assert all(float(g.abs().sum()) == 0.0 for g in grads_off)
    assert sum(float(g.abs().sum()) for g in grads_on) > 0.0
    assert slot_off is not None
    assert slot_off.abs().sum() > 0  # the rest of the layer still trains


def test_inactive_read_policy_is_the_fixed_read_with_an_exact_zero_gradient() -> None:
    """``policy_active = False``: the fixed read of the same weights, bit for bit, forward, backward and decode."""
    q, k, v = _qkv(12, seed=6)
    fixed = _layer(noise_scale=0.0).train()
    learned = _layer(read_policy="learned", budget_cost=0.3, noise_scale=0.0).train()
    missing, unexpected = learned.load_state_dict(fixed.state_dict(), strict=False)
    assert not unexpected
    assert all(name.startswith("policy.") for name in missing)
    learned.policy_active = False
    outs, grads = [], []
    for attn in (fixed, learned):
        qq, kk, vv = (t.clone().requires_grad_() for t in (q, k, v))
        out = attn(qq, kk, vv)
        (out.square().sum() + attn.last_aux_loss).backward()
        outs.append(out.detach())
        grads.append([t.grad for t in (qq, kk, vv)] + [attn.w_slot.grad, attn.gate_w.grad])
        assert attn.last_slots_read == 8.0  # every cluster, every slot counted
    torch.testing.assert_close(outs[1], outs[0], rtol=0, atol=0)
    for mine, ref in zip(grads[1], grads[0], strict=True):
        torch.testing.assert_close(mine, ref, rtol=0, atol=0)
    assert float(learned.last_aux_loss) == float(fixed.last_aux_loss)  # no read cost while bypassed
    assert learned.policy is not None
    policy_grads = [p.grad for p in learned.policy.parameters()]
    assert all(g is not None and float(g.abs().sum()) == 0.0 for g in policy_grads)  # in the graph, zero
    fixed.eval(), learned.eval()
    ref, cache = fixed.prefill(q[:, :8], k[:, :8], v[:, :8])
    mine, mine_cache = learned.prefill(q[:, :8], k[:, :8], v[:, :8])
    torch.testing.assert_close(mine, ref, rtol=0, atol=0)
    step_ref, _ = fixed.step(q[:, 8:9], k[:, 8:9], v[:, 8:9], cache)
    step_mine, _ = learned.step(q[:, 8:9], k[:, 8:9], v[:, 8:9], mine_cache)
    torch.testing.assert_close(step_mine, step_ref, rtol=0, atol=0)
    learned.policy_active = True
    assert learned(q, k, v).shape == q.shape  # and the policy chooses again


def test_learned_read_cost_is_the_expected_share_of_slots_read() -> None:
    attn = _layer(read_policy="learned", budget_cost=0.3, noise_scale=0.0).train()
    attn.generator = torch.Generator().manual_seed(1)
    assert attn.policy is not None
    captured: list[torch.Tensor] = []
    attn.policy.register_forward_hook(lambda module, inputs, output: captured.append(output))
    q, k, v = _qkv(9, seed=3)
    attn(q, k, v)
    probs = torch.softmax(captured[0], dim=-1)
    sizes = [b * 2 for b in attn.budgets]  # 2 slots per cluster
    hand = 0.3 * sum(probs[..., i] * s for i, s in enumerate(sizes)).mean() / 8
    torch.testing.assert_close(attn.last_aux_loss, hand)


def test_read_cost_warmup_schedule() -> None:
    # hand-written: 0 before 30 % of 200 steps (step 60), linear to 0.08 over the next 20 % (steps 60-100), then flat
    expected = {0: 0.0, 59: 0.0, 60: 0.0, 70: 0.02, 80: 0.04, 99: 0.078, 100: 0.08, 150: 0.08, 199: 0.08}
    for step, cost in expected.items():
        assert read_cost_at(step, 200, 0.08, start=0.3, ramp=0.2) == pytest.approx(cost), step
    assert [read_cost_at(s, 10, 0.5, start=0.5) for s in (4, 5, 9)] == [0.0, 0.5, 0.5]  # step at start, no ramp
    assert all(read_cost_at(s, 10, 0.5) == 0.5 for s in range(10))  # default: the constant cost
    for kw, match in (
        ({"step": -1}, "step"),
        ({"total_steps": 0}, "total_steps"),
        ({"budget_cost": -0.1}, "budget_cost"),
        ({"start": 1.5}, "start"),
        ({"ramp": -0.2}, "ramp"),
    ):
        args: dict[str, object] = {"step": 1, "total_steps": 10, "budget_cost": 0.1} | kw
        with pytest.raises(ValueError, match=match):
            read_cost_at(**args)  # type: ignore[arg-type]


def test_initial_full_read_starts_the_policy_on_the_fixed_read() -> None:
    """Every query starts with probability p on the largest budget; in eval the read is the fixed read's, exactly."""
    learned = _layer(read_policy="learned", initial_full_read=0.9)
    fixed = _layer()
    fixed.load_state_dict({k: v for k, v in learned.state_dict().items() if not k.startswith("policy.")})
    assert learned.policy is not None
    probs = torch.softmax(learned.policy(torch.randn(7, 4 + 2, dtype=torch.float64)), dim=-1)
    n = len(learned.budgets)  # budgets 1, 2, 4 clusters
    expected = torch.tensor([0.1 / (n - 1)] * (n - 1) + [0.9], dtype=torch.float64).expand(7, n)
    torch.testing.assert_close(probs, expected)
    q, k, v = _qkv(11, seed=4)
    torch.testing.assert_close(learned(q, k, v), fixed(q, k, v), rtol=0, atol=0)
    assert float(learned.last_slots_read) == float(fixed.last_slots_read) == 8.0
    learned.train()
    (learned(q, k, v).square().sum() + learned.last_aux_loss).backward()
    assert learned.policy[-1].weight.grad is not None
    assert learned.policy[-1].weight.grad.abs().sum() > 0  # zero weights, but they train


@pytest.mark.parametrize("window", [0, 3])
def test_usage_penalty_routing_in_the_scan_equals_the_key_router_when_negligible(window: int) -> None:
    q, k, v = _qkv(16, seed=5)
    plain = _layer(window=window)
    aware = _layer(window=window, usage_penalty=1e-12)  # same weights (same seed), router run inside the scan
    out, cache = aware.prefill(q, k, v)
    ref, ref_cache = plain.prefill(q, k, v)
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(cache.usage, ref_cache.usage)
    aware.train(), plain.train()
    for attn in (aware, plain):
        attn(q, k, v)
    torch.testing.assert_close(aware.last_aux_loss, plain.last_aux_loss)  # same routing seen by the losses


def test_large_usage_penalty_gives_every_write_a_fresh_slot_and_usage_is_the_merged_gate() -> None:
    attn = _layer(num_slots=8, num_clusters=2, window=0, usage_penalty=1e4)
    _, k, v = _qkv(8, seed=6)
    _, cache = attn.prefill(k, k, v)
    assert bool(cache.occupied.all())  # 8 writes, 8 distinct slots, for every sequence and head
    # each slot was written once, into an empty slot: its key is g k and its usage g, g = sigmoid(w.[k; 0; v] + b)
    kh, vh = k.transpose(1, 2), v.transpose(1, 2)
    feats = torch.cat([kh, torch.zeros_like(kh), vh], dim=-1)
    gates = torch.sigmoid(torch.einsum("bhtf,hf->bht", feats, attn.gate_w) + attn.gate_b[:, None])
    torch.testing.assert_close(cache.usage.sort(-1).values, gates.sort(-1).values)
    stored = cache.mem_k / cache.usage.unsqueeze(-1)
    for b in range(2):
        for h in range(2):
            dist = torch.cdist(stored[b, h], kh[b, h])
            assert bool((dist.min(-1).values < 1e-9).all())  # every slot holds exactly one token's key
    plain = _layer(num_slots=8, num_clusters=2, window=0)
    assert not bool(plain.prefill(k, k, v)[1].occupied.all())  # keys alone collide on this input


def test_usage_after_repeated_writes_is_one_minus_the_product_of_one_minus_gates() -> None:
    attn = _layer(num_slots=2, num_clusters=1, window=0)
    with torch.no_grad():
        attn.w_slot.zero_()
        attn.w_slot[:, 0, 0] = 1.0  # slot 0 when k[0] > 0, else slot 1
    _, k, v = _qkv(10, seed=7)
    cache = attn.empty_cache(2, dtype=torch.float64)
    expected = torch.zeros(2, 2, 2, dtype=torch.float64)
    for t in range(10):
        kt, vt = k[:, t].unsqueeze(1), v[:, t].unsqueeze(1)
        slot = (k[:, t, :, 0] <= 0).long()  # (B, H)
        old = cache.mem_k.gather(2, slot[..., None, None].expand(-1, -1, 1, 4))[:, :, 0]
        feats = torch.cat([k[:, t], old, v[:, t]], dim=-1)
        g = torch.sigmoid(torch.einsum("bhf,hf->bh", feats, attn.gate_w) + attn.gate_b)
        hit = F.one_hot(slot, 2).to(torch.float64)
        expected = 1 - (1 - expected) * (1 - g[..., None] * hit)
        _, cache = attn.step(kt, kt, vt, cache)
    torch.testing.assert_close(cache.usage, expected)
    torch.testing.assert_close(attn.prefill(k, k, v)[1].usage, expected)


def test_usage_penalty_routing_passes_the_straight_through_gradient() -> None:
    attn = _layer(usage_penalty=2.0, slot_balance_weight=0.5).train()
    q, k, v = (t.requires_grad_() for t in _qkv(12))
    out = attn(q, k, v)
    (out.square().sum() + attn.last_aux_loss).backward()
    for name in ("w_cluster", "w_slot", "gate_w", "gate_b"):
        assert getattr(attn, name).grad.abs().sum() > 0, name
    assert k.grad is not None
    assert v.grad is not None


def test_usage_penalty_must_be_a_number() -> None:
    with pytest.raises(TypeError, match="usage_penalty"):
        ARMAttention(2, 4, num_slots=8, num_clusters=4, usage_penalty=True)  # type: ignore[arg-type]


@pytest.mark.parametrize("write_mode", ["on_eviction", "every_token"])
@pytest.mark.parametrize("window", [0, 3])
def test_inference_decode_equals_the_autograd_decode_bit_for_bit(write_mode: str, window: int) -> None:
    # without autograd, the fixed-read step takes its one-slot-row path; with autograd the general path (the
    # reference): outputs and every cache field must be identical, including rows still empty and the window
    torch.manual_seed(0)
    attn = ARMAttention(2, 8, num_slots=8, num_clusters=2, window=window, write_mode=write_mode).eval()
    fast, ref = attn.empty_cache(3), attn.empty_cache(3)
    for _ in range(12):
        q, k, v = torch.randn(3, 3, 1, 2, 8).unbind(0)
        with torch.no_grad():
            out_fast, fast = attn.step(q, k, v, fast)
        with torch.enable_grad():
            out_ref, ref = attn.step(q, k, v, ref)
        assert torch.equal(out_fast, out_ref)
        for field in ("mem_k", "mem_v", "occupied", "usage", "win_k", "win_v", "win_valid"):
            assert torch.equal(getattr(fast, field), getattr(ref, field).detach()), field
    assert fast.position == ref.position == 12
    assert bool(fast.occupied.any())


@pytest.mark.parametrize(("read_policy", "usage_penalty"), [("fixed", 0.0), ("learned", 1.0)])
def test_parallel_form_under_bf16_autocast(read_policy: str, usage_penalty: float) -> None:
    """Under autocast the memory keeps its dtype (the float32 gate used to break the scatter); with one slot the
    routing cannot flip, so the output is the float32 one up to bf16 rounding."""
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 2, 16, 2, 8).unbind(0)
    attn = ARMAttention(
        2, 8, num_slots=8, num_clusters=2, window=4, read_policy=read_policy, usage_penalty=usage_penalty
    )
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = attn(q, k, v)
    out.float().sum().backward()
    assert out.dtype == torch.bfloat16
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in attn.parameters() if p.requires_grad)
    single = ARMAttention(2, 8, num_slots=1, num_clusters=1, window=4)
    reference = single(q, k, v)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = single(q, k, v)
    torch.testing.assert_close(low.float(), reference, rtol=0.02, atol=0.02)
