"""ArBG's causal conditioning and the optional value embedding of the previous bins."""

from __future__ import annotations

import itertools

import pytest
import torch

from lightning_icml26.modules.arbg import ArBG
from tests._support.skips import requires_module

pytestmark = requires_module("transformers")


def _model(value_embedding: bool, seed: int = 0, **kwargs: object) -> ArBG:
    torch.manual_seed(seed)
    settings: dict[str, object] = {"n_atoms": 3, "dim": 2, "num_bins": 8, "coord_range": (-2.0, 2.0), "scale": 1.0}
    settings.update(hidden_size=16, num_layers=2, num_heads=2, value_embedding=value_embedding, **kwargs)
    return ArBG(**settings).eval()  # type: ignore[arg-type]


@pytest.mark.parametrize("value_embedding", [False, True])
def test_logits_depend_on_exactly_the_previous_coordinates(value_embedding: bool) -> None:
    """Changing token i leaves the logits of positions 0..i unchanged and changes those of i+1.. (teacher forcing)."""
    model = _model(value_embedding)
    with torch.no_grad():
        for p in model.parameters():  # weights far from init, so every dependence is visible
            p.normal_(0.0, 0.5)
    base = torch.tensor([[1, 6, 3, 0, 7, 2]])
    with torch.no_grad():
        ref = model.logits(base)
        for i in range(base.shape[1]):
            changed = base.clone()
            changed[0, i] = (changed[0, i] + 3) % 8
            diff = (model.logits(changed) - ref).abs().amax(dim=-1)[0]
            assert float(diff[: i + 1].max()) == 0.0  # no position sees its own or a later token
            if i + 1 < base.shape[1]:
                assert bool((diff[i + 1 :] > 1e-4).all())  # every later position sees it


def test_value_embedding_input_is_the_bin_centre() -> None:
    """Two bins that share their (zeroed) categorical embedding differ only through their centre value."""
    model = _model(True)
    with torch.no_grad():
        model.transformer.embed_tokens.weight.zero_()
        emb = model._embed(torch.tensor([[8, 0, 7, 3, 4, 0]]), 0)  # start token, then bins
        extra = model.axis_embedding(model.axis_ids) + model.atom_embedding(model.atom_ids)
        extra = extra + model.type_embedding(model.type_ids)
        centres = torch.tensor([0.0, -1.75, 1.75, -0.25, 0.25, -1.75])  # lo + (bin + 0.5) * 0.5; start -> 0
        expected = extra + model.value_embedding(centres[:, None])  # type: ignore[misc]
    torch.testing.assert_close(emb[0], expected)


def test_value_embedding_keeps_exact_normalisation_and_sampler_agreement() -> None:
    model = ArBG(1, 2, num_bins=6, coord_range=(-1.5, 1.5), scale=2.0, hidden_size=16, num_layers=2, num_heads=2,
                 value_embedding=True).eval()  # fmt: skip
    with torch.no_grad():
        model.head.weight.mul_(20.0)
        model.value_embedding.weight.mul_(10.0)  # type: ignore[union-attr]
    tokens = torch.tensor(list(itertools.product(range(6), repeat=2)))
    with torch.no_grad():
        probs = model.token_log_prob(tokens, 0.8).double().exp()
    assert float(probs.sum()) == pytest.approx(1.0, abs=1e-5)
    x, log_q = model.sample_with_log_prob(64, 0.9, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(model.log_prob(x, 0.9), log_q, atol=2e-4, rtol=0)  # KV cache vs teacher forcing


def test_default_model_is_unchanged_and_flag_is_checked() -> None:
    plain, with_values = _model(False), _model(True)
    assert plain.value_embedding is None
    extra = set(with_values.state_dict()) - set(plain.state_dict())
    assert extra == {"value_embedding.weight", "value_embedding.bias"}
    assert set(plain.state_dict()) <= set(with_values.state_dict())
    with pytest.raises(TypeError, match="value_embedding must be a bool, got 'yes'"):
        _model("yes")  # type: ignore[arg-type]
