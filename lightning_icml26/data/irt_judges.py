"""Simulated LLM judges for the IRT diagnostics: graded scores with planted pathologies.

Samples have a latent quality ``theta ~ N(0, 1)``. A judge scores every sample on ``1..K`` under ``V`` prompt
variants, each variant an item of a graded response model (discrimination ``alpha``, ordered thresholds).
Planted pathologies:

* ``sensitive_variant``: that variant's scores barely follow the quality (its discrimination is multiplied by
  ``sensitivity``) and its thresholds are shifted by ``shift``: a prompt-sensitive judge (high ``C_V``).
* a low ``discrimination`` for every variant: a judge that separates samples poorly (low reliability).
* for a real judge, :func:`degraded_docstrings` gives standard-library docstrings degraded at graded levels
  (clauses dropped, words shuffled); the level plays the human rating.
* ``human_scale``: human raters score the rescaled quality ``human_scale * theta`` with the judge's clean
  thresholds and discrimination ``human_discrimination / human_scale`` (equally sharp per unit of quality):
  with ``human_scale < 1`` humans keep their extreme levels for more extreme samples, so the judge's ability
  range between its top and bottom levels is narrower than the humans' (``theta_ratio < 1``).
"""

from __future__ import annotations

import ast
import random
import re
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import torch

from lightning_icml26.algorithms.irt import category_probabilities

__all__ = ["SimulatedJudge", "degrade_text", "degraded_docstrings", "simulate_judge"]


