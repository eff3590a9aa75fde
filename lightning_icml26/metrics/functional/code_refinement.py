"""Functional pass@k, fix rate and mean counterexample size for code-refinement evaluations.

``pass_at_k`` is the unbiased estimator of Chen et al. (2021): with ``n`` sampled programs of which ``c``
pass, the chance that at least one of ``k`` programs drawn without replacement passes is
``1 - C(n - c, k) / C(n, k)``, computed as the stable product ``1 - prod_{i = n - c + 1}^{n} (1 - k / i)``.
"""

from __future__ import annotations

import torch

__all__ = ["counterexample_tokens", "fix_rate", "pass_at_k", "pass_at_k_per_problem"]


def _counts(name: str, value: torch.Tensor | list[int] | int) -> torch.Tensor:
    t = torch.as_tensor(value)
    if t.is_floating_point() and not bool((t == t.round()).all()):
        raise ValueError(f"{name} must hold whole numbers, got {t.tolist()}")
    if bool((t < 0).any()):
        raise ValueError(f"{name} must be non-negative, got {t.tolist()}")
    return t.reshape(-1).to(torch.float64)


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")


def pass_at_k_per_problem(
    num_samples: torch.Tensor | list[int], num_correct: torch.Tensor | list[int], k: int = 1
) -> torch.Tensor:
    """The unbiased pass@k estimate of each problem.

    Args:
        num_samples: ``n`` per problem (each ``>= k``).
        num_correct: ``c`` per problem (``0 <= c <= n``).
        k: programs drawn.

    Returns:
        A float64 tensor of estimates in ``[0, 1]``.

    Raises:
        ValueError: if ``k < 1``, a count is negative or fractional, the shapes differ, ``n < k`` or ``c > n``.

    Example:
        >>> pass_at_k_per_problem([5, 4], [1, 0], k=2)
        tensor([0.4000, 0.0000], dtype=torch.float64)
    """
    _check_k(k)
    n, c = _counts("num_samples", num_samples), _counts("num_correct", num_correct)
    if n.shape != c.shape:
        raise ValueError(f"num_samples and num_correct must have the same length, got {n.numel()} and {c.numel()}")
    if bool((n < k).any()):
        raise ValueError(f"num_samples must be >= k = {k} for every problem, got {n.long().tolist()}")
    if bool((c > n).any()):
        raise ValueError(f"num_correct must be <= num_samples, got {c.long().tolist()} and {n.long().tolist()}")
    out = torch.empty_like(n)
    for j, (nj, cj) in enumerate(zip(n.tolist(), c.tolist(), strict=True)):
        if nj - cj < k:
            out[j] = 1.0
        else:
            i = torch.arange(nj - cj + 1, nj + 1, dtype=torch.float64)
            out[j] = 1.0 - torch.prod(1.0 - k / i)
    return out


def pass_at_k(num_samples: torch.Tensor | list[int], num_correct: torch.Tensor | list[int], k: int = 1) -> torch.Tensor:
    """Mean unbiased pass@k over problems (``nan`` for no problems).

    Example:
        >>> pass_at_k([10, 10], [3, 0], k=1)
        tensor(0.1500, dtype=torch.float64)
    """
    per = pass_at_k_per_problem(num_samples, num_correct, k)
    return per.mean() if per.numel() else torch.tensor(float("nan"), dtype=torch.float64)


def _flags(name: str, value: torch.Tensor | list[bool]) -> torch.Tensor:
    t = torch.as_tensor(value).reshape(-1)
    if t.dtype != torch.bool and not bool(((t == 0) | (t == 1)).all()):
        raise ValueError(f"{name} must hold booleans (or 0/1), got {t.tolist()}")
    return t.to(torch.bool)


def _fix_counts(
    initially_passed: torch.Tensor | list[bool], finally_passed: torch.Tensor | list[bool]
) -> tuple[int, int]:
    before, after = _flags("initially_passed", initially_passed), _flags("finally_passed", finally_passed)
    if before.shape != after.shape:
        raise ValueError(
            f"initially_passed and finally_passed must have the same length, got {before.numel()} and {after.numel()}"
        )
    failing = ~before
    return int((failing & after).sum()), int(failing.sum())


def fix_rate(initially_passed: torch.Tensor | list[bool], finally_passed: torch.Tensor | list[bool]) -> torch.Tensor:
    """Fraction of the initially failing problems that pass after refinement (``nan`` when none failed).

    Example:
        >>> fix_rate([False, False, True, False], [True, False, True, True])
        tensor(0.6667, dtype=torch.float64)
    """
    fixed, failing = _fix_counts(initially_passed, finally_passed)
    return torch.tensor(fixed / failing if failing else float("nan"), dtype=torch.float64)


def counterexample_tokens(tokens: torch.Tensor | list[int]) -> torch.Tensor:
    """Mean token count of the reported counterexamples (``nan`` for none).

    Example:
        >>> counterexample_tokens([4, 6, 11])
        tensor(7., dtype=torch.float64)
    """
    t = _counts("tokens", tokens)
    return t.mean() if t.numel() else torch.tensor(float("nan"), dtype=torch.float64)
