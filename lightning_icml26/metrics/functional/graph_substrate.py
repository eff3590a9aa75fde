"""Functional twins of the G-Substrate metrics: normalised exact match and micro-F1 over extracted facts."""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

import torch

__all__ = ["edge_micro_f1", "extract_facts", "graph_exact_match", "normalize_answer"]

_PUNCT = str.maketrans("", "", string.punctuation)
_FACT = re.compile(r'\((?:"(?:[^"\\\n]|\\.)*"|[^()"\n])*\)')  # quoted labels may hold brackets


def normalize_answer(text: str) -> str:
    """Lower-case, drop ASCII punctuation and collapse whitespace (the exact-match normal form).

    Example:
        >>> normalize_answer("  Yes, it IS.  ")
        'yes it is'
    """
    return " ".join(text.lower().translate(_PUNCT).split())


def _check_pairs(preds: Sequence[str], target: Sequence[str]) -> None:
    for name, texts in (("preds", preds), ("target", target)):
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise TypeError(f"{name} must be a sequence of strings, got {type(texts).__name__}: {texts!r}")
    if len(preds) != len(target):
        raise ValueError(f"preds and target must have the same length, got {len(preds)} and {len(target)}")


def extract_facts(text: str) -> set[str]:
    r"""The set of ``(subject, relation, object)`` facts written in ``text`` (one per parenthesised group).

    Facts compare after whitespace is collapsed, so ``(0, -,  1)`` equals ``(0, -, 1)``.

    Example:
        >>> sorted(extract_facts("(0, -, 1)\n(1, -, 2) junk (1, -, 2)"))
        ['(0, -, 1)', '(1, -, 2)']
    """
    return {" ".join(match.split()) for match in _FACT.findall(text)}


def _exact_counts(preds: Sequence[str], target: Sequence[str]) -> tuple[int, int]:
    _check_pairs(preds, target)
    correct = sum(normalize_answer(p) == normalize_answer(t) for p, t in zip(preds, target, strict=True))
    return correct, len(target)


def _edge_counts(preds: Sequence[str], target: Sequence[str]) -> tuple[int, int, int]:
    _check_pairs(preds, target)
    tp = fp = fn = 0
    for p, t in zip(preds, target, strict=True):
        got, want = extract_facts(p), extract_facts(t)
        tp += len(got & want)
        fp += len(got - want)
        fn += len(want - got)
    return tp, fp, fn


def graph_exact_match(preds: Sequence[str], target: Sequence[str]) -> torch.Tensor:
    """Fraction of answers equal to the target after :func:`normalize_answer`.

    Args:
        preds: predicted answers (the final answer, see ``final_answer`` in the data package).
        target: reference answers.

    Returns:
        A float scalar tensor in ``[0, 1]`` (``nan`` for no pairs).

    Example:
        >>> graph_exact_match(["Yes.", "no", "3"], ["yes", "Yes", "3"])
        tensor(0.6667)
    """
    correct, total = _exact_counts(preds, target)
    return torch.tensor(correct / total if total else float("nan"), dtype=torch.float32)


def edge_micro_f1(preds: Sequence[str], target: Sequence[str]) -> torch.Tensor:
    r"""Micro-F1 of the facts extracted from each prediction against the target's facts, pooled over pairs.

    Args:
        preds: predicted texts holding ``(subject, relation, object)`` facts.
        target: reference texts.

    Returns:
        ``2 TP / (2 TP + FP + FN)`` as a float scalar tensor (0 when there are no facts at all).

    Example:
        >>> edge_micro_f1(["(0, -, 1)\n(1, -, 2)"], ["(0, -, 1)\n(2, -, 3)"])
        tensor(0.5000)
    """
    tp, fp, fn = _edge_counts(preds, target)
    denom = 2 * tp + fp + fn
    return torch.tensor(2 * tp / denom if denom else 0.0, dtype=torch.float32)
