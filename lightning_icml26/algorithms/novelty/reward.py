"""The questioner's reward: uncertainty, batch repetition penalty, memory penalty and gated calibrated novelty.

``r = r_unc - lambda_rep * r_rep - lambda_mem * r_mem + beta * r_nov * 1[0 < p < 1]``

- ``r_unc = 1 - 2 |p - 1/2|`` (R-Zero's uncertainty reward), ``p`` the solver's agreement rate on the question
  (the share of ``m`` sampled answers that are correct when a verifier exists, else the share agreeing with the
  majority answer, :func:`agreement_rate`).
- ``r_rep``: the questions of the batch are clustered by agglomerative clustering (average linkage) on the
  sentence-BLEU distance ``1 - (BLEU(a, b) + BLEU(b, a)) / 2`` with a distance threshold; a question's penalty is
  its cluster's size over the batch size (R-Zero's repetition penalty).
- ``r_mem``: an R-Diverse-style persistent memory penalty, the largest cosine similarity of the question's
  embedding to every question remembered so far (:class:`MemoryPenalty`); a baseline, off by default.
- ``r_nov = 1 - F(D(emb(q)))``: the calibrated novelty of :class:`CalibratedSeenDetector` (zero until the buffer
  holds ``min_buffer`` problems).
- The gate ``1[0 < p < 1]`` stops novelty from paying for questions the solver never or always answers.

Reconstructed choices (the motivating paper was not located): the additive combination, the gate on the
solver's agreement rate, the symmetrised BLEU distance, average linkage and the default threshold ``0.5``,
the max-cosine memory penalty. Setting ``beta = 0`` (and ``lambda_rep = 0``) gives the baselines.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor, nn
from torchmetrics.functional.text import bleu_score

from lightning_icml26._optional import require
from lightning_icml26.algorithms.novelty.calibration import CalibratedSeenDetector
from lightning_icml26.algorithms.novelty.detectors import check_embeddings

__all__ = [
    "MemoryPenalty",
    "NoveltyReward",
    "agreement_rate",
    "bleu_distance_matrix",
    "repetition_penalty",
    "uncertainty_reward",
]


def _check_rate(p_hat: Tensor) -> Tensor:
    if not isinstance(p_hat, Tensor) or p_hat.ndim != 1:
        raise ValueError(f"p_hat must be a 1-D tensor of agreement rates, got {getattr(p_hat, 'shape', p_hat)!r}")
    p = p_hat.detach().to(torch.float64)
    if bool(((p < 0) | (p > 1) | ~torch.isfinite(p)).any()):
        raise ValueError(f"p_hat must lie in [0, 1], got {p_hat.tolist()}")
    return p


def agreement_rate(answers: Sequence[Sequence[str]], reference: Sequence[str] | None = None) -> Tensor:
    """Share of each question's ``m >= 2`` sampled answers that agree with the reference (or the majority).

    Args:
        answers: one list of ``m`` answers per question (``m >= 2``, the same for every question).
        reference: the verified answer of each question; ``None`` uses each question's majority answer
            (ties broken by first occurrence).

    Returns:
        A float64 tensor ``(B,)`` in ``[0, 1]``.

    Raises:
        ValueError: for ``m < 2`` solver samples, ragged answer lists or a reference of the wrong length.

    Example:
        >>> agreement_rate([["4", "4", "5", "4"], ["a", "b", "c", "d"]])
        tensor([0.7500, 0.2500], dtype=torch.float64)
        >>> agreement_rate([["4", "5"]], reference=["5"])
        tensor([0.5000], dtype=torch.float64)
    """
    sizes = {len(a) for a in answers}
    if len(sizes) > 1:
        raise ValueError(f"answers must hold the same number m of samples per question, got sizes {sorted(sizes)}")
    m = sizes.pop() if sizes else 0
    if answers and m < 2:
        raise ValueError(f"m (solver samples per question) must be >= 2, got m={m}")
    if reference is not None and len(reference) != len(answers):
        raise ValueError(f"reference has {len(reference)} entries for {len(answers)} questions")
    rates = []
    for i, row in enumerate(answers):
        target = reference[i] if reference is not None else Counter(row).most_common(1)[0][0]
        rates.append(sum(a == target for a in row) / m)
    return torch.tensor(rates, dtype=torch.float64)


def uncertainty_reward(p_hat: Tensor) -> Tensor:
    """R-Zero's uncertainty reward ``1 - 2 |p - 1/2|`` (1 at ``p = 1/2``, 0 at ``p`` in {0, 1}).

    Example:
        >>> uncertainty_reward(torch.tensor([0.0, 0.25, 0.5, 1.0]))
        tensor([0.0000, 0.5000, 1.0000, 0.0000], dtype=torch.float64)
    """
    return 1.0 - 2.0 * (_check_rate(p_hat) - 0.5).abs()


def bleu_distance_matrix(questions: Sequence[str], n_gram: int = 4) -> Tensor:
    """Pairwise ``1 - (BLEU(a, b) + BLEU(b, a)) / 2`` with torchmetrics' smoothed sentence BLEU.

    Example:
        >>> bleu_distance_matrix(["a b c d", "a b c d", "x y z w"], n_gram=2)
        tensor([[0., 0., 1.],
                [0., 0., 1.],
                [1., 1., 0.]], dtype=torch.float64)
    """
    if isinstance(n_gram, bool) or not isinstance(n_gram, int) or n_gram < 1:
        raise ValueError(f"n_gram must be a positive int, got {n_gram!r}")
    uniq = sorted(set(questions))
    index = {q: i for i, q in enumerate(uniq)}
    sim = np.eye(len(uniq))
    for i, a in enumerate(uniq):
        for j in range(i + 1, len(uniq)):
            b = uniq[j]
            ab = float(bleu_score([a], [[b]], n_gram=n_gram, smooth=True))
            ba = float(bleu_score([b], [[a]], n_gram=n_gram, smooth=True))
            sim[i, j] = sim[j, i] = (ab + ba) / 2
    idx = np.array([index[q] for q in questions], dtype=np.int64)
    return torch.from_numpy(1.0 - sim[np.ix_(idx, idx)])


def repetition_penalty(questions: Sequence[str], threshold: float = 0.5, n_gram: int = 4) -> Tensor:
    """R-Zero's batch repetition penalty: cluster size over batch size, clusters from BLEU distance.

    Args:
        questions: the batch's questions (at least 2).
        threshold: agglomerative clustering distance threshold (average linkage), in ``(0, 1]``.
        n_gram: BLEU order.

    Returns:
        A float64 tensor ``(B,)``.

    Example:
        >>> repetition_penalty(["2 + 2 = ?", "2 + 2 = ?", "is a linked to b ?"], n_gram=2)
        tensor([0.6667, 0.6667, 0.3333], dtype=torch.float64)
    """
    if len(questions) < 2:
        raise ValueError(f"questions must hold at least 2 questions to cluster, got {len(questions)}")
    if not 0.0 < float(threshold) <= 1.0:
        raise ValueError(f"threshold must lie in (0, 1], got {threshold!r}")
    cluster = require("sklearn.cluster", extra="novelty", purpose="repetition_penalty")
    dist = bleu_distance_matrix(questions, n_gram).numpy()
    labels = cluster.AgglomerativeClustering(
        n_clusters=None, metric="precomputed", linkage="average", distance_threshold=float(threshold)
    ).fit_predict(dist)
    sizes = np.bincount(labels)
    return torch.from_numpy(sizes[labels] / len(questions)).to(torch.float64)


class MemoryPenalty:
    """R-Diverse-style persistent memory: penalise questions similar to any question asked before.

    The penalty is the largest cosine similarity (clipped at 0) between a question's embedding and the
    remembered ones (0 while the memory is empty). The memory keeps everything (``capacity=None``) or the
    newest ``capacity`` rows.

    Example:
        >>> mem = MemoryPenalty()
        >>> mem.add(torch.tensor([[1.0, 0.0]]))
        >>> mem.penalty(torch.tensor([[1.0, 0.0], [0.0, 2.0]]))
        tensor([1., 0.], dtype=torch.float64)
    """

    def __init__(self, capacity: int | None = None) -> None:
        if capacity is not None and (isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1):
            raise ValueError(f"capacity must be a positive int or None, got {capacity!r}")
        self.capacity = capacity
        self.memory = torch.zeros(0, 0, dtype=torch.float64)

    def add(self, embeddings: Tensor) -> None:
        """Remember ``(n, d)`` embeddings."""
        x = check_embeddings(embeddings, self.memory.shape[1] if self.memory.numel() else None)
        self.memory = torch.cat([self.memory.reshape(-1, x.shape[1]), x])
        if self.capacity is not None:
            self.memory = self.memory[-self.capacity :]

    def penalty(self, embeddings: Tensor) -> Tensor:
        """Largest cosine similarity to the memory, clipped at 0 (zeros while empty)."""
        x = check_embeddings(embeddings, self.memory.shape[1] if self.memory.numel() else None)
        if self.memory.numel() == 0:
            return torch.zeros(x.shape[0], dtype=torch.float64)
        sim = nn.functional.normalize(x, dim=1) @ nn.functional.normalize(self.memory, dim=1).T
        return sim.max(dim=1).values.clamp_min(0.0)

    def state_dict(self) -> dict[str, Tensor]:
        """The remembered rows."""
        return {"memory": self.memory.clone()}

    def load_state_dict(self, state: dict[str, Tensor]) -> None:
        """Restore :meth:`state_dict`."""
        self.memory = state.get("memory", torch.zeros(0, 0, dtype=torch.float64)).to(torch.float64)


class NoveltyReward(nn.Module):
    """Per-question questioner reward with switchable terms (see the module docstring for the formula).

    Args:
        detector: the calibrated seen detector (needed when ``beta > 0``).
        beta: weight of the gated novelty term (``>= 0``).
        lambda_rep: weight of the batch repetition penalty (``>= 0``).
        lambda_mem: weight of the memory penalty (``>= 0``; needs ``memory``).
        memory: the :class:`MemoryPenalty` bank.
        threshold: BLEU distance threshold of the repetition clustering.
        n_gram: BLEU order.
        gate: whether novelty is paid only for ``0 < p < 1``.

    Example:
        >>> reward = NoveltyReward(beta=0.0, lambda_rep=0.0)  # uncertainty only
        >>> reward(torch.tensor([0.5, 1.0]))["reward"]
        tensor([1., 0.], dtype=torch.float64)
    """

    def __init__(
        self,
        detector: CalibratedSeenDetector | None = None,
        beta: float = 0.5,
        lambda_rep: float = 1.0,
        lambda_mem: float = 0.0,
        memory: MemoryPenalty | None = None,
        threshold: float = 0.5,
        n_gram: int = 4,
        gate: bool = True,
    ) -> None:
        super().__init__()
        for name, value in (("beta", beta), ("lambda_rep", lambda_rep), ("lambda_mem", lambda_mem)):
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if beta > 0 and detector is None:
            raise ValueError(f"beta={beta} > 0 needs a detector (CalibratedSeenDetector), got None")
        if lambda_mem > 0 and memory is None:
            raise ValueError(f"lambda_mem={lambda_mem} > 0 needs a memory (MemoryPenalty), got None")
        if not 0.0 < float(threshold) <= 1.0:
            raise ValueError(f"threshold must lie in (0, 1], got {threshold!r}")
        if lambda_rep > 0:  # the repetition penalty clusters with scikit-learn: a missing one is named here
            require("sklearn.cluster", extra="novelty", purpose="NoveltyReward(lambda_rep > 0)")
        self.detector, self.memory = detector, memory
        self.beta, self.lambda_rep, self.lambda_mem = float(beta), float(lambda_rep), float(lambda_mem)
        self.threshold, self.n_gram, self.gate = float(threshold), n_gram, bool(gate)

    def forward(
        self, p_hat: Tensor, questions: Sequence[str] | None = None, embeddings: Tensor | None = None
    ) -> dict[str, Tensor]:
        """Rewards of one batch of questions.

        Args:
            p_hat: ``(B,)`` solver agreement rates in ``[0, 1]``.
            questions: the question texts (needed when ``lambda_rep > 0``).
            embeddings: ``(B, d)`` question embeddings (needed when ``beta > 0`` or ``lambda_mem > 0``).

        Returns:
            ``{"reward", "uncertainty", "repetition", "memory", "novelty", "gate"}``, each float64 ``(B,)``.
        """
        p = _check_rate(p_hat)
        b = p.shape[0]
        zeros = torch.zeros(b, dtype=torch.float64)
        unc = uncertainty_reward(p)
        rep, mem, nov = zeros, zeros, zeros
        if self.lambda_rep > 0:
            if questions is None or len(questions) != b:
                raise ValueError(f"questions must hold the batch's {b} texts when lambda_rep > 0, got {questions!r}")
            rep = repetition_penalty(questions, self.threshold, self.n_gram) if b > 1 else torch.ones(1).double()
        if self.beta > 0 or self.lambda_mem > 0:
            if embeddings is None or embeddings.shape[0] != b:
                raise ValueError(f"embeddings must have {b} rows when beta > 0 or lambda_mem > 0, got {embeddings!r}")
            if self.beta > 0 and self.detector is not None:
                nov = self.detector.novelty(embeddings)
            if self.lambda_mem > 0 and self.memory is not None:
                mem = self.memory.penalty(embeddings)
        gate = ((p > 0) & (p < 1)).to(torch.float64) if self.gate else torch.ones(b, dtype=torch.float64)
        total = unc - self.lambda_rep * rep - self.lambda_mem * mem + self.beta * nov * gate
        return {"reward": total, "uncertainty": unc, "repetition": rep, "memory": mem, "novelty": nov, "gate": gate}
