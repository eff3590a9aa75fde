"""``irt_judge_task``: IRT reliability diagnostics of a simulated judge or of SmolLM2 judging docstrings."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from lightning_icml26.algorithms.irt import JudgeRunner
from lightning_icml26.data.irt_judges import degraded_docstrings, simulate_judge
from lightning_icml26.llm import LanguageModel, smollm2
from lightning_icml26.metrics import GRMReliability, HumanAlignment
from lightning_icml26.tasks._config import TaskConfig

__all__ = ["DEFAULT_INSTRUCTION", "IrtJudgeConfig", "irt_judge_task"]

DEFAULT_INSTRUCTION = "Rate how fluent, grammatical and complete this Python docstring is."


@dataclass(frozen=True)
class IrtJudgeConfig(TaskConfig):
    """Settings of :func:`irt_judge_task` (the ``irt_judge`` recipe); ``run()`` runs it.

    Args:
        out_dir: where ``irt_judge.json`` is written (nothing written when ``None``).
        judge: ``"simulated"`` (a GRM judge, see :func:`~lightning_icml26.data.irt_judges.simulate_judge`),
            ``"smollm2"`` (SmolLM2-135M-Instruct judging degraded standard-library docstrings, the degradation
            level as the human rating) or any :class:`~lightning_icml26.llm.LanguageModel`.
        n_samples: samples judged.
        n_categories: score levels ``K``.
        discrimination: simulated judge's discrimination.
        sensitive_variant: simulated judge's prompt-sensitive variant (``None``: none).
        human_scale: simulated humans rate ``human_scale * quality``.
        n_raters: simulated human raters.
        instruction: the judging instruction (language-model judges).
        readout: ``"argmax"`` or ``"expectation"`` (language-model judges).
        seed: random seed.

    Example:
        >>> IrtJudgeConfig(n_samples=200).judge
        'simulated'
        >>> IrtJudgeConfig(judge="gpt4")
        Traceback (most recent call last):
        ...
        ValueError: judge must be 'simulated', 'smollm2' or a LanguageModel, got 'gpt4'
    """

    out_dir: str | Path | None = None
    judge: str | LanguageModel = "simulated"
    n_samples: int = 500
    n_categories: int = 5
    discrimination: float = 3.5
    sensitive_variant: int | None = None
    human_scale: float = 1.0
    n_raters: int = 3
    instruction: str = DEFAULT_INSTRUCTION
    readout: str = "argmax"
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.judge, str) and self.judge not in ("simulated", "smollm2"):
            raise ValueError(f"judge must be 'simulated', 'smollm2' or a LanguageModel, got {self.judge!r}")

    def run(self) -> dict[str, float]:
        """Run :func:`irt_judge_task` with these settings."""
        return irt_judge_task(self)


def _judged(config: IrtJudgeConfig) -> tuple[tuple[Any, ...], tuple[Any, ...], int, int]:
    """The judge's ``(sample, variant, score)`` triples, the human ones, and the numbers of variants and raters."""
    if config.judge == "simulated":
        sim = simulate_judge(
            n_samples=config.n_samples,
            n_categories=config.n_categories,
            discrimination=config.discrimination,
            sensitive_variant=config.sensitive_variant,
            human_scale=config.human_scale,
            n_raters=config.n_raters,
            seed=config.seed,
        )
        return tuple(sim.triples()), tuple(sim.human_triples()), sim.scores.shape[1], config.n_raters
    model = smollm2() if isinstance(config.judge, str) else config.judge
    texts, levels = degraded_docstrings(n_samples=config.n_samples, n_levels=config.n_categories, seed=config.seed)
    runner = JudgeRunner(
        model, config.instruction, n_categories=config.n_categories, readout=config.readout, seed=config.seed
    )
    ids = torch.arange(config.n_samples)
    return tuple(runner.triples(texts)), (ids, torch.zeros_like(ids), levels), len(runner.variants), 1


def irt_judge_task(config: IrtJudgeConfig) -> dict[str, float]:
    """Score samples under four prompt variants, then report ``C_V``, ``rho``, verdicts, ``theta_ratio``, ``D_W``.

    Args:
        config: the settings (:class:`IrtJudgeConfig`).

    Returns:
        ``{"prompt_consistency", "marginal_reliability", "consistent", "reliable", "theta_ratio", "wasserstein"}``
        as floats (verdicts as 0/1).

    Example:
        >>> out = irt_judge_task(IrtJudgeConfig(n_samples=200, seed=1))
        >>> out["reliable"], out["marginal_reliability"] > 0.8
        (1.0, True)
    """
    triples, human, n_variants, raters = _judged(config)
    reliability = GRMReliability(config.n_samples, n_variants, config.n_categories)
    alignment = HumanAlignment(config.n_samples, n_variants, raters, config.n_categories)
    reliability.update(*triples)
    alignment.update(*triples, *human)
    figures = {k: float(v) for k, v in {**reliability.compute(), **alignment.compute()}.items()}
    if config.out_dir is not None:
        path = Path(config.out_dir)
        path.mkdir(parents=True, exist_ok=True)
        (path / "irt_judge.json").write_text(json.dumps(figures, indent=2))
    return figures
