"""The :class:`LanguageModel` protocol: the few calls the project's LLM-based methods make.

A judge, a paraphraser or an evaluator only needs to generate text, score given continuations and count
tokens. Anything that offers these methods (a transformers model through
:class:`~lightning_icml26.llm.HFCausalLM`, a deterministic fake in tests, a remote API wrapper) can be
passed where a ``LanguageModel`` is expected.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

import torch

__all__ = ["ChatMessage", "LanguageModel", "continuation_scores"]

ChatMessage = Mapping[str, str]
"""One chat turn: ``{"role": "system" | "user" | "assistant", "content": "..."}``."""


@runtime_checkable
class LanguageModel(Protocol):
    """What the project asks of a language model.

    Example:
        >>> class Echo:
        ...     def generate(self, prompts, max_new_tokens=32):
        ...         return [p[-3:] for p in prompts]
        ...     def logprobs(self, prompts, continuations):
        ...         return [torch.zeros(len(c)) for c in continuations]
        ...     def count_tokens(self, texts):
        ...         return [len(t) for t in texts]
        ...     def format_chat(self, messages):
        ...         return " ".join(m["content"] for m in messages)
        >>> isinstance(Echo(), LanguageModel)
        True
    """

    def generate(self, prompts: Sequence[str], max_new_tokens: int = 32) -> list[str]:
        """Greedy continuation of each prompt (the new text only, special tokens removed)."""
        ...

    def logprobs(self, prompts: Sequence[str], continuations: Sequence[str]) -> list[torch.Tensor]:
        """Per-token log-probabilities of ``continuations[i]`` following ``prompts[i]`` (one 1-D tensor each)."""
        ...

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Number of tokens of each text, without special tokens."""
        ...

    def format_chat(self, messages: Sequence[ChatMessage]) -> str:
        """The prompt string for a chat, ending where the assistant's answer starts."""
        ...


def continuation_scores(model: LanguageModel, prompt: str, options: Sequence[str]) -> torch.Tensor:
    """Total log-probability of each option as the continuation of one prompt.

    Args:
        model: any :class:`LanguageModel`.
        prompt: the shared prompt.
        options: candidate continuations (at least one, none empty).

    Returns:
        A float tensor ``[len(options)]`` of summed token log-probabilities.

    Raises:
        ValueError: if ``options`` is empty or holds an empty string.

    Example:
        >>> class Fake:
        ...     def logprobs(self, prompts, continuations):
        ...         return [torch.full((len(c),), -1.0) for c in continuations]
        >>> continuation_scores(Fake(), "Score:", ["1", "22"])
        tensor([-1., -2.])
    """
    if len(options) == 0 or any(len(o) == 0 for o in options):
        raise ValueError(f"options must be a non-empty list of non-empty strings, got {list(options)!r}")
    rows = model.logprobs([prompt] * len(options), list(options))
    return torch.stack([r.sum() for r in rows]).to(torch.float32)
