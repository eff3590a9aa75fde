"""What :class:`SelfPlayModule` asks of its questioner and solver (a toy policy and an LLM share the code)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import torch
from torch import Tensor

__all__ = ["SelfPlayQuestioner", "SelfPlaySolver"]


@runtime_checkable
class SelfPlayQuestioner(Protocol):
    """A question-writing policy: sampling and differentiable log-probabilities.

    Example:
        >>> from lightning_icml26.data.selfplay import CategoricalQuestioner, ToyWorld
        >>> isinstance(CategoricalQuestioner(ToyWorld(2, 2)), SelfPlayQuestioner)
        True
    """

    def sample(self, prompts: Sequence[str], generator: torch.Generator) -> list[str]:
        """One sampled question per prompt."""
        ...

    def log_prob(self, prompts: Sequence[str], questions: Sequence[str]) -> Tensor:
        """Differentiable total log-probability ``(n,)`` of each question after its prompt."""
        ...


@runtime_checkable
class SelfPlaySolver(Protocol):
    """A solver: sampled answers, optional verified answers, one training iteration, a held-out score.

    Example:
        >>> from lightning_icml26.data.selfplay import ToySolver, ToyWorld
        >>> isinstance(ToySolver(ToyWorld(2, 2)), SelfPlaySolver)
        True
    """

    def answer(self, questions: Sequence[str], m: int, generator: torch.Generator) -> list[list[str]]:
        """``m`` sampled answers per question."""
        ...

    def reference(self, questions: Sequence[str]) -> list[str] | None:
        """Verified answers, or ``None`` (then agreement is with the majority answer)."""
        ...

    def train_on(self, questions: Sequence[str]) -> None:
        """Train on the selected questions (one self-play iteration)."""
        ...

    def evaluate(self) -> float:
        """Held-out score in points."""
        ...
