"""FedUSD / DM feature-matching losses against numpy, scipy and closed forms; gradients by gradcheck."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import ortho_group, wasserstein_distance

from lightning_icml26.ops import (
    hob_projection_loss,
    hob_w1_loss,
    leading_right_singular_vector,
    mean_matching_loss,
    principal_subspace,
    sorted_w1,
    subspace_projection_distance,
    top_right_singular_vectors,
    var_w1_loss,
)


def _feats(n: int, d: int, seed: int) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    scales = np.linspace(3.0, 0.5, d)
    return torch.from_numpy(rng.normal(size=(n, d)) * scales + rng.normal(size=d))


def _np_hob(x: np.ndarray) -> np.ndarray:
    v = np.linalg.svd(x, full_matrices=False)[2][0]
    return v * np.sign(v[np.argmax(np.abs(v))])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sorted_w1_losses_equal_scipy_wasserstein(seed: int) -> None:
    s, r = _feats(7, 5, seed), _feats(11, 5, seed + 10)
    expected_hob = wasserstein_distance(_np_hob(s.numpy()), _np_hob(r.numpy()))
    expected_var = wasserstein_distance(s.numpy().var(0, ddof=1), r.numpy().var(0, ddof=1))
    assert float(hob_w1_loss(s, r)) == pytest.approx(expected_hob, rel=1e-9, abs=1e-12)
    assert float(var_w1_loss(s, r)) == pytest.approx(expected_var, rel=1e-9)
    assert float(var_w1_loss(s, r, correction=0)) == pytest.approx(
        wasserstein_distance(s.numpy().var(0), r.numpy().var(0)), rel=1e-9
    )


def test_zero_for_identical_and_permutation_invariant() -> None:
    x = _feats(9, 6, 3)
    perm = torch.randperm(9, generator=torch.Generator().manual_seed(0))
    y = _feats(9, 6, 4)
    for loss in (hob_w1_loss, var_w1_loss, hob_projection_loss, mean_matching_loss):
        assert float(loss(x, x)) == pytest.approx(0.0, abs=1e-10)
        assert float(loss(x[perm], y)) == pytest.approx(float(loss(x, y)), rel=1e-9, abs=1e-12)
        assert float(loss(x, y)) > 1e-4


def test_hob_sign_canonical_and_flip_invariant() -> None:
    x, y = _feats(8, 5, 5), _feats(10, 5, 6)
    v = leading_right_singular_vector(x)
    np.testing.assert_allclose(v.numpy(), _np_hob(x.numpy()), atol=1e-10)
    # -x has the same singular vectors up to sign: the canonical sign removes the ambiguity.
    np.testing.assert_allclose(leading_right_singular_vector(-x).numpy(), v.numpy(), atol=1e-10)
    assert float(hob_w1_loss(-x, y)) == pytest.approx(float(hob_w1_loss(x, y)), rel=1e-9)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_projection_loss_closed_form_with_numpy_eigh(k: int) -> None:
    s, r = _feats(12, 5, 7), _feats(15, 5, 8)
    bases = []
    for x in (s.numpy(), r.numpy()):
        w, u = np.linalg.eigh(np.cov(x, rowvar=False))
        bases.append(u[:, np.argsort(w)[::-1][:k]])
    expected = 2 * k - 2 * np.linalg.norm(bases[0].T @ bases[1]) ** 2
    dense = np.linalg.norm(bases[0] @ bases[0].T - bases[1] @ bases[1].T) ** 2
    assert expected == pytest.approx(dense, rel=1e-9, abs=1e-12)
    assert float(hob_projection_loss(s, r, k=k)) == pytest.approx(expected, rel=1e-8, abs=1e-10)


def test_projection_distance_rotation_invariant_inside_subspace() -> None:
    u = torch.linalg.qr(_feats(6, 3, 9).T @ _feats(6, 3, 9))[0]
    basis_r = principal_subspace(_feats(20, 6, 10), 3)
    basis_s = principal_subspace(_feats(20, 6, 11), 3)
    q = torch.from_numpy(ortho_group.rvs(3, random_state=0))
    base = subspace_projection_distance(basis_s, basis_r)
    assert float(subspace_projection_distance(basis_s @ q, basis_r)) == pytest.approx(float(base), rel=1e-9)
    assert float(subspace_projection_distance(basis_s, basis_r @ q.T)) == pytest.approx(float(base), rel=1e-9)
    assert float(subspace_projection_distance(u, u @ q)) == pytest.approx(0.0, abs=1e-10)


def test_batched_equals_loop_and_mean_matching_closed_form() -> None:
    s = torch.stack([_feats(5, 4, i) for i in range(3)])
    r = torch.stack([_feats(9, 4, 20 + i) for i in range(3)])
    for loss in (hob_w1_loss, var_w1_loss, hob_projection_loss, mean_matching_loss):
        batched = loss(s, r)
        assert batched.shape == (3,)
        for i in range(3):
            assert float(batched[i]) == pytest.approx(float(loss(s[i], r[i])), rel=1e-9, abs=1e-12)
    expected = ((s.numpy().mean(1) - r.numpy().mean(1)) ** 2).sum(-1)
    np.testing.assert_allclose(mean_matching_loss(s, r).numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("name", ["hob_w1", "var_w1", "projection", "mean"])
def test_gradcheck_float64(name: str) -> None:
    losses = {
        "hob_w1": hob_w1_loss,
        "var_w1": var_w1_loss,
        "projection": lambda a, b: hob_projection_loss(a, b, k=2),
        "mean": mean_matching_loss,
    }
    s = _feats(6, 4, 30).requires_grad_(True)
    r = _feats(8, 4, 31).requires_grad_(True)
    assert torch.autograd.gradcheck(losses[name], (s, r), eps=1e-6, atol=1e-5)


def test_bad_inputs_name_the_argument() -> None:
    x = torch.randn(4, 3)
    with pytest.raises(ValueError, match="feature dimension"):
        hob_w1_loss(x, torch.randn(4, 2))
    with pytest.raises(ValueError, match="k must be"):
        hob_projection_loss(x, x, k=4)
    with pytest.raises(ValueError, match="synthetic must have shape"):
        var_w1_loss(torch.randn(3), x)
    with pytest.raises(ValueError, match="at least 2 rows"):
        var_w1_loss(torch.randn(1, 3), x)
    with pytest.raises(TypeError, match="real must be a torch.Tensor"):
        mean_matching_loss(x, x.numpy())  # type: ignore[arg-type]


def _torch_top_vectors(x: torch.Tensor, k: int) -> torch.Tensor:
    return torch.linalg.svd(x, full_matrices=False).Vh[..., :k, :].transpose(-1, -2)


@pytest.mark.parametrize(("shape", "k"), [((6, 8), 1), ((9, 4), 1), ((3, 7, 5), 2), ((10, 6), 3)])
def test_top_vectors_gradient_matches_torch_svd_on_generic_features(shape: tuple[int, ...], k: int) -> None:
    """Generic input (distinct singular values): the loss gradients equal torch.linalg.svd's."""
    torch.manual_seed(1)
    x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    target = torch.randn(shape[-1], k, dtype=torch.float64)

    def projector_loss(basis: torch.Tensor) -> torch.Tensor:  # a loss of the subspace (rotation-free)
        return ((basis @ basis.transpose(-1, -2)) @ target).pow(2).sum()

    ours = torch.autograd.grad(projector_loss(top_right_singular_vectors(x, k)), x)[0]
    reference = torch.autograd.grad(projector_loss(_torch_top_vectors(x, k)), x)[0]
    torch.testing.assert_close(ours, reference, rtol=1e-7, atol=1e-9)
    if k == 1:  # the leading vector itself (sign fixed by the first entry): exact, not only its subspace
        weights = torch.randn(shape[-1], dtype=torch.float64)

        def signed(v: torch.Tensor) -> torch.Tensor:
            return (v[..., 0] * torch.sign(v[..., :1, 0]).detach() * weights).sum()

        ours_v = torch.autograd.grad(signed(top_right_singular_vectors(x, 1)), x)[0]
        reference_v = torch.autograd.grad(signed(_torch_top_vectors(x, 1)), x)[0]
        torch.testing.assert_close(ours_v, reference_v, rtol=1e-7, atol=1e-9)


