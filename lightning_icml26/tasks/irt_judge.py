"""``irt_judge_task``: IRT reliability diagnostics of a simulated judge or of SmolLM2 judging docstrings."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from lightning_icml26.algorithms.irt import JudgeRunner
from lightning_icml26.data.irt_judges import degraded_docstrings, simulate_judge
from lightning_icml26.llm import LanguageModel, smollm2
from lightning_icml26.metrics import GRMReliability, HumanAlignment

__all__ = ["DEFAULT_INSTRUCTION", "irt_judge_task"]

DEFAULT_INSTRUCTION = "Rate how fluent, grammatical and complete this Python docstring is."


def irt_judge_task(
    out_dir: str | Path | None = None,
    judge: str | LanguageModel = "simulated",
    n_samples: int = 500,
    n_categories: int = 5,
    discrimination: float = 3.5,
    sensitive_variant: int | None = None,
    human_scale: float = 1.0,
    n_raters: int = 3,
    instruction: str = DEFAULT_INSTRUCTION,
    readout: str = "argmax",
    seed: int = 0,
) -> dict[str, float]:
    """Score samples under four prompt variants, then report ``C_V``, ``rho``, verdicts, ``theta_ratio``, ``D_W``.

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

    Returns:
        ``{"prompt_consistency", "marginal_reliability", "consistent", "reliable", "theta_ratio", "wasserstein"}``
        as floats (verdicts as 0/1).

    Example:
        >>> out = irt_judge_task(n_samples=200, seed=1)
        >>> out["reliable"], out["marginal_reliability"] > 0.8
        (1.0, True)
    """
    if isinstance(judge, str) and judge == "simulated":
        sim = simulate_judge(
            n_samples=n_samples,
            n_categories=n_categories,
            discrimination=discrimination,
            sensitive_variant=sensitive_variant,
            human_scale=human_scale,
            n_raters=n_raters,
            seed=seed,
        )
        triples, human = sim.triples(), sim.human_triples()
        n_variants, raters = sim.scores.shape[1], n_raters
    else:
        if isinstance(judge, str) and judge != "smollm2":
            raise ValueError(f"judge must be 'simulated', 'smollm2' or a LanguageModel, got {judge!r}")
        model = smollm2() if isinstance(judge, str) else judge
        texts, levels = degraded_docstrings(n_samples=n_samples, n_levels=n_categories, seed=seed)
        runner = JudgeRunner(model, instruction, n_categories=n_categories, readout=readout, seed=seed)
        triples = runner.triples(texts)
        ids = torch.arange(n_samples)
        human = (ids, torch.zeros_like(ids), levels)
        n_variants, raters = len(runner.variants), 1
    reliability = GRMReliability(n_samples, n_variants, n_categories)
    alignment = HumanAlignment(n_samples, n_variants, raters, n_categories)
    reliability.update(*triples)
    alignment.update(*triples, *human)
    figures = {k: float(v) for k, v in {**reliability.compute(), **alignment.compute()}.items()}
    if out_dir is not None:
        path = Path(out_dir)
        path.mkdir(parents=True, exist_ok=True)
        (path / "irt_judge.json").write_text(json.dumps(figures, indent=2))
    return figures
