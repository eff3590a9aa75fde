"""JudgeRunner behind the LanguageModel protocol: deterministic fakes check variants, readout and alignment."""

from __future__ import annotations

import pytest
import torch

from lightning_icml26.algorithms.irt import JudgeRunner, newline_variant, typo_variant
from lightning_icml26.data.irt_judges import _stdlib_docstrings, degrade_text, degraded_docstrings

INSTRUCTION = "Rate how fluent and complete the following docstring is."


class WordCountJudge:
    """Puts log-probability ``-|n - k| * sharp`` on score ``k``, ``n`` = words in the text (+1 if perturbed)."""

    def __init__(self, sharp: float = 1.0) -> None:
        self.sharp = sharp
        self.generated: list[str] = []

    def generate(self, prompts: list[str], max_new_tokens: int = 32) -> list[str]:
        self.generated.extend(prompts)
        return [" Judge the docstring's fluency and completeness. "]

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(t.split()) for t in texts]

    def format_chat(self, messages: list[dict[str, str]]) -> str:
        return "<user>" + messages[-1]["content"] + "<assistant>"

    def logprobs(self, prompts: list[str], continuations: list[str]) -> list[torch.Tensor]:
        out = []
        for p, c in zip(prompts, continuations, strict=True):
            text = p.split("Text: ")[1].split("\n")[0]
            n = len(text.split()) + (0 if p.startswith("<user>" + INSTRUCTION) else 1)
            out.append(torch.tensor([-abs(n - int(c)) * self.sharp]))
        return out


def test_variants_are_applied() -> None:
    judge = WordCountJudge()
    runner = JudgeRunner(judge, INSTRUCTION, n_categories=5, seed=3)
    original, typo, newline, paraphrase = runner.instructions
    assert original == INSTRUCTION
    assert typo == typo_variant(INSTRUCTION, 3) != INSTRUCTION
    assert sorted(typo) == sorted(INSTRUCTION)  # letters swapped, none lost
    assert newline.count("\n") == 3
    assert newline.replace("\n", "") == INSTRUCTION
    assert paraphrase == "Judge the docstring's fluency and completeness."
    assert INSTRUCTION in judge.generated[0]
    assert newline_variant(INSTRUCTION, 3) == newline


def test_scores_read_and_samples_aligned() -> None:
    runner = JudgeRunner(WordCountJudge(), INSTRUCTION, n_categories=5, variants=("original", "typo"))
    texts = ["a", "a b c", "a b c d e f g", "a b"]
    scores = runner.score(texts)
    # original prompt: word count capped at 5; the perturbed variant adds one
    assert scores.tolist() == [[1, 2], [3, 4], [5, 5], [2, 3]]
    s, v, y = runner.triples(texts)
    assert s.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert v.tolist() == [0, 1] * 4
    assert y.tolist() == scores.flatten().tolist()


def test_expectation_readout() -> None:
    runner = JudgeRunner(WordCountJudge(sharp=0.2), INSTRUCTION, n_categories=5, variants=("original",),
                         readout="expectation")  # fmt: skip
    probs = runner.probabilities(["a"])[0, 0]
    expected = torch.softmax(-0.2 * (torch.arange(1, 6) - 1).abs().float(), 0)
    torch.testing.assert_close(probs, expected)
    assert runner.score(["a"]).item() == round(float((expected * torch.arange(1, 6)).sum()))


def test_bad_input() -> None:
    with pytest.raises(TypeError, match="LanguageModel"):
        JudgeRunner(object(), INSTRUCTION)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="variants"):
        JudgeRunner(WordCountJudge(), INSTRUCTION, variants=("shout",))
    with pytest.raises(ValueError, match="n_categories"):
        JudgeRunner(WordCountJudge(), INSTRUCTION, n_categories=1)
    with pytest.raises(ValueError, match="readout"):
        JudgeRunner(WordCountJudge(), INSTRUCTION, readout="mode")
    with pytest.raises(ValueError, match="texts"):
        JudgeRunner(WordCountJudge(), INSTRUCTION).score([])


def test_degraded_docstrings_are_graded() -> None:
    texts, levels = degraded_docstrings(n_samples=20, n_levels=5, seed=1)
    assert levels.tolist() == [1, 2, 3, 4, 5] * 4
    again, _ = degraded_docstrings(n_samples=20, n_levels=5, seed=1)
    assert again == texts
    originals = set(_stdlib_docstrings(12, 40))
    for t, lv in zip(texts, levels.tolist(), strict=True):
        if lv == 5:
            assert t in originals  # the top level is intact
        if lv <= 2:
            assert t not in originals
    text = "First clause, second clause; third clause, fourth words here."
    assert degrade_text(text, 5, 5) == text
    low = degrade_text(text, 1, 5, seed=0)
    assert len(low.split()) < len(text.split())
    with pytest.raises(ValueError, match="level"):
        degrade_text(text, 0, 5)
