"""Functional IRT diagnostics of an LLM judge: prompt consistency, marginal reliability, human alignment.

A judge scores ``N`` samples on ``1..K`` under ``V`` prompt variants (the original prompt and perturbed
copies). The scores are gathered into counts ``[N, V, K]`` and a graded response model is fitted with
:func:`lightning_icml26.algorithms.irt.fit_grm`, treating each variant as an item and each sample as a person.

* Prompt consistency ``C_V``: for every variant ``p``, ``Vbar_p`` is the mean over score levels ``k`` of the
  variance of the abilities ``theta_j`` of the samples scored ``k`` by variant ``p``; ``C_V`` is the standard
  deviation of ``Vbar_p`` across variants divided by their mean. Choices where the description is silent:
  variances are population variances (divide by the count), weighted by the counts; a level with fewer than
  two responses under a variant is skipped; the spread across variants is the population standard deviation.
  Pass rule: ``C_V <= 0.10``.
* Marginal reliability ``rho = Var(theta) / (Var(theta) + mean(theta_sd^2))`` with EAP abilities and their
  posterior SDs. Pass rule: ``rho >= 0.70``.
* ``theta_ratio``: ``theta_range(judge) / theta_range(human)``, ``theta_range`` = median ability of the samples
  in the highest score category used minus that of the lowest. A sample's category is its most frequent
  score over all variants (raters for humans), ties to the lower score.
* ``D_W``: the 1-Wasserstein distance between the judge's and the humans' ability estimates, each from its own
  GRM fit (humans: one item per rater). With a single human rater the GRM's discrimination is not
  identified from the data; the fit then stays at its start value 1 and the human abilities are a monotone
  transform of the rating.

Samples that no variant scored are left out of the fit and the diagnostics.
"""

from __future__ import annotations

import torch
from torch import Tensor

from lightning_icml26.algorithms.irt import fit_grm
from lightning_icml26.metrics.functional.boltzmann import wasserstein_1d

__all__ = [
    "CV_PASS",
    "RHO_PASS",
    "accumulate_counts",
    "fit_grm",
    "grm_reliability",
    "human_alignment",
    "marginal_reliability",
    "modal_category",
    "prompt_consistency",
    "theta_range",
]

CV_PASS = 0.10
"""Largest prompt consistency ``C_V`` that passes."""
RHO_PASS = 0.70
"""Smallest marginal reliability that passes (Nunnally's 0.70)."""


def _check_ids(name: str, ids: Tensor, bound: int) -> Tensor:
    if not isinstance(ids, Tensor) or ids.ndim != 1 or ids.dtype.is_floating_point or ids.dtype == torch.bool:
        raise ValueError(f"{name} must be a 1-D integer tensor, got {getattr(ids, 'dtype', type(ids))}")
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= bound):
        raise ValueError(f"{name} must lie in 0..{bound - 1}, got values in {int(ids.min())}..{int(ids.max())}")
    return ids.long()


def accumulate_counts(
    counts: Tensor, sample_ids: Tensor, variant_ids: Tensor, scores: Tensor, n_categories: int
) -> Tensor:
    """Add one count per ``(sample, variant, score)`` triple to ``counts`` ``[N, V, K]`` (in place) and return it.

    Raises:
        ValueError: for ids out of range, scores outside ``1..K`` or tensors of different lengths.

    Example:
        >>> c = accumulate_counts(torch.zeros(2, 1, 3, dtype=torch.long), torch.tensor([0, 1, 1]),
        ...                       torch.tensor([0, 0, 0]), torch.tensor([3, 1, 1]), 3)
        >>> c[:, 0].tolist()
        [[0, 0, 1], [2, 0, 0]]
    """
    if n_categories < 2:
        raise ValueError(f"n_categories must be >= 2, got {n_categories}")
    s = _check_ids("sample_ids", sample_ids, counts.shape[0])
    v = _check_ids("variant_ids", variant_ids, counts.shape[1])
    if not isinstance(scores, Tensor) or scores.ndim != 1 or scores.dtype.is_floating_point:
        raise ValueError(f"scores must be a 1-D integer tensor, got {getattr(scores, 'dtype', type(scores))}")
    y = scores.long()
    if y.numel() and (int(y.min()) < 1 or int(y.max()) > n_categories):
        bad = int(y[(y < 1) | (y > n_categories)][0])
        raise ValueError(f"scores must lie in 1..{n_categories}, got {bad}")
    if not s.shape == v.shape == y.shape:
        raise ValueError(
            f"sample_ids, variant_ids and scores must have the same length, got {s.numel()}, {v.numel()}, {y.numel()}"
        )
    ones = torch.ones_like(y, dtype=counts.dtype)
    counts.index_put_((s.to(counts.device), v.to(counts.device), (y - 1).to(counts.device)), ones, accumulate=True)
    return counts