@dataclass
class SimulatedJudge:
    """Scores of a simulated judge and of human raters over the same samples.

    Attributes:
        scores: judge scores ``[N, V]`` in ``1..K``.
        human_scores: human ratings ``[N, R]`` in ``1..K``.
        theta: true qualities ``[N]``.
        discrimination: true ``alpha`` per variant ``[V]``.
        thresholds: true thresholds per variant ``[V, K - 1]``.
    """

    scores: torch.Tensor
    human_scores: torch.Tensor
    theta: torch.Tensor
    discrimination: torch.Tensor
    thresholds: torch.Tensor

    def triples(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The judge scores as ``(sample_ids, variant_ids, scores)`` flat tensors (the metrics' input)."""
        n, v = self.scores.shape
        return torch.arange(n).repeat_interleave(v), torch.arange(v).repeat(n), self.scores.reshape(-1)

    def human_triples(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The human ratings as ``(sample_ids, rater_ids, scores)``."""
        n, r = self.human_scores.shape
        return torch.arange(n).repeat_interleave(r), torch.arange(r).repeat(n), self.human_scores.reshape(-1)


def _draw(theta: torch.Tensor, alpha: torch.Tensor, beta: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    probs = category_probabilities(theta, alpha, beta)  # [V, N, K]
    v, n, k = probs.shape
    draws = torch.multinomial(probs.reshape(-1, k).clamp_min(0), 1, generator=g).reshape(v, n)
    return draws.T + 1


def simulate_judge(
    n_samples: int = 500,
    n_variants: int = 4,
    n_categories: int = 5,
    discrimination: float = 3.5,
    discrimination_jitter: float = 0.05,
    sensitive_variant: int | None = None,
    sensitivity: float = 0.2,
    shift: float = 1.0,
    n_raters: int = 3,
    human_scale: float = 1.0,
    human_discrimination: float | None = None,
    seed: int = 0,
) -> SimulatedJudge:
    """Draw a judge's scores under ``n_variants`` prompt variants and human ratings of the same samples.

    Args:
        n_samples: evaluated samples ``N``.
        n_variants: prompt variants ``V`` (the original prompt first).
        n_categories: score levels ``K``.
        discrimination: typical ``alpha`` of the judge's variants.
        discrimination_jitter: relative spread of ``alpha`` across variants (uniform, +-).
        sensitive_variant: index of a prompt-sensitive variant, or ``None``.
        sensitivity: factor on that variant's ``alpha``.
        shift: added to that variant's thresholds.
        n_raters: human raters ``R``.
        human_scale: humans rate ``human_scale * theta``.
        human_discrimination: ``alpha`` of every human rater per unit of quality (default: ``discrimination``).
        seed: random seed.

    Raises:
        ValueError: for non-positive sizes or discriminations, ``K < 2`` or an out-of-range ``sensitive_variant``.

    Example:
        >>> sim = simulate_judge(n_samples=20, seed=1)
        >>> sim.scores.shape, sim.human_scores.shape, int(sim.scores.min()) >= 1, int(sim.scores.max()) <= 5
        (torch.Size([20, 4]), torch.Size([20, 3]), True, True)
    """
    for name, value in (("n_samples", n_samples), ("n_variants", n_variants), ("n_raters", n_raters)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if isinstance(n_categories, bool) or not isinstance(n_categories, int) or n_categories < 2:
        raise ValueError(f"n_categories must be an int >= 2, got {n_categories!r}")
    human_discrimination = discrimination if human_discrimination is None else human_discrimination
    if not human_scale > 0:
        raise ValueError(f"human_scale must be > 0, got {human_scale!r}")
    for name, x in (("discrimination", discrimination), ("human_discrimination", human_discrimination)):
        if not x > 0:
            raise ValueError(f"{name} must be > 0, got {x!r}")
    if sensitive_variant is not None and not 0 <= sensitive_variant < n_variants:
        raise ValueError(f"sensitive_variant must be None or in 0..{n_variants - 1}, got {sensitive_variant!r}")
    g = torch.Generator().manual_seed(seed)
    theta = torch.randn(n_samples, generator=g, dtype=torch.float64)
    base = torch.linspace(-1.5, 1.5, n_categories - 1, dtype=torch.float64)
    jitter = 1 + discrimination_jitter * (2 * torch.rand(n_variants, generator=g, dtype=torch.float64) - 1)
    alpha = discrimination * jitter
    beta = base.repeat(n_variants, 1) + 0.05 * torch.randn(n_variants, 1, generator=g, dtype=torch.float64)
    if sensitive_variant is not None:
        alpha[sensitive_variant] *= sensitivity
        beta[sensitive_variant] += shift
    scores = _draw(theta, alpha, beta, g)
    human_alpha = torch.full((n_raters,), float(human_discrimination) / human_scale, dtype=torch.float64)
    human = _draw(human_scale * theta, human_alpha, base.repeat(n_raters, 1), g)
    return SimulatedJudge(scores, human, theta, alpha, beta)


def _stdlib_docstrings(min_words: int, max_words: int) -> list[str]:
    root = Path(sysconfig.get_paths()["stdlib"])
    found: list[str] = []
    for name in _DOC_MODULES:
        path = root / name
        if not path.is_file():
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                doc = ast.get_docstring(node)
                if doc:
                    para = " ".join(doc.split("\n\n")[0].split())
                    if min_words <= len(para.split()) <= max_words and para not in found:
                        found.append(para)
    return found


_DOC_MODULES = (
    "textwrap.py",
    "string.py",
    "fractions.py",
    "statistics.py",
    "shutil.py",
    "calendar.py",
    "heapq.py",
    "difflib.py",
    "random.py",
    "argparse.py",
)


def degrade_text(text: str, level: int, n_levels: int, seed: int = 0) -> str:
    """Degrade ``text``: level ``n_levels`` keeps it, level 1 drops clauses and shuffles most words.

    A fraction ``(n_levels - level) / (n_levels - 1)`` of the comma- or semicolon-separated clauses after the
    first is dropped and the same fraction of the remaining words is shuffled among their positions.

    Example:
        >>> degrade_text("Return the sum, ignoring NaN values.", 3, 3)
        'Return the sum, ignoring NaN values.'
        >>> degrade_text("Return the sum, ignoring NaN values.", 1, 3, seed=2)
        'sum the Return'
    """
    if not 1 <= level <= n_levels:
        raise ValueError(f"level must lie in 1..{n_levels}, got {level!r}")
    rng = random.Random(seed)
    frac = (n_levels - level) / max(n_levels - 1, 1)
    clauses = re.split(r"(?<=[,;])\s+", text)
    keep = [clauses[0]] + [c for c in clauses[1:] if rng.random() >= frac]
    words = " ".join(keep).rstrip(",;").split()
    picked = [i for i in range(len(words)) if rng.random() < frac]
    moved = [words[i] for i in picked]
    rng.shuffle(moved)
    for i, w in zip(picked, moved, strict=True):
        words[i] = w
    return " ".join(words)


def degraded_docstrings(
    n_samples: int = 50, n_levels: int = 5, seed: int = 0, min_words: int = 12, max_words: int = 40
) -> tuple[list[str], torch.Tensor]:
    """Python standard-library docstrings degraded at graded levels; the level is the "human" rating.

    Args:
        n_samples: number of texts (levels cycle ``1..n_levels`` over them).
        n_levels: number of quality levels.
        seed: chooses the docstrings and the degradations.
        min_words: shortest docstring paragraph kept.
        max_words: longest docstring paragraph kept.

    Returns:
        ``(texts, levels)`` with ``levels`` a long tensor in ``1..n_levels``.

    Example:
        >>> texts, levels = degraded_docstrings(n_samples=4, n_levels=2)
        >>> len(texts), levels.tolist()
        (4, [1, 2, 1, 2])
    """
    docs = _stdlib_docstrings(min_words, max_words)
    if n_samples > len(docs):
        raise ValueError(f"n_samples must be at most {len(docs)} (docstrings found), got {n_samples}")
    rng = random.Random(seed)
    chosen = rng.sample(docs, n_samples)
    levels = [(j % n_levels) + 1 for j in range(n_samples)]
    texts = [
        degrade_text(t, lv, n_levels, seed=seed * 100_003 + j)
        for j, (t, lv) in enumerate(zip(chosen, levels, strict=True))
    ]
    return texts, torch.tensor(levels)
