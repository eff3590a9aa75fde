"""IRT judge reliability in the paper's regimes: GRM diagnostics beside girth, NUTS and a real small judge.

* :func:`irt_regime_task` (:class:`IrtRegimeConfig`): one simulated judge of :data:`IRT_REGIMES` and one seed; the
  project's EM (``fit_grm``) diagnostics (C_V, rho) and their pass-rule flags, recovery of the true parameters,
  girth's ``grm_mml`` on the same scores (when ``girth`` is installed), the observed-output statistics and, for the
  clean regime, human alignment. :func:`summarise_irt_regimes` reduces the rows per regime.
* :func:`irt_nuts_task` (:class:`IrtNutsConfig`): EM beside the paper's estimator, the Bayesian GRM sampled by
  NumPyro NUTS (2 chains), on the same scores (needs ``numpyro``).
* :func:`irt_docstring_judge_task` (:class:`IrtDocstringJudgeConfig`): a language model (SmolLM2 by default) as a
  real judge of graded (degraded) standard-library docstrings.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from scipy.stats import spearmanr

from lightning_icml26.algorithms.irt import BayesianGRM, JudgeRunner, eap_abilities, fit_grm, scores_to_counts
from lightning_icml26.data.irt_judges import degraded_docstrings, simulate_judge
from lightning_icml26.llm import LanguageModel, smollm2
from lightning_icml26.metrics.functional import human_alignment, marginal_reliability, prompt_consistency
from lightning_icml26.metrics.functional.irt import CV_PASS, RHO_PASS
from lightning_icml26.optional import is_available, require
from lightning_icml26.tasks._config import TaskConfig

__all__ = [
    "IRT_REGIMES",
    "IrtDocstringJudgeConfig",
    "IrtNutsConfig",
    "IrtRegimeConfig",
    "irt_docstring_judge_task",
    "irt_nuts_task",
    "irt_regime_task",
    "summarise_irt_regimes",
]

IRT_REGIMES: dict[str, dict[str, Any]] = {
    "clean": {"n_samples": 1600, "discrimination": 3.5},
    "prompt-sensitive": {"n_samples": 1600, "discrimination": 3.5, "sensitive_variant": 2},
    "low-discrimination": {"n_samples": 360, "discrimination": 0.5},
}
"""Simulated judges at the paper's data-set sizes: clean (C_V 0.05, rho 0.92), one prompt variant barely following
quality (C_V 0.92, fail), and low discrimination on every variant (rho 0.34, fail)."""


def _check_regime(regime: str) -> None:
    if regime not in IRT_REGIMES:
        raise ValueError(f"regime must be one of {list(IRT_REGIMES)}, got {regime!r}")


def _diagnostics(counts: torch.Tensor, theta: torch.Tensor, sd: torch.Tensor) -> tuple[float, float]:
    return float(prompt_consistency(theta, counts)), float(marginal_reliability(theta, sd))


@dataclass(frozen=True)
class IrtRegimeConfig(TaskConfig):
    """Settings of :func:`irt_regime_task`: a regime of :data:`IRT_REGIMES` and a seed.

    Example:
        >>> IrtRegimeConfig("noisy")
        Traceback (most recent call last):
        ...
        ValueError: regime must be one of ['clean', 'prompt-sensitive', 'low-discrimination'], got 'noisy'
    """

    regime: str = "clean"
    seed: int = 0

    def __post_init__(self) -> None:
        _check_regime(self.regime)

    def run(self) -> dict[str, Any]:
        """Run :func:`irt_regime_task` with these settings."""
        return irt_regime_task(self)


def _girth(row: dict[str, Any], sim: Any, counts: torch.Tensor, em_alpha: np.ndarray) -> None:
    girth = require("girth", extra="irt", purpose="the girth baseline")
    t0 = time.perf_counter()
    ref = girth.grm_mml(sim.scores.T.numpy().astype(int))
    row["time_girth_s"] = time.perf_counter() - t0
    a, b = torch.as_tensor(ref["Discrimination"]), torch.as_tensor(np.asarray(ref["Difficulty"], dtype=float))
    if bool(torch.isfinite(b).all()):
        th, sd = eap_abilities(counts, a, b)
        row["cv_girth"], row["rho_girth"] = _diagnostics(counts, th, sd)
    row["corr_alpha_em_girth"] = float(np.corrcoef(em_alpha, a.numpy())[0, 1])


def _observed(scores: np.ndarray, human: np.ndarray) -> dict[str, float]:
    out = {"exact_agreement": float(np.mean(scores[:, 1:] == scores[:, :1]))}
    out["spearman_human"] = float(spearmanr(scores.mean(1), human.mean(1)).statistic)
    if is_available("krippendorff"):
        alpha = require("krippendorff", extra="irt").alpha
        out["kripp_alpha"] = float(alpha(reliability_data=scores.T, level_of_measurement="ordinal"))
    return out


def _human_alignment(row: dict[str, Any], sim: Any, regime: str, seed: int) -> None:
    s, v, y = sim.triples()
    for scale in (1.0, 0.5):
        other = simulate_judge(seed=seed, human_scale=scale, **IRT_REGIMES[regime])
        out = human_alignment(s, v, y, *other.human_triples(), sim.scores.shape[0], 4, 3, 5)
        row[f"theta_ratio_h{scale}"] = float(out["theta_ratio"])
        row[f"dw_h{scale}"] = float(out["wasserstein"])


def irt_regime_task(config: IrtRegimeConfig) -> dict[str, Any]:
    """EM's diagnostics of one simulated judge, with girth, the observed statistics and (clean) human alignment.

    Args:
        config: the settings (:class:`IrtRegimeConfig`).

    Returns:
        One row: ``cv_em``, ``rho_em``, ``fail_em``, ``cv_flag``, ``rho_flag``, ``time_em_s``, ``corr_true_alpha``,
        ``corr_true_theta``, ``exact_agreement``, ``spearman_human``; ``kripp_alpha`` and the girth columns when
        those packages are installed; ``theta_ratio_h*``/``dw_h*`` for the clean regime.

    Example:
        >>> row = IrtRegimeConfig("low-discrimination", seed=0).run()
        >>> row["rho_flag"], row["rho_em"] < 0.7
        (True, True)
    """
    sim = simulate_judge(seed=config.seed, **IRT_REGIMES[config.regime])
    counts = scores_to_counts(sim.scores, 5)
    t0 = time.perf_counter()
    fit = fit_grm(counts)
    t_em = time.perf_counter() - t0
    cv, rho = _diagnostics(counts, fit.theta, fit.theta_sd)
    row = {"regime": config.regime, "seed": config.seed, "cv_em": cv, "rho_em": rho}
    row.update({"fail_em": cv > CV_PASS or rho < RHO_PASS, "cv_flag": cv > CV_PASS, "rho_flag": rho < RHO_PASS})
    row["time_em_s"] = t_em
    row["corr_true_alpha"] = float(np.corrcoef(fit.discrimination.numpy(), sim.discrimination.numpy())[0, 1])
    row["corr_true_theta"] = float(np.corrcoef(fit.theta.numpy(), sim.theta.numpy())[0, 1])
    if is_available("girth"):
        _girth(row, sim, counts, fit.discrimination.numpy())
    row.update(_observed(sim.scores.numpy(), sim.human_scores.numpy()))
    if config.regime == "clean":
        _human_alignment(row, sim, config.regime, config.seed)
    return row


def _regime_line(name: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    line: dict[str, Any] = {"regime": name, "seeds": len(rows)}
    for key in ("cv_em", "cv_girth", "rho_em", "rho_girth", "kripp_alpha", "exact_agreement", "spearman_human"):
        vals = [r[key] for r in rows if key in r]
        if vals:
            line[key] = f"{np.mean(vals):.3f} ± {np.std(vals):.3f}"
    gap = [max(abs(r["cv_em"] - r["cv_girth"]), abs(r["rho_em"] - r["rho_girth"])) for r in rows if "cv_girth" in r]
    if gap:
        line["max EM-girth gap"] = float(max(gap))
    for key, name_ in (("fail_em", "fail rate"), ("cv_flag", "cv flag"), ("rho_flag", "rho flag")):
        line[name_] = float(np.mean([r[key] for r in rows]))
    t_em = float(np.mean([r["time_em_s"] for r in rows]))
    t_girth = [r["time_girth_s"] for r in rows if "time_girth_s" in r]
    line["EM s"] = t_em
    if t_girth:
        line["girth s"] = float(np.mean(t_girth))
        line["EM/girth time"] = float("nan") if line["girth s"] == 0 else t_em / line["girth s"]
    return line


def summarise_irt_regimes(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line per regime of :func:`irt_regime_task` rows: mean ± sd of the diagnostics, flag rates, times.

    Example:
        >>> rows = [{"regime": "clean", "cv_em": c, "rho_em": 0.9, "fail_em": f, "cv_flag": f, "rho_flag": False,
        ...          "time_em_s": 1.0} for c, f in ((0.1, False), (0.3, True))]
        >>> line = summarise_irt_regimes(rows)[0]
        >>> line["cv_em"], line["fail rate"]
        ('0.200 ± 0.100', 0.5)
    """
    names = dict.fromkeys(r["regime"] for r in rows)
    return [_regime_line(name, [r for r in rows if r["regime"] == name]) for name in names]


