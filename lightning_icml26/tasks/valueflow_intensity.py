"""``valueflow_intensity_task``: the anchor-based intensity evaluator on simulated (or SmolLM2) judgements."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from lightning_icml26._requirements import Requirement, declare_requirements
from lightning_icml26.algorithms import RankingJudge, evaluate_with_judge
from lightning_icml26.algorithms.valueflow_intensity import borda_interpolation, posterior_median, sample_anchors
from lightning_icml26.data.valueflow import make_value_texts
from lightning_icml26.llm import smollm2
from lightning_icml26.metrics import AnchorPLIntensity
from lightning_icml26.tasks._config import TaskConfig

__all__ = ["ValueflowIntensityConfig", "simulated_judgements", "valueflow_intensity_task"]

JUDGES = ("simulated", "smollm2")
SAMPLINGS = ("bucket", "random")


@declare_requirements(
    lambda args: [
        Requirement("sklearn", "valueflow", "the isotonic calibration"),
        *([Requirement("transformers", "llm", "the SmolLM2 judge")] if args["judge"] == "smollm2" else []),
    ]
)
@dataclass(frozen=True)
class ValueflowIntensityConfig(TaskConfig):
    """Settings of :func:`valueflow_intensity_task` (the ``valueflow_intensity`` recipe's ``task`` node; same keys).

    Attributes:
        out_dir: where ``valueflow_intensity.json`` is written (nothing when ``None``).
        judge: ``"simulated"`` or ``"smollm2"``.
        n_responses: responses scored.
        m: windows per response (paper: 3).
        k: items per window, the response and ``k - 1`` anchors (paper: 6).
        sampling: ``"bucket"`` (the paper's) or ``"random"`` anchors.
        judge_scale: utility per intensity unit of the simulated judge.
        oracle: also report ``mae_oracle``, the Bayes reference (:func:`~lightning_icml26.algorithms.
            valueflow_intensity.posterior_median` under the true prior of the responses; simulated judge only).
        seed: random seed.

    Example:
        >>> out = ValueflowIntensityConfig(n_responses=50, seed=1).run()
        >>> out["mae_pl"] < 2.0
        True
        >>> ValueflowIntensityConfig(judge="gpt")
        Traceback (most recent call last):
        ...
        ValueError: judge must be 'simulated' or 'smollm2', got 'gpt'
    """

    out_dir: str | None = None
    judge: str = "simulated"
    n_responses: int = 500
    m: int = 3
    k: int = 6
    sampling: str = "bucket"
    judge_scale: float = 1.0
    oracle: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        if self.judge not in JUDGES:
            raise ValueError(f"judge must be 'simulated' or 'smollm2', got {self.judge!r}")
        if self.sampling not in SAMPLINGS:
            raise ValueError(f"sampling must be 'bucket' or 'random', got {self.sampling!r}")
        for name, low in (("n_responses", 1), ("m", 1), ("k", 2)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if not self.judge_scale > 0:
            raise ValueError(f"judge_scale must be positive, got {self.judge_scale!r}")
        if self.oracle and self.judge != "simulated":
            raise ValueError(f"oracle needs judge='simulated' (the truth's prior is known there), got {self.judge!r}")

    def run(self) -> dict[str, float]:
        """Run :func:`valueflow_intensity_task` with these settings."""
        return valueflow_intensity_task(self)


def simulated_judgements(
    config: ValueflowIntensityConfig, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Responses of known intensity ranked against anchors by a Plackett-Luce judge (Gumbel-max on utility).

    A pool of 500 anchors has intensities uniform on ``[-10, 10]``, the ``config.n_responses`` responses uniform
    on ``[-9, 9]``; each response gets ``config.m`` windows of itself and ``config.k - 1`` anchors
    (:func:`sample_anchors` with ``config.sampling``), ranked by ``config.judge_scale * intensity`` plus Gumbel
    noise drawn from ``rng`` (``config.seed`` is not read).

    Returns:
        ``(truth (R,), rankings (R, m, k) with item 0 the response, anchor intensities (R, m, k - 1))``.

    Example:
        >>> config = ValueflowIntensityConfig(n_responses=4, m=3, k=6, sampling="bucket")
        >>> truth, rankings, anchors = simulated_judgements(config, np.random.default_rng(0))
        >>> truth.shape, rankings.shape, anchors.shape
        ((4,), (4, 3, 6), (4, 3, 5))
    """
    c = config
    pool = rng.uniform(-10, 10, size=500)
    truth = rng.uniform(-9, 9, size=c.n_responses)
    idx = np.stack([[sample_anchors(pool, c.k, c.sampling, rng) for _ in range(c.m)] for _ in range(c.n_responses)])
    anchors = pool[idx]
    util = c.judge_scale * np.concatenate([np.repeat(truth[:, None, None], c.m, 1), anchors], axis=-1)
    rankings = np.argsort(-(util + rng.gumbel(size=util.shape)), axis=-1)
    return truth, rankings, anchors


def _simulated(
    c: ValueflowIntensityConfig, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """Estimates (:class:`AnchorPLIntensity`) on simulated judgements, the truth, Borda's and the oracle's MAE."""
    truth, rankings, anchors = simulated_judgements(c, rng)
    metric = AnchorPLIntensity(num_responses=c.n_responses, num_windows=c.m, k=c.k)
    metric.update(
        torch.arange(c.n_responses).repeat_interleave(c.m),
        torch.arange(c.m).repeat(c.n_responses),
        torch.from_numpy(rankings.reshape(-1, c.k)),
        torch.from_numpy(anchors.reshape(-1, c.k - 1)).float(),
    )
    estimate = metric.compute().double().numpy()
    out = {"mae_borda": float(np.mean(np.abs(borda_interpolation(rankings, anchors) - truth)))}
    if c.oracle:
        scale = c.judge_scale
        oracle = posterior_median(rankings, scale * anchors, -9.0 * scale, 9.0 * scale) / scale
        out["mae_oracle"] = float(np.mean(np.abs(oracle - truth)))
    return estimate, truth, out


def _smollm2(c: ValueflowIntensityConfig) -> tuple[np.ndarray, np.ndarray]:
    """SmolLM2-135M ranks held-out texts of one leaf value against training-split anchors; estimates and truth."""
    leaf = ("duties from past acts", "fidelity", "telling the truth")
    train = make_value_texts(per_label=8, seed=c.seed, theories=("duty",))
    test = make_value_texts(per_label=4, seed=c.seed, split="heldout", theories=("duty",))
    a_idx = [i for i, p in enumerate(train.paths) if p == leaf]
    r_idx = [i for i, p in enumerate(test.paths) if p == leaf][: c.n_responses]
    estimate = evaluate_with_judge(
        RankingJudge(smollm2()), [test.texts[i] for i in r_idx], "telling the truth", [train.texts[i] for i in a_idx],
        train.intensities[a_idx].numpy(), m=c.m, k=c.k, sampling=c.sampling, seed=c.seed,
    )  # fmt: skip
    return estimate, test.intensities[r_idx].numpy()


def valueflow_intensity_task(config: ValueflowIntensityConfig) -> dict[str, float]:
    """Score responses of known intensity with the evaluator; report its error and Borda interpolation's.

    ``judge="simulated"``: :func:`simulated_judgements` go through
    :class:`~lightning_icml26.metrics.AnchorPLIntensity`. ``judge="smollm2"``: SmolLM2-135M ranks generated
    texts about one leaf value (the held-out split's planted intensities are the truth; anchors come from the
    training split).

    Returns:
        ``{"mae_pl", "mae_borda", "spearman_pl"}`` (Borda only for the simulated judge), and ``mae_oracle``
        with ``oracle``.

    Example:
        >>> valueflow_intensity_task({"judge": "simulated"})
        Traceback (most recent call last):
        ...
        TypeError: config must be a ValueflowIntensityConfig, got dict
    """
    if not isinstance(config, ValueflowIntensityConfig):
        raise TypeError(f"config must be a ValueflowIntensityConfig, got {type(config).__name__}")
    rng = np.random.default_rng(config.seed)
    out: dict[str, float] = {}
    if config.judge == "simulated":
        estimate, truth, baselines = _simulated(config, rng)
        out.update(baselines)
    else:
        estimate, truth = _smollm2(config)
    out["mae_pl"] = float(np.mean(np.abs(estimate - truth)))
    order = np.argsort(np.argsort(estimate)), np.argsort(np.argsort(truth))
    out["spearman_pl"] = float(np.corrcoef(order[0], order[1])[0, 1])
    if config.out_dir is not None:
        Path(config.out_dir).mkdir(parents=True, exist_ok=True)
        (Path(config.out_dir) / "valueflow_intensity.json").write_text(json.dumps(out, indent=2))
    return out
