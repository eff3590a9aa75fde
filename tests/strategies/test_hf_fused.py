"""The transformers (HF Llama, Qwen2) path runs the fused, head-chunked UPipe operator.

On two gloo ranks, one Llama (bias-free) or Qwen2 (q/k/v biases) attention layer routed with ``upipe`` must
(a) equal an independent fp64 reference (explicit softmax attention with complex-number rotary embedding, on the
full sequence in one process) in output and in the gradients of its input and of all projection weights and
biases, and (b) save for backward
exactly what the fused operator keeps (its output, the rotary tables and the per-stage log-sum-exp), while the
Ulysses path of the same layer saves at least the full pre-exchange q/k/v on top of that.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import pytest
import torch
import torch.distributed as dist

from tests._support.distributed import run_on_ranks
from tests._support.skips import requires_module
from tests.ops._attention_support import reference_attention, reference_rope, shard_indices

pytestmark = requires_module("transformers")

B, S, E, H, G = 2, 16, 32, 4, 2
D = E // H
CONFIG = {
    "vocab_size": 64,
    "hidden_size": E,
    "intermediate_size": 64,
    "num_hidden_layers": 1,
    "num_attention_heads": H,
    "num_key_value_heads": G,
    "max_position_embeddings": 64,
    "tie_word_embeddings": False,
}


def _layer_worker(
    rank: int, world: int, x_full: torch.Tensor, dout_full: torch.Tensor, model_type: str
) -> dict[str, Any]:
    from lightning_icml26.modules.causal_lm import build_hf_causal_lm
    from lightning_icml26.ops import route_hf_model
    from lightning_icml26.ops.attention import SavedTensorBytes
    from lightning_icml26.ops.attention.context_parallel.upipe_hf import FusedHFAttentionForward

    model = build_hf_causal_lm(model_type, seed=0, **CONFIG).double()
    attn = model.model.layers[0].self_attn
    gen = torch.Generator().manual_seed(7)
    with torch.no_grad():  # transformers initialises biases to zero: make them count
        for name, p in attn.named_parameters():
            if name.endswith("bias"):
                p.copy_(0.5 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
    idx = shard_indices(S, rank, world, "contiguous")
    results: dict[str, Any] = {"weights": {n: p.detach().clone() for n, p in attn.named_parameters()}}
    for backend in ("upipe", "ulysses"):
        route_hf_model(model, dist.group.WORLD, world, attention=backend)
        fused = isinstance(attn.__dict__.get("forward"), FusedHFAttentionForward)
        x = x_full[:, idx].clone().requires_grad_(True)
        cos, sin = model.model.rotary_emb(x, position_ids=idx[None])
        attn.zero_grad(set_to_none=True)
        with SavedTensorBytes(exclude=[x, *attn.parameters()]) as saved:
            out, _ = attn(hidden_states=x, position_embeddings=(cos, sin), attention_mask=None)
        (out * dout_full[:, idx]).sum().backward()
        grads = {}
        for name, p in attn.named_parameters():
            g = p.grad.clone()
            dist.all_reduce(g)  # each rank holds its tokens' share of the weight gradients
            grads[name] = g
        results[backend] = {"fused": fused, "saved": saved.bytes, "out": out.detach(), "dx": x.grad, "grads": grads}
    return results


def _reference(x: torch.Tensor, w: dict[str, torch.Tensor], dout: torch.Tensor) -> dict[str, Any]:
    x = x.clone().requires_grad_(True)
    params = {n: t.clone().requires_grad_(True) for n, t in w.items()}

    def proj(name: str) -> torch.Tensor:
        y = x @ params[f"{name}.weight"].t()
        return y + params[f"{name}.bias"] if f"{name}.bias" in params else y

    q, k, v = proj("q_proj").view(B, S, H, D), proj("k_proj").view(B, S, G, D), proj("v_proj").view(B, S, G, D)
    pos = torch.arange(S)
    o = reference_attention(reference_rope(q, pos), reference_rope(k, pos), v, causal=True)
    out = o.reshape(B, S, H * D) @ params["o_proj.weight"].t()
    (out * dout).sum().backward()
    return {"out": out.detach(), "dx": x.grad, "grads": {n: p.grad for n, p in params.items()}}


@pytest.mark.slow
@pytest.mark.parametrize("model_type", ["llama", "qwen2"])
def test_hf_layer_runs_the_fused_operator_on_two_ranks(model_type: str) -> None:
    world = 2
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(B, S, E, generator=gen, dtype=torch.float64)
    dout = torch.randn(B, S, E, generator=gen, dtype=torch.float64)
    ranks = run_on_ranks(_layer_worker, world, x, dout, model_type, timeout=120)
    ref = _reference(x, ranks[0]["weights"], dout)
    biases = {"q_proj.bias", "k_proj.bias", "v_proj.bias"}
    assert (biases <= ref["grads"].keys()) == (model_type == "qwen2")
    # transformers computes the rotary tables in fp32 (then casts them), so fp64 agreement is ~1e-7 relative.
    tol = {"atol": 1e-6, "rtol": 1e-6}
    for backend in ("upipe", "ulysses"):
        got_out = torch.cat([r[backend]["out"] for r in ranks], dim=1)
        got_dx = torch.cat([r[backend]["dx"] for r in ranks], dim=1)
        torch.testing.assert_close(got_out, ref["out"], **tol)
        torch.testing.assert_close(got_dx, ref["dx"], **tol)
        for name, g in ref["grads"].items():
            torch.testing.assert_close(ranks[0][backend]["grads"][name], g, **tol)
    s_local, itemsize = S // world, 8
    # The fused operator keeps its output (o_proj's input is a view of it), cos and sin (1, s, D), and one
    # log-sum-exp (B, U/P, S) per stage: H/U stages with U = P.
    stages = H // world
    fused_bytes = itemsize * (B * s_local * H * D + 2 * s_local * D + stages * B * (world // world) * S)
    qkv_bytes = itemsize * B * s_local * (H + 2 * G) * D  # the projected q, k, v before the all-to-all
    for r in ranks:
        assert r["upipe"]["fused"]
        assert not r["ulysses"]["fused"]
        assert r["upipe"]["saved"] == fused_bytes
        assert r["ulysses"]["saved"] >= fused_bytes + qkv_bytes


def test_layers_the_fused_operator_cannot_run_fall_back_with_a_warning() -> None:
    from lightning_icml26.modules.causal_lm import build_hf_causal_lm
    from lightning_icml26.ops import route_hf_model
    from lightning_icml26.ops.attention.context_parallel.upipe_hf import FusedHFAttentionForward, install_fused_forward

    qwen = build_hf_causal_lm("qwen3", seed=0, head_dim=D, **CONFIG)  # per-head q/k norms before the rotary
    with pytest.warns(UserWarning, match="normalises heads"):
        route_hf_model(qwen, None, 1, attention="upipe")
    assert "forward" not in qwen.model.layers[0].self_attn.__dict__
    with pytest.raises(ValueError, match="normalises heads"):
        install_fused_forward(qwen.model.layers[0].self_attn, H, G)
    llama = build_hf_causal_lm("llama", seed=0, **CONFIG)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        route_hf_model(llama, None, 1, attention="upipe")
    layer = llama.model.layers[0].self_attn
    assert isinstance(layer.__dict__["forward"], FusedHFAttentionForward)
    assert llama.config.use_cache is False
    ids = torch.randint(0, 64, (2, 10), generator=torch.Generator().manual_seed(0))
    fused_logits = llama(input_ids=ids).logits
    route_hf_model(llama, None, 1, attention="ulysses")  # re-routing removes the fused forward
    assert "forward" not in layer.__dict__
    torch.testing.assert_close(llama(input_ids=ids).logits, fused_logits, atol=1e-5, rtol=1e-5)
    assert math.isfinite(float(fused_logits.sum()))
