"""``SelfPlayModule``: one questioner/solver self-play iteration per epoch, the questioner trained by GRPO.

Each training step (one per epoch, see :class:`~lightning_icml26.data.selfplay.SelfPlayDataModule`):

1. every prompt of the batch is repeated ``group_size`` times and the questioner samples one question each
   (a GRPO group per prompt);
2. the solver answers each question ``m`` times; ``p`` is the share of answers that match the verified answer
   (or, without a verifier, the majority answer);
3. the :class:`~lightning_icml26.algorithms.novelty.NoveltyReward` scores every question; advantages are
   group-relative, ``A = (r - mean_group(r)) / (std_group(r) + eps)`` (population std; ``A = 0`` for a group of
   equal rewards); the loss is ``-mean(A * log pi(q))``, minimised by the configured optimizer (plain SGD by
   default, so one step has a closed form for the categorical policy);
4. the questions whose ``p`` lies in the band ``[band_low, band_high]`` train the solver; they are kept in
   :attr:`SelfPlayModule.used_questions` for :class:`~lightning_icml26.callbacks.SeenDetectorCallback`, which adds
   them to the buffer and refits the seen detector; with a memory penalty, every asked question is remembered.

Logged per iteration (and kept in :attr:`SelfPlayModule.history`): held-out solver score, coverage entropy of the
asked questions' categories, seen rate, distinct-2, mean reward, share of questions in the band.

Reconstructed choices: the one-sample-per-prompt group, the std-normalised advantages without clipping or KL
(one policy step per batch, so PPO's ratio is 1) and the band defaults ``[0.25, 0.75]``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
from lightning.pytorch import LightningModule
from torch import Tensor, nn

from lightning_icml26.algorithms.novelty import NoveltyReward, agreement_rate
from lightning_icml26.metrics.functional import coverage_entropy, distinct_n
from lightning_icml26.modules.novelty.protocols import SelfPlayQuestioner, SelfPlaySolver

__all__ = ["SelfPlayModule", "group_advantages"]


def group_advantages(rewards: Tensor, group_size: int, eps: float = 1e-6) -> Tensor:
    """GRPO advantages: rewards standardised within consecutive groups of ``group_size``.

    Example:
        >>> group_advantages(torch.tensor([1.0, 3.0, 2.0, 2.0]), group_size=2)
        tensor([-1.0000,  1.0000,  0.0000,  0.0000])
    """
    if rewards.ndim != 1 or rewards.numel() % group_size:
        raise ValueError(f"rewards ({tuple(rewards.shape)}) must be 1-D with a multiple of group_size={group_size}")
    r = rewards.reshape(-1, group_size)
    adv = (r - r.mean(1, keepdim=True)) / (r.std(1, unbiased=False, keepdim=True) + eps)
    return adv.reshape(-1)


class SelfPlayModule(LightningModule):
    """Questioner/solver self-play with a pluggable questioner reward.

    Args:
        questioner: a :class:`SelfPlayQuestioner` (an ``nn.Module``; its parameters are optimised).
        solver: a :class:`SelfPlaySolver`.
        embed: maps question texts to ``(n, d)`` embeddings (the detector's and memory's input).
        reward: the questioner's :class:`~lightning_icml26.algorithms.novelty.NoveltyReward`.
        categories: maps question texts to integer categories (coverage entropy); ``None`` skips the metric.
        num_categories: number of categories.
        group_size: questions per prompt (GRPO group), at least 2.
        num_samples: solver answers per question ``m``, at least 2.
        band: ``(low, high)`` agreement band of the solver's training data.
        optimizer: factory ``params -> Optimizer`` (default ``SGD(lr=1.0)``).
        seed: seed of the module's generator (questions and answers).

    Example:
        >>> from lightning_icml26.data.selfplay import CategoricalQuestioner, ToySolver, ToyWorld
        >>> w = ToyWorld(3, 2)
        >>> mod = SelfPlayModule(CategoricalQuestioner(w), ToySolver(w), w.embed, NoveltyReward(beta=0.0))
        >>> loss = mod.training_step(["Ask."] * 2, 0)
        >>> len(mod.history), loss.ndim
        (1, 0)
    """

    def __init__(
        self,
        questioner: nn.Module,
        solver: Any,
        embed: Callable[[Sequence[str]], Tensor],
        reward: NoveltyReward,
        categories: Callable[[Sequence[str]], Tensor] | None = None,
        num_categories: int = 1,
        group_size: int = 8,
        num_samples: int = 8,
        band: tuple[float, float] = (0.25, 0.75),
        optimizer: Callable[[Iterable[nn.Parameter]], torch.optim.Optimizer] | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if not isinstance(questioner, SelfPlayQuestioner) or not isinstance(questioner, nn.Module):
            raise TypeError(
                f"questioner must be an nn.Module with sample and log_prob, got {type(questioner).__name__}"
            )
        if not isinstance(solver, SelfPlaySolver):
            raise TypeError(f"solver must offer answer, reference, train_on, evaluate; got {type(solver).__name__}")
        if not isinstance(reward, NoveltyReward):
            raise TypeError(f"reward must be a NoveltyReward, got {type(reward).__name__}")
        if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 2:
            raise ValueError(f"group_size must be an int >= 2, got {group_size!r}")
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 2:
            raise ValueError(f"num_samples (m solver samples) must be an int >= 2, got {num_samples!r}")
        low, high = (float(b) for b in band)
        if not 0.0 <= low <= high <= 1.0:
            raise ValueError(f"band must satisfy 0 <= low <= high <= 1, got {band!r}")
        self.questioner, self.solver, self.embed, self.reward = questioner, solver, embed, reward
        self.categories, self.num_categories = categories, num_categories
        self.group_size, self.num_samples, self.band = group_size, num_samples, (low, high)
        self.optimizer_factory = optimizer
        self.generator = torch.Generator().manual_seed(int(seed))
        self.used_questions: list[str] = []
        self.last_rewards = torch.zeros(0, dtype=torch.float64)
        self.history: list[dict[str, float]] = []

    def configure_optimizers(self) -> torch.optim.Optimizer:
        """The questioner's optimizer (``SGD(lr=1.0)`` unless a factory was given)."""
        params = self.questioner.parameters()
        return self.optimizer_factory(params) if self.optimizer_factory else torch.optim.SGD(params, lr=1.0)

    def training_step(self, batch: Sequence[str], batch_idx: int) -> Tensor:
        """One self-play iteration (see the module docstring); returns the questioner's GRPO loss."""
        prompts = [p for p in batch for _ in range(self.group_size)]
        questions = self.questioner.sample(prompts, self.generator)  # type: ignore[operator]
        answers = self.solver.answer(questions, self.num_samples, self.generator)
        p_hat = agreement_rate(answers, self.solver.reference(questions))
        needs_emb = self.reward.beta > 0 or self.reward.lambda_mem > 0 or self.reward.detector is not None
        emb = self.embed(questions) if needs_emb else None
        terms = self.reward(p_hat, questions, emb)
        self.last_rewards = terms["reward"]
        adv = group_advantages(terms["reward"], self.group_size).to(self.device)
        logp = self.questioner.log_prob(prompts, questions)  # type: ignore[operator]
        loss = -(adv.to(logp.dtype) * logp).mean()
        in_band = (p_hat >= self.band[0]) & (p_hat <= self.band[1])
        self.used_questions = [q for q, keep in zip(questions, in_band.tolist(), strict=True) if keep]
        self.solver.train_on(self.used_questions)
        if self.reward.memory is not None and emb is not None:
            self.reward.memory.add(emb)
        self._log_iteration(questions, emb, terms, in_band)
        return loss

    def _log_iteration(
        self, questions: list[str], emb: Tensor | None, terms: dict[str, Tensor], in_band: Tensor
    ) -> None:
        row = {
            "score": float(self.solver.evaluate()),
            "reward": float(terms["reward"].mean()),
            "in_band": float(in_band.double().mean()),
            "distinct_2": float(distinct_n(questions, 2)),
        }
        if self.categories is not None:
            row["coverage_entropy"] = float(coverage_entropy(self.categories(questions), self.num_categories))
        det = self.reward.detector
        if det is not None and emb is not None:
            row["seen_rate"] = float(det.flags(emb).double().mean())
        self.history.append(row)
        if self._trainer is None:  # called outside a Trainer (e.g. the docstring example)
            return
        for key, value in row.items():
            self.log(f"selfplay/{key}", value, on_step=False, on_epoch=True, batch_size=len(questions))

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Save the generator, history, memory and the last used questions."""
        checkpoint["selfplay"] = {
            "generator": self.generator.get_state(),
            "history": [dict(r) for r in self.history],
            "used_questions": list(self.used_questions),
            "memory": self.reward.memory.state_dict() if self.reward.memory is not None else None,
        }

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Restore what :meth:`on_save_checkpoint` saved (missing keys keep their defaults)."""
        state = checkpoint.get("selfplay", {})
        if "generator" in state:
            self.generator.set_state(state["generator"])
        self.history = [dict(r) for r in state.get("history", [])]
        self.used_questions = list(state.get("used_questions", []))
        if self.reward.memory is not None and state.get("memory") is not None:
            self.reward.memory.load_state_dict(state["memory"])
