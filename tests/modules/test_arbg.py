"""ArBG: exact normalisation, sampler/scorer agreement, errors, energies, reweighting, flow baseline."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from lightning_icml26.algorithms.boltzmann_reweighting import signed_volumes
from lightning_icml26.data.boltzmann import (
    BoltzmannReweighter,
    ChiralityFix,
    DoubleWellEnergy,
    LennardJonesEnergy,
    icosahedral_cluster,
    masked_log_softmax,
    minimize_energy,
    reference_samples,
)
from lightning_icml26.modules.arbg import ArBG, FlowBG
from tests._support.skips import requires_module

pytestmark = requires_module("transformers")


@pytest.fixture(scope="module")
def tiny2() -> ArBG:
    torch.manual_seed(0)
    model = ArBG(
        n_atoms=1, dim=2, num_bins=6, coord_range=(-1.5, 1.5), scale=2.0, hidden_size=16, num_layers=2, num_heads=2
    ).eval()
    with torch.no_grad():  # make the logits far from uniform
        model.head.weight.mul_(20.0)
    return model


@pytest.fixture(scope="module")
def tiny3d() -> ArBG:
    torch.manual_seed(1)
    return ArBG(
        n_atoms=3, dim=3, atom_types=[0, 1, 1], num_bins=32, scale=1.0, hidden_size=16, num_layers=2, num_heads=2
    ).eval()


SETTINGS = [(1.0, None, None), (0.5, None, None), (1.7, None, None), (0.8, 3, None), (1.2, None, 0.6), (0.9, 4, 0.7)]


@pytest.mark.parametrize(("temperature", "top_k", "top_p"), SETTINGS)
def test_enumerated_probabilities_sum_to_one(
    tiny2: ArBG, temperature: float, top_k: int | None, top_p: float | None
) -> None:
    tokens = torch.tensor(list(itertools.product(range(6), repeat=2)))
    with torch.no_grad():
        probs = tiny2.token_log_prob(tokens, temperature, top_k, top_p).double().exp()
    assert float(probs.sum()) == pytest.approx(1.0, abs=1e-5)
    # continuous density integrates to one as well: each sequence's cell has volume (delta * scale)^2
    x = tiny2.tokenizer.decode(tokens, dequantize=False).reshape(-1, 1, 2)
    density = tiny2.log_prob(x, temperature, top_k, top_p).exp()
    cell = (tiny2.tokenizer.bin_width * 2.0) ** 2
    assert float((density * cell).sum()) == pytest.approx(1.0, abs=1e-5)
    if top_k is not None or top_p is not None:
        assert int((probs == 0).sum()) > 0  # the masks did remove sequences


def test_sample_frequencies_match_enumerated_probabilities(tiny2: ArBG) -> None:
    tokens = torch.tensor(list(itertools.product(range(6), repeat=2)))
    with torch.no_grad():
        probs = tiny2.token_log_prob(tokens, 0.8, None, 0.9).double().exp()
    drawn, _ = tiny2.sample_tokens(20000, temperature=0.8, top_p=0.9, generator=torch.Generator().manual_seed(0))
    freq = torch.bincount(drawn[:, 0] * 6 + drawn[:, 1], minlength=36).double() / 20000
    assert float((freq - probs).abs().sum() / 2) < 0.03  # total variation
    assert bool((freq[probs == 0] == 0).all())


@pytest.mark.parametrize(("temperature", "top_k", "top_p"), [(1.0, None, None), (0.7, 5, None), (1.3, None, 0.8)])
def test_log_prob_of_samples_matches_sampler(
    tiny3d: ArBG, temperature: float, top_k: int | None, top_p: float | None
) -> None:
    x, log_q = tiny3d.sample_with_log_prob(64, temperature, top_k, top_p, batch_size=40)
    assert x.shape == (64, 3, 3)
    torch.testing.assert_close(tiny3d.log_prob(x, temperature, top_k, top_p), log_q, atol=2e-4, rtol=0)
    # a different temperature gives different scores (the check is sensitive)
    assert float((tiny3d.log_prob(x, temperature * 1.5, top_k, top_p) - log_q).abs().max()) > 1e-2


def test_masked_log_softmax_against_dense_reference() -> None:
    logits = torch.randn(50, 17, generator=torch.Generator().manual_seed(3))
    out = masked_log_softmax(logits, temperature=0.7, top_k=None, top_p=0.5)
    for row, lp in zip(logits.numpy(), out.numpy(), strict=False):
        p = np.exp(row / 0.7 - np.logaddexp.reduce(row / 0.7))
        order = np.argsort(-p)
        keep = order[: int(np.searchsorted(np.cumsum(p[order]), 0.5) + 1)]
        ref = np.full(17, -np.inf)
        ref[keep] = np.log(p[keep] / p[keep].sum())
        np.testing.assert_allclose(lp, ref, atol=1e-5)


def test_errors(tiny3d: ArBG) -> None:
    far = torch.zeros(4, 3, 3, dtype=torch.float64)
    far[1, 0, 0], far[2, 2, 1] = 7.0, -9.0
    with pytest.raises(ValueError, match=r"2 coordinates .*2 of 4.*coord_range"):
        tiny3d.log_prob(far)
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="temperature"):
            tiny3d.sample_with_log_prob(2, temperature=bad)
        with pytest.raises(ValueError, match="temperature"):
            tiny3d.log_prob(torch.zeros(1, 3, 3), temperature=bad)
    with pytest.raises(ValueError, match="top_k"):
        tiny3d.sample_with_log_prob(2, top_k=0)
    with pytest.raises(ValueError, match="top_p"):
        tiny3d.sample_with_log_prob(2, top_p=1.5)
    rw = BoltzmannReweighter(lambda x: torch.zeros(x.shape[0], 1), clip_quantile=0.0)
    with pytest.raises(ValueError, match=r"shape \(2, 1\); expected \(2,\)"):
        rw.reweight(torch.zeros(2, 3, 3), torch.zeros(2))
    rw = BoltzmannReweighter(lambda x: torch.tensor([0.0, float("nan")]), clip_quantile=0.0)
    with pytest.raises(ValueError, match="1 non-finite energies out of 2"):
        rw.reweight(torch.zeros(2, 3, 3), torch.zeros(2))


@pytest.mark.parametrize(("n", "expected"), [(13, -44.326801), (55, -279.248470)])
def test_lennard_jones_minima(n: int, expected: float) -> None:
    energy = LennardJonesEnergy(n_atoms=n, oscillator=0.0)
    _, e_min = minimize_energy(energy, icosahedral_cluster(n))
    assert e_min == pytest.approx(expected, abs=1e-4)


def test_pair_energies_match_dense_loops() -> None:
    x = torch.randn(5, 4, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * 2
    dw = DoubleWellEnergy(kT=2.0)(x)
    lj = LennardJonesEnergy(4, dim=2, sigma=0.9, epsilon=1.5, oscillator=0.5, kT=0.7)(x)
    for k in range(5):
        e_dw = e_lj = 0.0
        for i in range(4):
            for j in range(i + 1, 4):
                d = float(np.linalg.norm(x[k, i] - x[k, j]))
                e_dw += -4 * (d - 4) ** 2 + 0.9 * (d - 4) ** 4
                e_lj += 4 * 1.5 * ((0.9 / d) ** 12 - (0.9 / d) ** 6)
        e_lj += 0.25 * float(((x[k] - x[k].mean(0)) ** 2).sum())
        assert float(dw[k]) == pytest.approx(e_dw / 2.0)
        assert float(lj[k]) == pytest.approx(e_lj / 0.7)


def test_reweighting_recovers_known_mean() -> None:
    # target exp(-E) = N(1, 0.5^2) in 1-D; proposal N(0, 1); E[x] = 1, E[x^2] = 1.25
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(40000, 1, 1, dtype=torch.float64, generator=gen)
    log_q = -0.5 * x.flatten() ** 2 - 0.5 * math.log(2 * math.pi)
    rw = BoltzmannReweighter(lambda y: (y.flatten() - 1.0) ** 2 / (2 * 0.25), clip_quantile=0.0)
    res = rw.reweight(x, log_q, num_resample=0, generator=gen)
    w = torch.softmax(res.log_weights, 0)
    assert float((w * x.flatten()).sum()) == pytest.approx(1.0, abs=0.03)
    assert float((w * x.flatten() ** 2).sum()) == pytest.approx(1.25, abs=0.05)
    assert res.resampled is not None
    assert float(res.resampled.flatten().mean()) == pytest.approx(1.0, abs=0.03)
    # Kish ESS / N -> 1 / E_q[w^2] with w = p / q:  E_q[w^2] = int p^2 / q = (2 pi)^(-1/2) / s2 * sqrt(pi / b)
    # * exp(c^2 / (4 b) - a) with a = 1 / s2, b = a - 1/2, c = 2 a
    s2 = 0.25
    a = 1 / s2
    b, c = a - 0.5, 2 * a
    m2 = (2 * math.pi) ** -0.5 / s2 * math.sqrt(math.pi / b) * math.exp(c**2 / (4 * b) - a)
    expected_ess = 1 / m2
    assert res.ess == pytest.approx(expected_ess, rel=0.1)
    # clipping drops exactly the top fraction
    clipped = BoltzmannReweighter(rw.energy_fn, clip_quantile=0.01).reweight(x, log_q)
    assert int(torch.isinf(clipped.log_weights).sum()) == pytest.approx(400, abs=2)


def test_chirality_fix_mirrors_and_counts() -> None:
    base = torch.tensor([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=torch.float64)
    fix = ChiralityFix.from_reference(base[None].repeat(3, 1, 1), [(0, 1, 2, 3)])
    x = torch.stack([base, -base, base])
    fixed, keep = fix(x)
    assert keep.all()
    assert bool((signed_volumes(fixed, fix.centres) > 0).all())
    torch.testing.assert_close(fixed[1], base)


def test_flow_baseline_log_prob_matches_samples() -> None:
    flow = FlowBG(n_atoms=4, dim=2, scale=1.5, transforms=2, hidden_features=(16,))
    x, log_q = flow.sample_with_log_prob(32)
    torch.testing.assert_close(flow.log_prob(x), log_q, atol=1e-3, rtol=0)


def test_reference_sampler_cache(tmp_path: Path) -> None:
    a = reference_samples("dw4", 50, cache_dir=tmp_path, burn_in=20, thin=2)
    assert len(list(tmp_path.glob("dw4-*.npz"))) == 1
    b = reference_samples("dw4", 50, cache_dir=tmp_path, burn_in=20, thin=2)
    torch.testing.assert_close(a, b)
    assert float(a.mean(dim=1).abs().max()) < 1e-10  # centre-of-mass free


def test_out_of_range_drop_scores_the_in_range_conformations_only() -> None:
    kw: dict[str, Any] = {"num_bins": 16, "coord_range": (-2.0, 2.0), "scale": 1.0, "hidden_size": 8, "num_layers": 1}
    torch.manual_seed(0)
    raising = ArBG(2, 1, num_heads=2, rotate=False, com_noise=False, **kw)
    dropping = ArBG(2, 1, num_heads=2, rotate=False, com_noise=False, out_of_range="drop", **kw)
    dropping.load_state_dict(raising.state_dict())
    inside = torch.tensor([[[0.5], [-0.5]], [[1.0], [-1.0]]])
    batch = torch.cat([inside, torch.tensor([[[3.0], [-3.0]]])])  # the last one lies beyond +-2 after centring
    assert dropping.in_range(batch).tolist() == [True, True, False]
    with pytest.raises(ValueError, match="outside the binning range"):
        raising.validation_step((batch,), 0)
    # the dropping model's loss on the mixed batch equals the cross-entropy of the in-range part, computed here
    tokens = raising.tokenizer.encode(inside)
    expected = torch.nn.functional.cross_entropy(raising.logits(tokens).reshape(-1, 16), tokens.reshape(-1))
    assert float(dropping._loss((batch,), train=False)) == pytest.approx(float(expected), rel=1e-6)
    with pytest.raises(ValueError, match="every conformation of the batch"):
        dropping._loss((batch[2:],), train=False)
    with pytest.raises(ValueError, match="out_of_range must be 'raise' or 'drop', got 'clip'"):
        ArBG(2, 1, num_heads=2, out_of_range="clip", **kw)


@requires_module("zuko")
def test_flow_baseline_scheduler_and_test_step() -> None:
    flow = FlowBG(n_atoms=2, dim=1, scale=1.0, transforms=1, hidden_features=(8,),
                  lr_scheduler=lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5))  # fmt: skip
    config = flow.configure_optimizers()
    config["optimizer"].step()  # no gradients: a no-op that keeps the optimizer-then-scheduler order
    config["lr_scheduler"]["scheduler"].step()
    assert config["optimizer"].param_groups[0]["lr"] == pytest.approx(2.5e-4)  # half the default 5e-4
    assert isinstance(FlowBG(2, 1, scale=1.0, transforms=1, hidden_features=(8,)).configure_optimizers(),
                      torch.optim.AdamW)  # fmt: skip
    x = torch.randn(6, 2, 1)
    centred = (x - x.mean(1, keepdim=True)).double()
    logged: dict[str, float] = {}
    flow.log = lambda name, value, **_: logged.__setitem__(name, float(value))  # type: ignore[method-assign]
    flow.test_step((x,), 0)
    # per-coordinate NLL in scaled units (scale 1): minus the model's own log density of the centred batch / 2
    assert logged["test_nll"] == pytest.approx(-float(flow.log_prob(centred).mean()) / 2, rel=1e-4)