def prompt_consistency(theta: Tensor, counts: Tensor) -> Tensor:
    """``C_V``: relative spread across variants of the mean within-score-level ability variance.

    Args:
        theta: abilities ``[N]``.
        counts: ``[N, V, K]`` score counts.

    Example:
        >>> theta = torch.tensor([-1.0, -0.5, 0.5, 1.0])
        >>> one_hot = torch.nn.functional.one_hot(torch.tensor([[0, 0], [0, 1], [1, 0], [1, 1]]), 2)
        >>> prompt_consistency(theta, one_hot)  # variant 0 splits cleanly, variant 1 mixes levels
        tensor(0.8000, dtype=torch.float64)
    """
    c = counts.to(torch.float64)
    t = theta.to(torch.float64)[:, None, None]
    n = c.sum(0)  # [V, K]
    mean = (c * t).sum(0) / n.clamp_min(1)
    var = (c * (t - mean) ** 2).sum(0) / n.clamp_min(1)
    used = n >= 2
    if bool((used.sum(1) == 0).any()):
        bad = (used.sum(1) == 0).nonzero().flatten().tolist()
        raise ValueError(f"variants {bad} have no score level with two or more responses; C_V is undefined")
    vbar = (var * used).sum(1) / used.sum(1)
    return vbar.std(unbiased=False) / vbar.mean()


def marginal_reliability(theta: Tensor, theta_sd: Tensor) -> Tensor:
    """``rho = Var(theta) / (Var(theta) + mean(theta_sd ** 2))`` (population variance).

    Example:
        >>> marginal_reliability(torch.tensor([-1.0, 1.0]), torch.tensor([1.0, 1.0]))
        tensor(0.5000)
    """
    var = theta.var(unbiased=False)
    return var / (var + (theta_sd**2).mean())


def modal_category(counts: Tensor) -> Tensor:
    """Most frequent score ``1..K`` of each sample over all items (ties to the lower), ``0`` if none.

    Example:
        >>> modal_category(torch.tensor([[[0, 2, 1], [0, 0, 1]], [[0, 0, 0], [0, 0, 0]]]))
        tensor([2, 0])
    """
    pooled = counts.sum(1)
    return torch.where(pooled.sum(-1) > 0, pooled.argmax(-1) + 1, torch.zeros_like(pooled[:, 0]))


def theta_range(theta: Tensor, category: Tensor) -> Tensor:
    """Median ability of the highest observed category minus that of the lowest (``category`` in ``1..K``).

    Example:
        >>> theta_range(torch.tensor([-2.0, -1.0, 0.0, 1.0, 3.0]), torch.tensor([1, 1, 2, 3, 3]))
        tensor(3.5000)
    """
    seen = category[category > 0]
    if seen.numel() == 0 or int(seen.max()) == int(seen.min()):
        raise ValueError("theta_range needs at least two different score categories among the samples")
    top = theta[category == seen.max()]
    bottom = theta[category == seen.min()]
    return torch.quantile(top, 0.5) - torch.quantile(bottom, 0.5)


def _active(counts: Tensor) -> Tensor:
    return counts.sum(dim=(1, 2)) > 0


