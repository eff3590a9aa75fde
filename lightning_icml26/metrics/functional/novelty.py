"""Functional diversity and novelty metrics for self-play questioners: coverage entropy, distinct-n, seen rate.

- Coverage entropy: Shannon entropy of the histogram of problem categories (templates or clusters).
- Distinct-n: number of distinct word n-grams over the total number of word n-grams. n-grams are hashed with
  BLAKE2b (stable across processes) into ``num_buckets`` buckets, so counts add up over batches and ranks;
  the result is exact when no two distinct n-grams share a bucket (with the default ``2**20`` buckets and a
  few thousand n-grams the chance of any collision is a few per cent, and one collision moves the result by
  one over the total).
- Seen rate: the share of questions a seen detector flags as seen.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = ["coverage_entropy", "distinct_n", "seen_rate"]


def _coverage_entropy_update(categories: Tensor, num_categories: int) -> Tensor:
    if not isinstance(categories, Tensor) or categories.is_floating_point() or categories.ndim != 1:
        raise TypeError(f"categories must be a 1-D integer tensor, got {getattr(categories, 'dtype', categories)!r}")
    if categories.numel() and (int(categories.min()) < 0 or int(categories.max()) >= num_categories):
        raise ValueError(f"categories must lie in [0, {num_categories}), got {categories.tolist()}")
    return torch.bincount(categories.long(), minlength=num_categories).to(torch.long)


def _coverage_entropy_compute(counts: Tensor, base: float) -> Tensor:
    total = counts.sum()
    if int(total) == 0:
        raise ValueError("coverage entropy needs at least one problem, got none")
    p = counts.to(torch.float64) / total
    nz = p[p > 0]
    return -(nz * nz.log()).sum() / math.log(base)


def _check_args(num_categories: int, base: float) -> None:
    if isinstance(num_categories, bool) or not isinstance(num_categories, int) or num_categories < 1:
        raise ValueError(f"num_categories must be a positive int, got {num_categories!r}")
    if not base > 1:
        raise ValueError(f"base must be > 1, got {base!r}")


def coverage_entropy(categories: Tensor, num_categories: int, base: float = math.e) -> Tensor:
    """Entropy of the category histogram of a set of problems.

    Args:
        categories: ``(n,)`` integer category of each problem, in ``[0, num_categories)``.
        num_categories: number of categories.
        base: logarithm base (``e``: nats).

    Returns:
        A float64 scalar in ``[0, log(num_categories)]``.

    Example:
        >>> coverage_entropy(torch.tensor([0, 1, 0, 1]), num_categories=4, base=2)
        tensor(1., dtype=torch.float64)
    """
    _check_args(num_categories, base)
    return _coverage_entropy_compute(_coverage_entropy_update(categories, num_categories), base)


def _ngram_bucket(ngram: tuple[str, ...], num_buckets: int) -> int:
    digest = hashlib.blake2b("\x1f".join(ngram).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % num_buckets


def _distinct_n_update(texts: Sequence[str], n: int, num_buckets: int) -> tuple[Tensor, Tensor]:
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError(f"texts must be a sequence of strings, got {type(texts).__name__}")
    counts = torch.zeros(num_buckets, dtype=torch.long)
    total = 0
    for text in texts:
        words = text.split()
        for i in range(len(words) - n + 1):
            counts[_ngram_bucket(tuple(words[i : i + n]), num_buckets)] += 1
            total += 1
    return counts, torch.tensor(total, dtype=torch.long)


def _distinct_n_compute(counts: Tensor, total: Tensor) -> Tensor:
    if int(total) == 0:
        return torch.tensor(0.0, dtype=torch.float64)
    return (counts > 0).sum().to(torch.float64) / total.to(torch.float64)


def _check_n(n: int, num_buckets: int) -> None:
    for name, value in (("n", n), ("num_buckets", num_buckets)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")


def distinct_n(texts: Sequence[str], n: int = 2, num_buckets: int = 2**20) -> Tensor:
    """Distinct word n-grams over all word n-grams of the texts (0 when there is none).

    Args:
        texts: the texts (split on whitespace).
        n: n-gram order.
        num_buckets: hash buckets (see the module docstring).

    Returns:
        A float64 scalar in ``[0, 1]``.

    Example:
        >>> distinct_n(["a b c", "a b d"], n=2)
        tensor(0.7500, dtype=torch.float64)
    """
    _check_n(n, num_buckets)
    return _distinct_n_compute(*_distinct_n_update(texts, n, num_buckets))


def _seen_rate_update(flags: Tensor) -> tuple[Tensor, Tensor]:
    if not isinstance(flags, Tensor) or flags.ndim != 1:
        raise ValueError(f"flags must be a 1-D tensor of 0/1 seen flags, got {getattr(flags, 'shape', flags)!r}")
    f = flags.detach()
    if not bool(((f == 0) | (f == 1)).all()):
        raise ValueError(f"flags must hold only 0/1 (or booleans), got {flags.tolist()}")
    return f.to(torch.long).sum(), torch.tensor(f.numel(), dtype=torch.long, device=f.device)


def seen_rate(flags: Tensor) -> Tensor:
    """Share of questions flagged as seen (0 when there is none).

    Example:
        >>> seen_rate(torch.tensor([True, False, True, True]))
        tensor(0.7500, dtype=torch.float64)
    """
    seen, total = _seen_rate_update(flags)
    return seen.to(torch.float64) / total.clamp_min(1).to(torch.float64)
