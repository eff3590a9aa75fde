"""Tests of soft_rank / soft_sort against scipy references, the permutahedron projection and finite differences."""

from __future__ import annotations

import importlib
import itertools

import numpy as np
import pytest
import torch
from scipy.optimize import isotonic_regression
from scipy.stats import rankdata

from lightning_icml26.ops import isotonic_regression_decreasing, soft_rank, soft_sort

# The module (the package re-exports the function under the same name).
soft_rank_module = importlib.import_module("lightning_icml26.ops.soft_rank")


def _distinct(shape: tuple[int, ...], seed: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    n = shape[-1]
    base = torch.randperm(n * 10, generator=gen)[:n].to(dtype) / 10  # gaps of at least 0.1
    rows = [base[torch.randperm(n, generator=gen)] for _ in range(int(np.prod(shape[:-1])))]
    return (torch.stack(rows) + 0.01 * torch.rand(len(rows), n, generator=gen, dtype=dtype)).reshape(shape)


@pytest.mark.parametrize("n", [1, 2, 7, 40])
def test_isotonic_matches_scipy(n: int) -> None:
    y = torch.randn(6, n, dtype=torch.float64, generator=torch.Generator().manual_seed(n))
    y[0] = torch.arange(n, dtype=torch.float64)  # all one pool
    y[1] = -torch.arange(n, dtype=torch.float64)  # already decreasing: n pools
    ours = isotonic_regression_decreasing(y)
    ref = np.stack([isotonic_regression(row.numpy().copy(), increasing=False).x for row in y])
    np.testing.assert_allclose(ours.numpy(), ref, atol=1e-12)


@pytest.mark.parametrize("direction", ["ascending", "descending"])
def test_soft_rank_tends_to_hard_ranks(direction: str) -> None:
    x = _distinct((4, 3, 9), seed=0)
    hard = rankdata(x.numpy() if direction == "ascending" else -x.numpy(), axis=-1)
    for eps in (1e-2, 1e-4):
        np.testing.assert_allclose(soft_rank(x, eps, direction).numpy(), hard, atol=1e-10)
    # A large strength is visibly soft: not the hard ranks any more, and closer to the mean rank.
    soft = soft_rank(x, 100.0, direction).numpy()
    assert np.abs(soft - hard).max() > 1.0
    np.testing.assert_allclose(soft.sum(-1), hard.sum(-1))
    assert np.abs(soft - 5.0).max() < np.abs(hard - 5.0).max()


@pytest.mark.parametrize("direction", ["ascending", "descending"])
def test_soft_sort_tends_to_sort(direction: str) -> None:
    x = _distinct((5, 8), seed=1)
    ref = np.sort(x.numpy(), axis=-1)
    if direction == "descending":
        ref = ref[:, ::-1]
    np.testing.assert_allclose(soft_sort(x, 1e-4, direction).numpy(), ref, atol=1e-10)
    np.testing.assert_allclose(
        soft_sort(x, 1e4, direction).numpy(), np.repeat(ref.mean(-1, keepdims=True), 8, -1), atol=8e-4
    )


def _permutahedron_vertices(w: np.ndarray) -> np.ndarray:
    return np.array(list(itertools.permutations(w)))


@pytest.mark.parametrize("eps", [0.3, 1.0, 3.0])
def test_soft_rank_is_the_projection_onto_the_permutahedron(eps: float) -> None:
    # Independent check of optimality: P is in perm(rho) and <z - P, mu - P> <= 0 for every vertex mu, which
    # (by convexity) is the variational inequality that characterises the Euclidean projection.
    n = 5
    rho = np.arange(n, 0, -1, dtype=np.float64)
    vertices = _permutahedron_vertices(rho)
    x = torch.randn(20, n, dtype=torch.float64, generator=torch.Generator().manual_seed(3)) * 2
    ranks = soft_rank(x, eps).numpy()
    z = x.numpy() / eps
    for p, zz in zip(ranks, z, strict=False):
        srt = np.sort(p)[::-1]
        assert np.isclose(srt.sum(), rho.sum())
        assert np.all(np.cumsum(srt) <= np.cumsum(rho) + 1e-9)  # majorised by rho: inside the permutahedron
        assert np.max((vertices - p) @ (zz - p)) <= 1e-9
    sorted_soft = soft_sort(x, eps).numpy()
    for s, row in zip(sorted_soft, x.numpy(), strict=False):
        verts = _permutahedron_vertices(row)
        target = rho / eps
        desc = s[::-1]  # ascending output: reverse to compare with the descending construction
        assert np.max((verts - desc) @ (target - desc)) <= 1e-9


@pytest.mark.parametrize("direction", ["ascending", "descending"])
def test_gradcheck(direction: str) -> None:
    x = _distinct((3, 6), seed=2).requires_grad_(True)
    for eps in (0.05, 0.5, 5.0):  # different pool structures
        assert torch.autograd.gradcheck(lambda t, e=eps: soft_rank(t, e, direction), (x,))
        assert torch.autograd.gradcheck(lambda t, e=eps: soft_sort(t, e, direction), (x,))
    y = torch.randn(4, 7, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(isotonic_regression_decreasing, (y,))
    assert torch.autograd.gradgradcheck(lambda t: soft_rank(t, 0.5, direction), (x,))


def test_jacobian_is_block_averaging() -> None:
    # Closed form: for one pool of size m covering everything, d soft_rank / d x = (I - 11^T / n) / eps.
    x = torch.tensor([0.1, 0.0, -0.1], dtype=torch.float64)
    eps = 10.0
    jac = torch.autograd.functional.jacobian(lambda t: soft_rank(t, eps), x)
    expected = (torch.eye(3, dtype=torch.float64) - 1.0 / 3) / eps
    torch.testing.assert_close(jac, expected)


def test_batched_equals_rowwise_and_float32() -> None:
    x = torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(4))
    batched = soft_rank(x, 0.7)
    rows = torch.stack([soft_rank(row, 0.7) for row in x.reshape(-1, 5)]).reshape(2, 3, 5)
    torch.testing.assert_close(batched, rows)
    assert batched.dtype == torch.float32
    torch.testing.assert_close(batched.double(), soft_rank(x.double(), 0.7), rtol=1e-5, atol=1e-5)


def test_errors() -> None:
    with pytest.raises(ValueError, match="regularization_strength"):
        soft_rank(torch.zeros(3), 0.0)
    with pytest.raises(ValueError, match="direction"):
        soft_sort(torch.zeros(3), 1.0, direction="up")
    with pytest.raises(TypeError, match="floating"):
        soft_rank(torch.arange(3))
    with pytest.raises(ValueError, match="at least one dimension"):
        soft_rank(torch.tensor(1.0))


@pytest.mark.parametrize("solver", ["compiled", "pav"])
@pytest.mark.parametrize(("rows", "n"), [(1, 8), (3, 129), (3, 600)])
def test_solver_equals_min_max_values_and_gradients(
    solver: str, rows: int, n: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every PAV path (compiled numba, batched torch) gives the O(n^2) formula's values and gradients."""
    torch.manual_seed(n)
    values = torch.randn(rows, n, dtype=torch.float64)
    values[-1] = torch.round(values[-1] * 2)  # ties: pools of equal means
    upstream = torch.randn(rows, n, dtype=torch.float64)

    def ranks_and_grad(chosen: str) -> tuple[torch.Tensor, torch.Tensor]:
        monkeypatch.setattr(soft_rank_module, "ISOTONIC_SOLVER", chosen)
        x = values.clone().requires_grad_(True)
        out = soft_rank(x, regularization_strength=0.3)
        (out * upstream).sum().backward()
        assert x.grad is not None
        return out.detach(), x.grad

    path = ranks_and_grad(solver)
    min_max = ranks_and_grad("min_max")
    torch.testing.assert_close(path[0], min_max[0], rtol=0, atol=1e-9)
    torch.testing.assert_close(path[1], min_max[1], rtol=0, atol=1e-9)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_compiled_soft_rank_without_grad_keeps_dtype_and_batch_shape(
    dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compiled no-grad path keeps dtype and shape and equals the min-max reference (float32 within rounding)."""
    values = torch.randn(2, 3, 50, generator=torch.Generator().manual_seed(11)).to(dtype)
    compiled = soft_rank(values, regularization_strength=0.2, direction="descending")
    assert compiled.dtype == dtype
    assert compiled.shape == values.shape
    monkeypatch.setattr(soft_rank_module, "ISOTONIC_SOLVER", "min_max")
    reference = soft_rank(values.double(), regularization_strength=0.2, direction="descending")
    torch.testing.assert_close(compiled.double(), reference, rtol=1e-5, atol=1e-4)


def test_compiled_soft_rank_double_backward_matches_pav(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled path's backward is differentiable: its second derivatives equal the torch path's (zero a.e.)."""
    values = torch.randn(2, 20, dtype=torch.float64, generator=torch.Generator().manual_seed(12))
    weights = torch.randn(2, 20, dtype=torch.float64, generator=torch.Generator().manual_seed(13))
    direction = torch.randn(2, 20, dtype=torch.float64, generator=torch.Generator().manual_seed(14))

    def hessian_vector(chosen: str) -> tuple[torch.Tensor, torch.Tensor]:
        monkeypatch.setattr(soft_rank_module, "ISOTONIC_SOLVER", chosen)
        x = values.clone().requires_grad_(True)
        (grad,) = torch.autograd.grad((soft_rank(x, 0.5) ** 2 * weights).sum(), x, create_graph=True)
        (second,) = torch.autograd.grad((grad * direction).sum(), x)  # a Hessian-vector product
        return grad.detach(), second

    compiled, pav = hessian_vector("compiled"), hessian_vector("pav")
    torch.testing.assert_close(compiled[0], pav[0], rtol=0, atol=1e-9)
    torch.testing.assert_close(compiled[1], pav[1], rtol=0, atol=1e-9)
    assert compiled[1].abs().sum() > 0  # 2 J^T diag(w) J v: the square makes it non-zero


def test_unknown_solver_and_compiled_on_unsupported_dtype_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(soft_rank_module, "ISOTONIC_SOLVER", "fast")
    with pytest.raises(ValueError, match="ISOTONIC_SOLVER must be one of"):
        soft_rank(torch.zeros(3))
    monkeypatch.setattr(soft_rank_module, "ISOTONIC_SOLVER", "compiled")
    with pytest.raises(ValueError, match="float32/float64 CPU tensor"):
        soft_rank(torch.zeros(3, dtype=torch.bfloat16))


def test_pav_path_gradcheck_and_large_n() -> None:
    x = torch.randn(2, 150, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: soft_rank(v, regularization_strength=0.7), (x,))
    big = _distinct((4000,), seed=5)  # gaps of at least 0.1
    ranks = soft_rank(big, regularization_strength=0.01)  # eps far below the gaps: the hard ranks
    torch.testing.assert_close(ranks, torch.argsort(torch.argsort(big)).double() + 1)


@pytest.mark.parametrize("solver", ["compiled", "pav"])
def test_pav_paths_match_scipy_isotonic_regression(solver: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled and the batched PAV against scipy's sequential PAV, row by row, ties included."""
    monkeypatch.setattr(soft_rank_module, "ISOTONIC_SOLVER", solver)
    gen = torch.Generator().manual_seed(7)
    rows = torch.cat([torch.randn(20, 64, generator=gen), torch.round(torch.randn(20, 64, generator=gen) * 2)])
    rows[0] = torch.arange(64.0)  # fully increasing: one pool
    rows[1] = -torch.arange(64.0)  # already decreasing: no pooling
    got = isotonic_regression_decreasing(rows.double())
    for row, fit in zip(rows.double().numpy(), got, strict=True):
        expected = torch.from_numpy(isotonic_regression(row, increasing=False).x.copy())
        torch.testing.assert_close(fit, expected, rtol=0, atol=1e-12)
