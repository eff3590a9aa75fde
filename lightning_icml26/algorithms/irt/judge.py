"""``JudgeRunner``: score samples with a language model under the original judge prompt and perturbed copies.

The judge instruction is perturbed once per variant (seeded), the way the IRT diagnostic asks:

* ``"original"``: the instruction as given;
* ``"typo"``: a few words get two neighbouring letters swapped;
* ``"newline"``: three line breaks inserted between words;
* ``"paraphrase"``: the language model itself rewrites the instruction (greedy decoding).

Each sample is scored by reading the model's log-probabilities of the ``K`` score tokens ``"1".."K"`` right after
the prompt (no free-text parsing): ``readout="argmax"`` takes the most likely score, ``"expectation"`` the
probability-weighted mean rounded to the nearest score. The paper's typo and paraphrase tools (attention-
guided AugLy typos, POS-tagged verb and adjective paraphrases) are replaced by these simpler seeded edits.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch

from lightning_icml26.llm import LanguageModel, continuation_scores

__all__ = ["VARIANTS", "JudgeRunner", "newline_variant", "typo_variant"]

VARIANTS = ("original", "typo", "newline", "paraphrase")
"""The prompt variants a :class:`JudgeRunner` knows."""


def typo_variant(text: str, seed: int = 0, n_words: int = 3) -> str:
    """Swap two neighbouring letters inside ``n_words`` randomly chosen words of four or more letters.

    Example:
        >>> typo_variant("Rate the fluency of the following summary", seed=1, n_words=1)
        'Rate the fluecny of the following summary'
    """
    words = text.split(" ")
    candidates = [i for i, w in enumerate(words) if sum(ch.isalpha() for ch in w) >= 4]
    rng = random.Random(seed)
    for i in sorted(rng.sample(candidates, min(n_words, len(candidates)))):
        w = words[i]
        letters = [j for j in range(len(w) - 1) if w[j].isalpha() and w[j + 1].isalpha() and w[j] != w[j + 1]]
        if letters:
            j = rng.choice(letters)
            words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
    return " ".join(words)


def newline_variant(text: str, seed: int = 0, n_breaks: int = 3) -> str:
    r"""Insert ``n_breaks`` line breaks between randomly chosen words.

    Example:
        >>> newline_variant("a b c d", seed=0, n_breaks=1)
        'a b\n c d'
    """
    words = text.split(" ")
    rng = random.Random(seed)
    for i in rng.sample(range(1, len(words)), min(n_breaks, len(words) - 1)):
        words[i - 1] = words[i - 1] + "\n"
    return " ".join(words)


class JudgeRunner:
    r"""Score texts on ``1..K`` with a :class:`~lightning_icml26.llm.LanguageModel` under prompt variants.

    Args:
        model: the judge.
        instruction: the judging instruction (e.g. ``"Rate how fluent and complete this docstring is."``).
        n_categories: number of score levels ``K`` (2..9, so that every score is one character).
        variants: which of :data:`VARIANTS` to run, in order (the variant ids of the output).
        readout: ``"argmax"`` or ``"expectation"``.
        seed: seed of the typo and newline edits.
        chat: wrap the prompt with the model's chat template (``model.format_chat``).

    Attributes:
        instructions: the instruction text of every variant.

    Example:
        >>> class Fake:  # prefers the score equal to the number of words in the text
        ...     def generate(self, prompts, max_new_tokens=32): return ["Judge the text's quality."]
        ...     def count_tokens(self, texts): return [len(t.split()) for t in texts]
        ...     def format_chat(self, messages): return messages[-1]["content"]
        ...     def logprobs(self, prompts, continuations):
        ...         words = [len(p.split("Text: ")[1].split("\n")[0].split()) for p in prompts]
        ...         return [torch.tensor([-abs(n - int(c)) * 1.0]) for n, c in zip(words, continuations)]
        >>> runner = JudgeRunner(Fake(), "Rate the quality of the text.", n_categories=5)
        >>> runner.score(["one", "one two three"]).tolist()
        [[1, 1, 1, 1], [3, 3, 3, 3]]
    """

    def __init__(
        self,
        model: LanguageModel,
        instruction: str,
        n_categories: int = 5,
        variants: Sequence[str] = VARIANTS,
        readout: str = "argmax",
        seed: int = 0,
        chat: bool = True,
    ) -> None:
        if not isinstance(model, LanguageModel):
            raise TypeError(f"model must implement LanguageModel (generate, logprobs, ...), got {type(model).__name__}")
        if not isinstance(instruction, str) or not instruction.strip():
            raise ValueError(f"instruction must be a non-empty string, got {instruction!r}")
        if isinstance(n_categories, bool) or not isinstance(n_categories, int) or not 2 <= n_categories <= 9:
            raise ValueError(f"n_categories must be an int in 2..9, got {n_categories!r}")
        unknown = [v for v in variants if v not in VARIANTS]
        if unknown or len(variants) == 0:
            raise ValueError(f"variants must be a non-empty subset of {VARIANTS}, got {list(variants)!r}")
        if readout not in ("argmax", "expectation"):
            raise ValueError(f"readout must be 'argmax' or 'expectation', got {readout!r}")
        self.model = model
        self.n_categories = n_categories
        self.variants = tuple(variants)
        self.readout = readout
        self.chat = chat
        self.instructions = [self._perturb(instruction, v, seed) for v in self.variants]

    def _perturb(self, instruction: str, variant: str, seed: int) -> str:
        if variant == "typo":
            return typo_variant(instruction, seed)
        if variant == "newline":
            return newline_variant(instruction, seed)
        if variant == "paraphrase":
            ask = f"Paraphrase this instruction, keeping its meaning. Reply with the paraphrase only.\n\n{instruction}"
            prompt = self.model.format_chat([{"role": "user", "content": ask}]) if self.chat else ask + "\n"
            text = self.model.generate([prompt], max_new_tokens=2 * self.model.count_tokens([instruction])[0] + 8)
            paraphrase = text[0].strip()
            if not paraphrase:
                raise RuntimeError("the language model returned an empty paraphrase of the instruction")
            return paraphrase
        return instruction

    def prompt(self, variant: int, text: str) -> str:
        """The full judge prompt of variant index ``variant`` for one text."""
        scale = f"Answer with a single number from 1 to {self.n_categories}."
        body = f"{self.instructions[variant]}\n{scale}\n\nText: {text}\n\nScore:"
        if self.chat:
            return self.model.format_chat([{"role": "user", "content": body}])
        return body + " "

    def probabilities(self, texts: Sequence[str]) -> torch.Tensor:
        """Score probabilities ``[N, V, K]`` (softmax of the score tokens' log-probabilities)."""
        if isinstance(texts, str) or len(texts) == 0:
            raise ValueError(f"texts must be a non-empty sequence of strings, got {texts!r}")
        options = [str(k) for k in range(1, self.n_categories + 1)]
        out = torch.empty(len(texts), len(self.variants), self.n_categories)
        for v in range(len(self.variants)):
            for j, text in enumerate(texts):
                out[j, v] = torch.softmax(continuation_scores(self.model, self.prompt(v, text), options), 0)
        return out

    def score(self, texts: Sequence[str]) -> torch.Tensor:
        """Integer scores ``[N, V]`` in ``1..K``."""
        probs = self.probabilities(texts)
        if self.readout == "argmax":
            return probs.argmax(-1) + 1
        levels = torch.arange(1, self.n_categories + 1, dtype=probs.dtype)
        return (probs @ levels).round().long().clamp(1, self.n_categories)

    def triples(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(sample_ids, variant_ids, scores)`` for :class:`~lightning_icml26.metrics.GRMReliability`."""
        scores = self.score(texts)
        n, v = scores.shape
        return torch.arange(n).repeat_interleave(v), torch.arange(v).repeat(n), scores.reshape(-1)