@dataclass(frozen=True)
class IrtNutsConfig(TaskConfig):
    """Settings of :func:`irt_nuts_task`: regime, seed and NUTS draws (warm-up = kept draws per chain).

    Example:
        >>> IrtNutsConfig("clean", draws=0)
        Traceback (most recent call last):
        ...
        ValueError: IrtNutsConfig.draws must be >= 1, got 0
    """

    regime: str = "clean"
    seed: int = 0
    draws: int = 500

    def __post_init__(self) -> None:
        _check_regime(self.regime)
        if self.draws < 1:
            raise ValueError(f"IrtNutsConfig.draws must be >= 1, got {self.draws}")

    def run(self) -> dict[str, Any]:
        """Run :func:`irt_nuts_task` with these settings."""
        return irt_nuts_task(self)


def irt_nuts_task(config: IrtNutsConfig) -> dict[str, Any]:
    """EM beside the paper's estimator (NUTS, 2 chains x (draws warm-up + draws)) on the same scores.

    Args:
        config: the settings (:class:`IrtNutsConfig`).

    Returns:
        ``cv_em``/``cv_nuts``, ``rho_em``/``rho_nuts``, times, ``speedup`` (NUTS over EM time), ``gap`` (largest
        diagnostic difference), ``verdicts_agree`` and ``corr_alpha`` (discriminations of the two fits).

    Example:
        ``IrtNutsConfig("clean", seed=0, draws=20).run()`` needs numpyro (not a dependency); the settings are
        checked when built:

        >>> IrtNutsConfig("clean", seed=0, draws=0)
        Traceback (most recent call last):
        ...
        ValueError: IrtNutsConfig.draws must be >= 1, got 0
    """
    sim = simulate_judge(seed=config.seed, **IRT_REGIMES[config.regime])
    counts = scores_to_counts(sim.scores, 5)
    t0 = time.perf_counter()
    fit = fit_grm(counts)
    t_em = time.perf_counter() - t0
    t0 = time.perf_counter()
    sampler = BayesianGRM(5, num_warmup=config.draws, num_samples=config.draws, num_chains=2, seed=config.seed)
    nuts = sampler.fit(sim.scores.numpy())
    t_nuts = time.perf_counter() - t0
    cv, rho = _diagnostics(counts, fit.theta, fit.theta_sd)
    th = torch.as_tensor(nuts.theta_, dtype=torch.float64)
    cv_n, rho_n = _diagnostics(counts, th, torch.as_tensor(nuts.theta_sd_, dtype=torch.float64))
    return {
        "regime": config.regime, "seed": config.seed, "cv_em": cv, "cv_nuts": cv_n, "rho_em": rho, "rho_nuts": rho_n,
        "time_em_s": t_em, "time_nuts_s": t_nuts, "speedup": float("nan") if t_em == 0 else t_nuts / t_em,
        "gap": max(abs(cv - cv_n), abs(rho - rho_n)),
        "verdicts_agree": (cv > CV_PASS or rho < RHO_PASS) == (cv_n > CV_PASS or rho_n < RHO_PASS),
        "corr_alpha": float(np.corrcoef(fit.discrimination.numpy(), nuts.discrimination_)[0, 1]),
    }  # fmt: skip


