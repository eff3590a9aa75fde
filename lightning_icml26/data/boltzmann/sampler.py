"""One masking routine for sampling and scoring: temperature, top-k and top-p applied identically to both.

Scoring a sample with :func:`masked_log_softmax` under the settings that drew it gives its exact probability
under the sampling distribution, which is what importance weights need.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from lightning_icml26._checks import check_sampling_args  # defined in the bottom layer: callbacks check with it too

__all__ = ["autoregressive_sample", "check_sampling_args", "masked_log_softmax", "sequence_log_prob"]


def masked_log_softmax(
    logits: Tensor, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
) -> Tensor:
    """Log-probabilities of the sampling distribution: ``softmax(logits / T)`` restricted by top-k / top-p.

    Masked entries are ``-inf``; the rest are renormalised. Top-k keeps entries at least as large as the k-th
    largest; top-p keeps the smallest prefix (by decreasing probability at temperature ``T``) whose mass reaches
    ``p``. Both sampling and scoring call this function, so they agree exactly.

    Args:
        logits: ``(..., B)`` unnormalised scores.
        temperature: positive temperature.
        top_k: keep the ``k`` most likely bins (``None``: all).
        top_p: nucleus mass in ``(0, 1]`` (``None``: all).

    Example:
        >>> lp = masked_log_softmax(torch.tensor([0.0, 1.0, 2.0]), top_k=2)
        >>> [round(v, 4) for v in lp.exp().tolist()]
        [0.0, 0.2689, 0.7311]
    """
    check_sampling_args(temperature, top_k, top_p)
    scores = logits.float() / temperature
    if top_k is not None and top_k < scores.shape[-1]:
        kth = torch.topk(scores, top_k, dim=-1).values[..., -1:]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        log_p = torch.log_softmax(scores, dim=-1)
        sorted_lp, order = torch.sort(log_p, dim=-1, descending=True)
        probs = sorted_lp.exp()
        before = torch.cumsum(probs, dim=-1) - probs  # mass strictly before each entry
        drop_sorted = before >= top_p
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        scores = scores.masked_fill(drop, float("-inf"))
    return torch.log_softmax(scores, dim=-1)


def sequence_log_prob(
    logits: Tensor, tokens: Tensor, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
) -> Tensor:
    """Sum over positions of the masked log-probability of ``tokens`` (``(N, d)``) under ``logits`` (``(N, d, B)``).

    Example:
        >>> import math
        >>> logits = torch.zeros(1, 2, 4)
        >>> round(float(sequence_log_prob(logits, torch.tensor([[0, 3]]))), 4) == round(2 * math.log(0.25), 4)
        True
    """
    lp = masked_log_softmax(logits, temperature, top_k, top_p)
    return lp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1).sum(-1)


def autoregressive_sample(
    step: Callable[[Tensor | None, int], Tensor],
    num_samples: int,
    length: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    """Draw token sequences one position at a time and return them with their log-probabilities.

    Args:
        step: ``step(previous_tokens_or_None, position) -> logits (N, B)`` for the next position (the caller keeps
            any KV cache).
        num_samples: ``N``.
        length: sequence length ``d``.
        temperature: sampling temperature (``> 0``).
        top_k: top-k mask.
        top_p: nucleus mask.
        generator: optional torch generator.

    Returns:
        ``(tokens (N, d), log_prob (N,))`` where ``log_prob`` sums the masked log-probabilities of the drawn tokens.

    Example:
        >>> step = lambda prev, j: torch.tensor([[0.0, 5.0]]).expand(3, 2)
        >>> toks, lp = autoregressive_sample(step, 3, 2, top_k=1)
        >>> toks.tolist(), float(lp.abs().max())
        ([[1, 1], [1, 1], [1, 1]], 0.0)
    """
    check_sampling_args(temperature, top_k, top_p)
    tokens: list[Tensor] = []
    total: Tensor | None = None
    previous: Tensor | None = None
    for j in range(length):
        lp = masked_log_softmax(step(previous, j), temperature, top_k, top_p)
        choice = torch.multinomial(lp.exp(), 1, generator=generator).squeeze(-1)
        picked = lp.gather(-1, choice.unsqueeze(-1)).squeeze(-1)
        total = picked if total is None else total + picked
        tokens.append(choice)
        previous = choice
    assert total is not None  # length >= 1 is checked by the caller
    return torch.stack(tokens, dim=1), total