def test_repeated_zero_singular_values_keep_fedusd_gradients_finite() -> None:
    """The FedUSD crash: ReLU features with dead units have repeated zero singular values; torch's SVD backward
    turns them into a NaN gradient (0 * inf), the synthetic images become NaN and the next SVD fails."""
    torch.manual_seed(0)
    dead = torch.relu(torch.randn(6, 8) - 1.0)  # several all-zero columns: equal (zero) singular values
    assert (torch.linalg.svdvals(dead) == 0).sum() >= 2
    real = torch.randn(10, 8)
    plain = dead.clone().requires_grad_()
    torch_loss = sorted_w1(_torch_top_vectors(plain, 1)[..., 0].abs(), real[0].abs())
    torch_loss.backward()
    assert not torch.isfinite(plain.grad).all(), "torch's own SVD gradient is NaN here (the cause of the crash)"
    for loss_fn in (hob_w1_loss, lambda s, r: hob_projection_loss(s, r, 2)):
        x = dead.clone().requires_grad_()
        loss_fn(x, real).backward()
        assert torch.isfinite(x.grad).all()
    # the leading vector's gradient ignores the dead columns' directions: the same as without them
    alive = dead[:, dead.abs().sum(0) > 0].clone().requires_grad_()
    full = dead.clone().requires_grad_()
    weights = torch.randn(8)
    (top_right_singular_vectors(full, 1)[:, 0] @ weights).pow(2).backward()  # sign-free
    (top_right_singular_vectors(alive, 1)[:, 0] @ weights[dead.abs().sum(0) > 0]).pow(2).backward()
    torch.testing.assert_close(full.grad[:, dead.abs().sum(0) > 0], alive.grad, rtol=1e-4, atol=1e-6)
