"""Samejima's graded response model (GRM) fitted by marginal maximum likelihood (Bock-Aitkin EM).

Items ``p`` (a judge under one prompt variant, or one human rater) give persons ``j`` (evaluated samples)
ordered scores ``1..K``. With ability ``theta_j``, discrimination ``alpha_p > 0`` and ordered thresholds
``beta_{p,2} < ... < beta_{p,K}``::

    P(Y >= k | theta) = sigmoid(alpha_p (theta - beta_{p,k})),   P(Y >= 1) = 1,   P(Y >= K + 1) = 0
    P(Y = k | theta)  = P(Y >= k) - P(Y >= k + 1)

With ``K = 2`` this is the two-parameter logistic (2PL) model. Abilities are integrated out over a fixed
grid of nodes on ``[-6, 6]`` weighted by the ``N(0, 1)`` density (which fixes the scale); the E-step gives each
sample's posterior over the nodes, the M-step maximises the expected complete-data log-likelihood over all
items at once with L-BFGS in float64, warm-started from the previous parameters; a step that would lower that
objective is rejected, so the marginal likelihood never decreases. Thresholds are kept ordered through
``beta_{p,k+1} = beta_{p,k} + softplus(delta_{p,k})`` and ``alpha_p = exp(a_p)``. Everything is deterministic.

Data are a count tensor ``[samples, items, K]`` (how often sample ``j`` got score ``k`` from item ``p``), so
repeated scores and missing ones (all-zero rows) need no special case.

EM is slow where the likelihood is flat (a judge whose scores barely follow the samples' quality); there
``max_iter`` ends the fit with ``converged=False``. Pure maximum likelihood can also drift to degenerate
solutions in that regime (one variant with a very large discrimination, the others near zero), which the
paper's Bayesian priors would prevent; the EM iterates from a discrimination of 1 and stop early.

A category that an item never uses pushes its threshold towards infinity; the ``max_threshold`` clamp on the
starting values and the finite number of iterations keep the numbers finite.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

__all__ = ["GRMFit", "category_probabilities", "eap_abilities", "fit_grm", "quadrature", "scores_to_counts"]


@dataclass
class GRMFit:
    """Result of :func:`fit_grm`.

    Attributes:
        discrimination: ``alpha`` per item, ``[P]``.
        thresholds: ordered ``beta`` per item, ``[P, K - 1]``.
        theta: EAP ability per sample, ``[N]`` (the prior mean 0 for a sample without responses).
        theta_sd: posterior standard deviation per sample, ``[N]``.
        log_likelihood: final marginal log-likelihood.
        history: marginal log-likelihood after every E-step (non-decreasing).
        converged: whether the relative change fell below ``tol`` before ``max_iter``.
    """

    discrimination: torch.Tensor
    thresholds: torch.Tensor
    theta: torch.Tensor
    theta_sd: torch.Tensor
    log_likelihood: float
    history: list[float] = field(default_factory=list)
    converged: bool = False


def quadrature(n_nodes: int = 61, bound: float = 6.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Equally spaced nodes on ``[-bound, bound]`` with normalised ``N(0, 1)`` density weights (float64).

    Example:
        >>> nodes, weights = quadrature(5, 2.0)
        >>> nodes.tolist(), round(float(weights.sum()), 6)
        ([-2.0, -1.0, 0.0, 1.0, 2.0], 1.0)
    """
    if isinstance(n_nodes, bool) or not isinstance(n_nodes, int) or n_nodes < 3:
        raise ValueError(f"n_nodes must be an int >= 3, got {n_nodes!r}")
    if not bound > 0:
        raise ValueError(f"bound must be > 0, got {bound!r}")
    nodes = torch.linspace(-bound, bound, n_nodes, dtype=torch.float64)
    log_w = -0.5 * nodes**2
    return nodes, torch.softmax(log_w, 0)


def category_probabilities(theta: torch.Tensor, discrimination: torch.Tensor, thresholds: torch.Tensor) -> torch.Tensor:
    """``P(Y_p = k | theta)`` for every item, ability and category.

    Args:
        theta: abilities ``[Q]``.
        discrimination: ``[P]``, positive.
        thresholds: ``[P, K - 1]``, increasing along the last axis.

    Returns:
        ``[P, Q, K]`` probabilities that sum to one over ``K``.

    Example:
        >>> p = category_probabilities(torch.tensor([0.0]), torch.tensor([1.0]), torch.tensor([[0.0]]))
        >>> p
        tensor([[[0.5000, 0.5000]]])
    """
    cum = torch.sigmoid(discrimination[:, None, None] * (theta[None, :, None] - thresholds[:, None, :]))
    ones = torch.ones_like(cum[..., :1])
    upper = torch.cat([ones, cum], dim=-1)
    lower = torch.cat([cum, torch.zeros_like(ones)], dim=-1)
    return upper - lower


