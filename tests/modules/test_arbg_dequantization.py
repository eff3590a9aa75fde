"""ArBG empirical within-bin dequantisation: off = unchanged model, on = data's within-bin distribution."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from lightning_icml26.data.boltzmann import sequence_log_prob
from lightning_icml26.modules.arbg import ArBG, CoordinateTokenizer
from tests._support.skips import requires_module

pytestmark = requires_module("transformers")


def _model(**kw: object) -> ArBG:
    torch.manual_seed(0)
    return ArBG(
        n_atoms=2,
        dim=1,
        num_bins=8,
        coord_range=(-4.0, 4.0),
        scale=1.0,
        hidden_size=16,
        num_layers=1,
        num_heads=2,
        rotate=False,
        com_noise=False,
        **kw,  # type: ignore[arg-type]
    ).eval()


def test_uniform_default_is_the_unchanged_model() -> None:
    model = _model()
    assert "tokenizer.offset_counts" not in model.state_dict()
    x, log_q = model.sample_with_log_prob(64, temperature=0.9, generator=torch.Generator().manual_seed(3))
    # independent re-computation of the uniform pipeline with the same random stream
    gen = torch.Generator().manual_seed(3)
    tokens, log_p = model.sample_tokens(64, temperature=0.9, generator=gen)
    offsets = torch.rand(tokens.shape, generator=gen, dtype=torch.float64)
    x_ref = (-4.0 + (tokens.double() + offsets) * 1.0).reshape(64, 2, 1)
    assert torch.equal(x, x_ref)
    assert torch.equal(log_q, log_p.double() - 2 * np.log(1.0))
    with torch.no_grad():
        dense = sequence_log_prob(model.logits(tokens), tokens, 0.9, None, None).double()
    assert torch.allclose(model.log_prob(x, temperature=0.9), dense, atol=1e-5)


def test_empirical_samples_follow_training_offsets() -> None:
    rng = np.random.default_rng(0)
    n = 20000
    frac = rng.beta(2.0, 5.0, n)
    a = 1.0 + frac  # every |coordinate| in bin [1, 2): tokens 5 (x1 = a) and 2 (x2 = -a)
    data = torch.tensor(np.stack([a, -a], 1)[:, :, None])
    model = _model(dequantization="empirical", offset_resolution=10, offset_prior=0.0)
    model.fit_dequantization(data)
    counts = model.tokenizer.offset_counts
    assert counts.sum() == 2 * n
    assert counts[5].sum() == n
    assert counts[2].sum() == n
    x, log_q = model.sample_with_log_prob(20000, generator=torch.Generator().manual_seed(1))
    pos = x.reshape(-1) + 4.0
    tok, off = pos.floor(), pos - pos.floor()
    edges = np.linspace(0.0, 1.0, 11)
    beta_mass = np.diff(stats.beta.cdf(edges, 2.0, 5.0))
    for bin_id, expected in ((5, beta_mass), (2, beta_mass[::-1]), (0, np.full(10, 0.1))):
        sel = off[tok == bin_id].numpy()
        assert sel.size > 500, (bin_id, sel.size)
        freq = np.histogram(sel, bins=edges)[0] / sel.size
        assert np.abs(freq - expected).max() < 0.035, (bin_id, freq, expected)
    # within a sub-bin the offset is uniform: mean of offsets in bin 5, sub-bin 0 is close to 0.05
    sub0 = off[(tok == 5) & (off < 0.1)]
    assert abs(float(sub0.mean()) - 0.05) < 0.005
    # the sampler's log density is the scorer's: token log-probability + log h(offsets)
    assert torch.allclose(model.log_prob(x), log_q, atol=1e-5)
    with torch.no_grad():
        tokens = model.tokenizer.encode(x)
        token_lp = sequence_log_prob(model.logits(tokens), tokens, 1.0, None, None).double()
    probs = (counts + 0.0) / counts.sum(1, keepdim=True).clamp_min(1)
    probs[counts.sum(1) == 0] = 0.1
    sub = (off * 10).floor().long().reshape(-1, 2)
    h = (probs[tok.long().reshape(-1, 2), sub] * 10).log().sum(1)
    assert torch.allclose(log_q, token_lp + h, atol=1e-5)


def test_offset_density_integrates_to_one_per_bin() -> None:
    tok = CoordinateTokenizer(num_bins=4, coord_range=(0.0, 4.0), dequantization="empirical", offset_resolution=5)
    tok.fit_offsets(torch.tensor([[0.05], [0.07], [0.93], [2.5]]))
    grid = (torch.arange(4000, dtype=torch.float64) + 0.5) / 1000.0  # midpoints over [0, 4)
    density = tok.offset_log_density(grid[:, None]).exp()
    per_bin = density.reshape(4, 1000).mean(1)
    assert torch.allclose(per_bin, torch.ones(4, dtype=torch.float64), atol=1e-9)
    # prior 1 per sub-bin: bin 0 has counts (2, 0, 0, 0, 1) -> probabilities (3, 1, 1, 1, 2) / 8
    assert torch.allclose(density[:200].mean(), torch.tensor(5 * 3 / 8, dtype=torch.float64))


def test_bad_settings_name_the_argument() -> None:
    with pytest.raises(ValueError, match="dequantization"):
        CoordinateTokenizer(dequantization="gauss")
    with pytest.raises(ValueError, match="offset_resolution"):
        CoordinateTokenizer(offset_resolution=0)
    with pytest.raises(ValueError, match="offset_prior"):
        CoordinateTokenizer(offset_prior=-1.0)
    with pytest.raises(ValueError, match="fit_offsets needs"):
        CoordinateTokenizer().fit_offsets(torch.zeros(2, 3))
