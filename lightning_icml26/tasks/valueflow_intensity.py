"""``valueflow_intensity_task``: the anchor-based intensity evaluator on simulated (or SmolLM2) judgements."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from lightning_icml26._requirements import Requirement, declare_requirements
from lightning_icml26.algorithms import RankingJudge, evaluate_with_judge
from lightning_icml26.algorithms.valueflow_intensity import borda_interpolation, sample_anchors
from lightning_icml26.data.valueflow import make_value_texts
from lightning_icml26.llm import smollm2
from lightning_icml26.metrics import AnchorPLIntensity

__all__ = ["valueflow_intensity_task"]


@declare_requirements(
    lambda args: [
        Requirement("sklearn", "valueflow", "the isotonic calibration"),
        *([Requirement("transformers", "llm", "the SmolLM2 judge")] if args["judge"] == "smollm2" else []),
    ]
)
def valueflow_intensity_task(
    out_dir: str | Path | None = None,
    judge: str = "simulated",
    n_responses: int = 500,
    m: int = 3,
    k: int = 6,
    sampling: str = "bucket",
    judge_scale: float = 1.0,
    seed: int = 0,
) -> dict[str, float]:
    """Score responses of known intensity with the evaluator; report its error and Borda interpolation's.

    ``judge="simulated"``: a Plackett-Luce judge ranks each window by Gumbel-max on ``judge_scale * intensity``
    against a pool of 500 anchors with uniform intensities; the rankings go through
    :class:`~lightning_icml26.metrics.AnchorPLIntensity`. ``judge="smollm2"``: SmolLM2-135M ranks generated
    texts about one leaf value (the held-out split's planted intensities are the truth; anchors come from the
    training split).

    Args:
        out_dir: where ``valueflow_intensity.json`` is written (nothing when ``None``).
        judge: ``"simulated"`` or ``"smollm2"``.
        n_responses: responses scored.
        m: windows per response (paper: 3).
        k: items per window (paper: 6).
        sampling: ``"bucket"`` or ``"random"``.
        judge_scale: utility per intensity unit of the simulated judge.
        seed: random seed.

    Returns:
        ``{"mae_pl", "mae_borda", "spearman_pl"}`` (Borda only for the simulated judge).

    Example:
        >>> out = valueflow_intensity_task(n_responses=50, seed=1)
        >>> out["mae_pl"] < 2.0
        True
    """
    if judge not in ("simulated", "smollm2"):
        raise ValueError(f"judge must be 'simulated' or 'smollm2', got {judge!r}")
    rng = np.random.default_rng(seed)
    out: dict[str, float] = {}
    if judge == "simulated":
        pool = rng.uniform(-10, 10, size=500)
        truth = rng.uniform(-9, 9, size=n_responses)
        idx = np.stack([[sample_anchors(pool, k, sampling, rng) for _ in range(m)] for _ in range(n_responses)])
        anchors = pool[idx]
        util = judge_scale * np.concatenate([np.repeat(truth[:, None, None], m, 1), anchors], axis=-1)
        rankings = np.argsort(-(util + rng.gumbel(size=util.shape)), axis=-1)
        metric = AnchorPLIntensity(num_responses=n_responses, num_windows=m, k=k)
        metric.update(
            torch.arange(n_responses).repeat_interleave(m),
            torch.arange(m).repeat(n_responses),
            torch.from_numpy(rankings.reshape(-1, k)),
            torch.from_numpy(anchors.reshape(-1, k - 1)).float(),
        )
        estimate = metric.compute().double().numpy()
        out["mae_borda"] = float(np.mean(np.abs(borda_interpolation(rankings, anchors) - truth)))
    else:
        leaf = ("duties from past acts", "fidelity", "telling the truth")
        train = make_value_texts(per_label=8, seed=seed, theories=("duty",))
        test = make_value_texts(per_label=4, seed=seed, split="heldout", theories=("duty",))
        a_idx = [i for i, p in enumerate(train.paths) if p == leaf]
        r_idx = [i for i, p in enumerate(test.paths) if p == leaf][:n_responses]
        estimate = evaluate_with_judge(
            RankingJudge(smollm2()),
            [test.texts[i] for i in r_idx],
            "telling the truth",
            [train.texts[i] for i in a_idx],
            train.intensities[a_idx].numpy(),
            m=m,
            k=k,
            sampling=sampling,
            seed=seed,
        )
        truth = test.intensities[r_idx].numpy()
    out["mae_pl"] = float(np.mean(np.abs(estimate - truth)))
    order = np.argsort(np.argsort(estimate)), np.argsort(np.argsort(truth))
    out["spearman_pl"] = float(np.corrcoef(order[0], order[1])[0, 1])
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / "valueflow_intensity.json").write_text(json.dumps(out, indent=2))
    return out