def scores_to_counts(scores: torch.Tensor, n_categories: int) -> torch.Tensor:
    """One-hot counts ``[N, P, K]`` from integer scores ``[N, P]`` in ``1..K`` (``0`` marks a missing score).

    Raises:
        ValueError: if ``n_categories < 2`` or a score is outside ``0..K``.

    Example:
        >>> scores_to_counts(torch.tensor([[1, 3], [0, 2]]), 3)[:, :, :].tolist()
        [[[1, 0, 0], [0, 0, 1]], [[0, 0, 0], [0, 1, 0]]]
    """
    if isinstance(n_categories, bool) or not isinstance(n_categories, int) or n_categories < 2:
        raise ValueError(f"n_categories must be an int >= 2, got {n_categories!r}")
    if scores.ndim != 2 or scores.dtype.is_floating_point:
        raise ValueError(f"scores must be an integer tensor [samples, items], got {scores.dtype} {tuple(scores.shape)}")
    if scores.numel() and (int(scores.min()) < 0 or int(scores.max()) > n_categories):
        bad = scores[(scores < 0) | (scores > n_categories)][0].item()
        raise ValueError(f"scores must lie in 1..{n_categories} (0 = missing), got {bad}")
    counts = F.one_hot(scores.long(), n_categories + 1)[..., 1:]
    return counts.to(torch.long)


def eap_abilities(
    counts: torch.Tensor, discrimination: torch.Tensor, thresholds: torch.Tensor, n_nodes: int = 61
) -> tuple[torch.Tensor, torch.Tensor]:
    """EAP abilities and posterior SDs ``([N], [N])`` for given item parameters (e.g. from another estimator).

    Example:
        >>> counts = scores_to_counts(torch.tensor([[1], [2]]), 2)
        >>> theta, sd = eap_abilities(counts, torch.tensor([1.0]), torch.tensor([[0.0]]))
        >>> bool(theta[0] < 0 < theta[1]), bool(torch.allclose(theta[0], -theta[1]))
        (True, True)
    """
    c = _check_counts(counts)
    nodes, weights = quadrature(n_nodes)
    logp = category_probabilities(nodes, discrimination.to(torch.float64), thresholds.to(torch.float64))
    joint = torch.einsum("npk,pqk->nq", c, logp.clamp_min(1e-300).log()) + weights.log()
    post = torch.softmax(joint, dim=1)
    theta = post @ nodes
    return theta, (post @ nodes**2 - theta**2).clamp_min(0).sqrt()


