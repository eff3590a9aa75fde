"""Routing transformers attention through the project's attention functions (single process)."""

from __future__ import annotations

import pytest
import torch

from tests._support.skips import requires_module

pytestmark = requires_module("transformers")

CONFIG = {
    "vocab_size": 64,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "tie_word_embeddings": False,
}


@pytest.mark.parametrize("model_type", ["llama", "qwen2"])
@pytest.mark.parametrize("attention", ["dense", "ulysses", "upipe", "ring"])
def test_routed_model_matches_sdpa_in_one_process(model_type: str, attention: str) -> None:
    from lightning_icml26.modules.causal_lm import build_hf_causal_lm
    from lightning_icml26.ops import route_hf_model

    model = build_hf_causal_lm(model_type, seed=0, **CONFIG)
    ids = torch.randint(0, 64, (2, 12))
    reference = model(input_ids=ids).logits
    assert route_hf_model(model, None, 1, attention=attention) == 2
    assert model.config._attn_implementation == f"icml26_{attention}"
    routed = model(input_ids=ids).logits
    torch.testing.assert_close(routed, reference, atol=1e-5, rtol=1e-5)
    routed.sum().backward()  # gradients flow through the routed function


def test_unrouted_module_and_masks_are_refused() -> None:
    from lightning_icml26.modules.causal_lm import build_hf_causal_lm
    from lightning_icml26.ops import register_hf_attention

    model = build_hf_causal_lm("llama", seed=0, **CONFIG)
    register_hf_attention()
    model.set_attn_implementation("icml26_upipe")  # registered but the layers carry no routing
    with pytest.raises(RuntimeError, match="was not routed"):
        model(input_ids=torch.zeros(1, 4, dtype=torch.long))


def test_head_counts_are_checked_before_routing() -> None:
    from lightning_icml26.modules.causal_lm import build_hf_causal_lm
    from lightning_icml26.ops import route_hf_model

    model = build_hf_causal_lm(
        "llama", seed=0, **{**CONFIG, "hidden_size": 24, "num_attention_heads": 6, "num_key_value_heads": 3}
    )
    with pytest.raises(ValueError, match="num_key_value_heads=3 and context_parallel_size=2"):
        route_hf_model(model, None, 2, attention="upipe")
    assert model.config._attn_implementation == "sdpa"  # untouched
    with pytest.raises(ValueError, match="attention='flash'"):
        route_hf_model(model, None, 1, attention="flash")


def test_unknown_model_type() -> None:
    from lightning_icml26.modules.causal_lm import build_hf_causal_lm

    with pytest.raises(ValueError, match="model_type='not_a_model'"):
        build_hf_causal_lm("not_a_model")
