"""A categorical toy questioner behind the :class:`~lightning_icml26.llm.LanguageModel` protocol.

The policy is a softmax over the ``K * L`` (template, difficulty) cells of a :class:`ToyWorld`; a question is a
cell drawn from it and a variant drawn uniformly, so ``log pi(q) = log softmax(theta)[cell] - log V``. Besides
the protocol's greedy :meth:`CategoricalQuestioner.generate` and detached :meth:`CategoricalQuestioner.logprobs`,
it offers the two calls a policy-gradient questioner needs: :meth:`CategoricalQuestioner.sample` and the
differentiable :meth:`CategoricalQuestioner.log_prob`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from lightning_icml26.data.selfplay.world import ToyWorld
from lightning_icml26.llm import ChatMessage

__all__ = ["CategoricalQuestioner"]


class CategoricalQuestioner(nn.Module):
    """Softmax policy over the cells of a toy world (the prompt is ignored: one context).

    Args:
        world: the :class:`ToyWorld`.

    Example:
        >>> from lightning_icml26.llm import LanguageModel
        >>> pol = CategoricalQuestioner(ToyWorld(num_difficulties=2, num_variants=3))
        >>> isinstance(pol, LanguageModel)
        True
        >>> q = pol.sample(["ask"], torch.Generator().manual_seed(0))
        >>> round(float(pol.log_prob(["ask"], q)[0].detach().exp()), 4)  # 1 / (K L V)
        0.0278
    """

    def __init__(self, world: ToyWorld) -> None:
        super().__init__()
        self.world = world
        self.logits = nn.Parameter(torch.zeros(world.num_cells, dtype=torch.float64))

    def probs(self) -> Tensor:
        """Cell probabilities ``(K * L,)``."""
        return torch.softmax(self.logits.detach(), 0)

    def sample(self, prompts: Sequence[str], generator: torch.Generator) -> list[str]:
        """One sampled question per prompt."""
        cells = torch.multinomial(self.probs(), len(prompts), replacement=True, generator=generator)
        variants = torch.randint(0, self.world.num_variants, (len(prompts),), generator=generator)
        lv = self.world.num_difficulties
        return [self.world.question(int(c) // lv, int(c) % lv, int(v)) for c, v in zip(cells, variants, strict=True)]

    def log_prob(self, prompts: Sequence[str], questions: Sequence[str]) -> Tensor:
        """Differentiable ``log pi(q)`` of each question ``(n,)``."""
        if len(prompts) != len(questions):
            raise ValueError(f"prompts ({len(prompts)}) and questions ({len(questions)}) must have the same length")
        cells = self.world.cells(questions).to(self.logits.device)
        return torch.log_softmax(self.logits, 0)[cells] - math.log(self.world.num_variants)

    # ---------------------------------------------------------------- the LanguageModel protocol
    def generate(self, prompts: Sequence[str], max_new_tokens: int = 32) -> list[str]:
        """Greedy: the most likely cell's first variant, for every prompt."""
        cell = int(self.probs().argmax())
        lv = self.world.num_difficulties
        return [self.world.question(cell // lv, cell % lv, 0)] * len(prompts)

    def logprobs(self, prompts: Sequence[str], continuations: Sequence[str]) -> list[Tensor]:
        """``log pi(q)`` as a one-token sequence per continuation (detached)."""
        return [lp.detach().reshape(1) for lp in self.log_prob(prompts, continuations)]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Whitespace-separated words."""
        return [len(t.split()) for t in texts]

    def format_chat(self, messages: Sequence[ChatMessage]) -> str:
        """The messages' contents joined by newlines."""
        return "\n".join(m["content"] for m in messages)