def _unpack(raw_a: torch.Tensor, raw_b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    steps = torch.cat([raw_b[:, :1], F.softplus(raw_b[:, 1:])], dim=1)
    return raw_a.exp(), torch.cumsum(steps, dim=1)


def _log_probs(nodes: torch.Tensor, raw_a: torch.Tensor, raw_b: torch.Tensor) -> torch.Tensor:
    alpha, beta = _unpack(raw_a, raw_b)
    return category_probabilities(nodes, alpha, beta).clamp_min(1e-300).log()


def _check_counts(counts: torch.Tensor) -> torch.Tensor:
    if not isinstance(counts, torch.Tensor) or counts.ndim != 3:
        raise ValueError(f"counts must be a tensor [samples, items, K], got {getattr(counts, 'shape', counts)!r}")
    if counts.shape[2] < 2:
        raise ValueError(f"counts must have K >= 2 score categories, got K = {counts.shape[2]}")
    if counts.shape[0] < 2 or counts.shape[1] < 1:
        raise ValueError(f"counts needs at least 2 samples and 1 item, got shape {tuple(counts.shape)}")
    c = counts.to(torch.float64)
    if bool((c < 0).any()):
        raise ValueError("counts must be non-negative")
    empty = (c.sum(dim=(0, 2)) == 0).nonzero().flatten().tolist()
    if empty:
        raise ValueError(f"every item (variant) needs at least one response; items {empty} have none")
    return c


def _initial(c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Thresholds from the marginal category frequencies, discrimination 1."""
    n_items, k = c.shape[1], c.shape[2]
    freq = c.sum(0) + 0.5  # [P, K], smoothed
    tail = freq.flip(-1).cumsum(-1).flip(-1)[:, 1:] / freq.sum(-1, keepdim=True)  # P(Y >= k), k = 2..K
    beta = -torch.logit(tail.clamp(1e-3, 1 - 1e-3)) * 1.7
    beta = torch.cummax(beta, dim=1).values + torch.arange(k - 1, dtype=torch.float64) * 1e-3
    raw_b = torch.cat([beta[:, :1], torch.log(torch.expm1((beta[:, 1:] - beta[:, :-1]).clamp_min(1e-3)))], 1)
    return torch.zeros(n_items, dtype=torch.float64), raw_b


def _m_step(
    nodes: torch.Tensor, expected: torch.Tensor, raw_a: torch.Tensor, raw_b: torch.Tensor, m_steps: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """L-BFGS on the expected complete-data log-likelihood; the old parameters are kept if it got worse."""

    def objective(ra: torch.Tensor, rb: torch.Tensor) -> torch.Tensor:
        return -(expected * _log_probs(nodes, ra, rb)).sum()

    params = [raw_a.clone().requires_grad_(True), raw_b.clone().requires_grad_(True)]
    optimizer = torch.optim.LBFGS(params, max_iter=m_steps, line_search_fn="strong_wolfe", tolerance_grad=1e-10)

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        loss = objective(*params)
        loss.backward()
        return loss

    with torch.no_grad():
        before = float(objective(raw_a, raw_b))
    optimizer.step(closure)
    with torch.no_grad():
        after = float(objective(params[0], params[1]))
    if after == after and after <= before:  # finite improvement (NaN compares False)
        return params[0].detach(), params[1].detach()
    return raw_a, raw_b


def fit_grm(
    counts: torch.Tensor,
    n_nodes: int = 61,
    max_iter: int = 200,
    tol: float = 1e-7,
    m_steps: int = 8,
) -> GRMFit:
    """Fit the graded response model by Bock-Aitkin EM (see the module docstring).

    Args:
        counts: ``[N, P, K]`` non-negative score counts (:func:`scores_to_counts` builds them from scores).
        n_nodes: quadrature nodes on ``[-6, 6]``.
        max_iter: EM iterations at most.
        tol: stop when the marginal log-likelihood improves by less than ``tol * |loglik|``.
        m_steps: L-BFGS iterations per M-step.

    Returns:
        A :class:`GRMFit` (float64 tensors).

    Raises:
        ValueError: for a wrong shape, ``K < 2``, negative counts or an item with no responses.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> theta = torch.randn(300, generator=g, dtype=torch.float64)
        >>> p = category_probabilities(theta, torch.tensor([2.0, 1.5]), torch.tensor([[-1.0, 1.0]] * 2))
        >>> y = torch.multinomial(p.reshape(-1, 3).float(), 1, generator=g).reshape(2, 300).T + 1
        >>> fit = fit_grm(scores_to_counts(y, 3))
        >>> fit.converged, fit.discrimination.round()
        (True, tensor([2., 2.], dtype=torch.float64))
        >>> bool(torch.corrcoef(torch.stack([fit.theta, theta]))[0, 1] > 0.7)  # two items only
        True
    """
    c = _check_counts(counts)
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive int, got {max_iter!r}")
    nodes, weights = quadrature(n_nodes)
    log_prior = weights.log()
    raw_a, raw_b = _initial(c)
    history: list[float] = []
    converged = False

    def e_step(ra: torch.Tensor, rb: torch.Tensor) -> tuple[torch.Tensor, float]:
        joint = torch.einsum("npk,pqk->nq", c, _log_probs(nodes, ra, rb)) + log_prior
        norm = torch.logsumexp(joint, dim=1)
        return (joint - norm[:, None]).exp(), float(norm.sum())

    post, loglik = e_step(raw_a, raw_b)
    history.append(loglik)
    for _ in range(max_iter):
        expected = torch.einsum("nq,npk->pqk", post, c)  # expected counts per item, node, category
        raw_a, raw_b = _m_step(nodes, expected, raw_a, raw_b, m_steps)
        post, new = e_step(raw_a, raw_b)
        history.append(new)
        if abs(new - loglik) <= tol * max(abs(loglik), 1.0):
            loglik, converged = new, True
            break
        loglik = new
    alpha, beta = _unpack(raw_a, raw_b)
    theta = post @ nodes
    sd = (post @ nodes**2 - theta**2).clamp_min(0).sqrt()
    return GRMFit(alpha, beta, theta, sd, loglik, history, converged)