def grm_reliability(
    sample_ids: Tensor, variant_ids: Tensor, scores: Tensor, n_samples: int, n_variants: int, n_categories: int
) -> dict[str, Tensor]:
    """Fit the GRM to ``(sample, variant, score)`` triples and return ``C_V``, ``rho`` and their verdicts.

    Returns:
        ``{"prompt_consistency", "marginal_reliability", "consistent", "reliable"}`` (0-d tensors; the last
        two are booleans for ``C_V <= 0.10`` and ``rho >= 0.70``).

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> quality = torch.arange(40) % 5 + 1
        >>> s = torch.arange(40).repeat(3)
        >>> v = torch.arange(3).repeat_interleave(40)
        >>> y = (quality.repeat(3) + torch.randint(-1, 2, (120,), generator=g)).clamp(1, 5)
        >>> out = grm_reliability(s, v, y, 40, 3, 5)
        >>> sorted(out), bool(out["reliable"])
        (['consistent', 'marginal_reliability', 'prompt_consistency', 'reliable'], True)
    """
    counts = torch.zeros(n_samples, n_variants, n_categories, dtype=torch.long)
    return _reliability_from_counts(accumulate_counts(counts, sample_ids, variant_ids, scores, n_categories))


def _reliability_from_counts(counts: Tensor) -> dict[str, Tensor]:
    c = counts[_active(counts)]
    fit = fit_grm(c)
    cv = prompt_consistency(fit.theta, c)
    rho = marginal_reliability(fit.theta, fit.theta_sd)
    return {
        "prompt_consistency": cv,
        "marginal_reliability": rho,
        "consistent": cv <= CV_PASS,
        "reliable": rho >= RHO_PASS,
    }


def _alignment_from_counts(judge: Tensor, human: Tensor) -> dict[str, Tensor]:
    judge_on, human_on = _active(judge), _active(human)
    if not torch.equal(judge_on, human_on):
        only_j = (judge_on & ~human_on).nonzero().flatten()[:5].tolist()
        only_h = (human_on & ~judge_on).nonzero().flatten()[:5].tolist()
        raise ValueError(
            "judge and human ratings must cover the same samples; "
            f"judged without human rating: {only_j}, human-rated without judge score: {only_h} (first five)"
        )
    j, h = judge[judge_on], human[human_on]
    rated = h.sum(-1, keepdim=True) > 0  # one rating per sample and rater: the most frequent one
    h = torch.nn.functional.one_hot(h.argmax(-1), h.shape[2]) * rated
    fit_j, fit_h = fit_grm(j), fit_grm(h)
    ratio = theta_range(fit_j.theta, modal_category(j)) / theta_range(fit_h.theta, modal_category(h))
    return {"theta_ratio": ratio, "wasserstein": wasserstein_1d(fit_j.theta, fit_h.theta, p=1)}


def human_alignment(
    sample_ids: Tensor,
    variant_ids: Tensor,
    scores: Tensor,
    human_sample_ids: Tensor,
    rater_ids: Tensor,
    human_scores: Tensor,
    n_samples: int,
    n_variants: int,
    n_raters: int,
    n_categories: int,
) -> dict[str, Tensor]:
    """``theta_ratio`` and ``D_W`` between the judge's GRM abilities and the human raters' GRM abilities.

    Judge triples ``(sample, variant, score)`` and human triples ``(sample, rater, score)`` must cover the same
    samples. A rater who rated a sample several times counts once, with the most frequent rating.

    Returns:
        ``{"theta_ratio", "wasserstein"}`` (0-d float64 tensors).

    Raises:
        ValueError: if the judge and the humans rated different samples, or for bad ids or scores.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> q = (torch.arange(50) % 5 + 1).repeat(3)
        >>> s, v = torch.arange(50).repeat(3), torch.arange(3).repeat_interleave(50)
        >>> judge, human = ((q + torch.randint(-1, 2, (150,), generator=g)).clamp(1, 5) for _ in range(2))
        >>> out = human_alignment(s, v, judge, s, v, human, 50, 3, 3, 5)
        >>> sorted(out)
        ['theta_ratio', 'wasserstein']
    """
    judge = torch.zeros(n_samples, n_variants, n_categories, dtype=torch.long)
    human = torch.zeros(n_samples, n_raters, n_categories, dtype=torch.long)
    accumulate_counts(judge, sample_ids, variant_ids, scores, n_categories)
    accumulate_counts(human, human_sample_ids, rater_ids, human_scores, n_categories)
    return _alignment_from_counts(judge, human)