@dataclass(frozen=True)
class IrtDocstringJudgeConfig(TaskConfig):
    """Settings of :func:`irt_docstring_judge_task`: docstrings judged and the judge (``None``: SmolLM2).

    Example:
        >>> IrtDocstringJudgeConfig(n_samples=1)
        Traceback (most recent call last):
        ...
        ValueError: IrtDocstringJudgeConfig.n_samples must be >= 2, got 1
    """

    n_samples: int = 50
    judge: LanguageModel | None = None

    def __post_init__(self) -> None:
        if self.n_samples < 2:
            raise ValueError(f"IrtDocstringJudgeConfig.n_samples must be >= 2, got {self.n_samples}")

    def run(self) -> dict[str, Any]:
        """Run :func:`irt_docstring_judge_task` with these settings."""
        return irt_docstring_judge_task(self)


def irt_docstring_judge_task(config: IrtDocstringJudgeConfig) -> dict[str, Any]:
    """A language model judging degraded docstrings (5 quality levels) with 4 prompt variants; GRM diagnostics.

    Args:
        config: the settings (:class:`IrtDocstringJudgeConfig`).

    Returns:
        ``cv``, ``rho``, ``theta_ratio``, ``dw`` (alignment with the quality levels), ``spearman_level``,
        ``score_histogram``, ``seconds`` and the fourth variant's instruction (``paraphrase``).

    Example:
        ``IrtDocstringJudgeConfig(n_samples=20).run()`` loads SmolLM2 (minutes on a CPU); the settings are checked
        when built:

        >>> IrtDocstringJudgeConfig(n_samples=1)
        Traceback (most recent call last):
        ...
        ValueError: IrtDocstringJudgeConfig.n_samples must be >= 2, got 1
    """
    n = config.n_samples
    texts, levels = degraded_docstrings(n_samples=n, n_levels=5, seed=0)
    t0 = time.perf_counter()
    judge = smollm2() if config.judge is None else config.judge
    runner = JudgeRunner(judge, "Rate how fluent, grammatical and complete this Python docstring is.", 5)
    scores = runner.score(texts)
    counts = scores_to_counts(scores, 5)
    paraphrase = " ".join(runner.instructions[3].split())
    out: dict[str, Any] = {"n_samples": n, "paraphrase": paraphrase[:80].replace("|", "/")}
    fit = fit_grm(counts)
    out["cv"], out["rho"] = _diagnostics(counts, fit.theta, fit.theta_sd)
    s, v, y = torch.arange(n).repeat_interleave(4), torch.arange(4).repeat(n), scores.reshape(-1)
    ids = torch.arange(n)
    ali = human_alignment(s, v, y, ids, torch.zeros_like(ids), levels, n, 4, 1, 5)
    out["theta_ratio"], out["dw"] = float(ali["theta_ratio"]), float(ali["wasserstein"])
    out["spearman_level"] = float(spearmanr(scores.float().mean(1), levels).statistic)
    out["score_histogram"] = torch.bincount(scores.flatten(), minlength=6)[1:].tolist()
    out["seconds"] = time.perf_counter() - t0
    return out
