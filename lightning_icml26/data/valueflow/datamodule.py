"""``ValueTextDataModule``: generated value texts served in hierarchical batches (train) and in order (held out)."""

from __future__ import annotations

from typing import Any

import torch
from lightning.pytorch import LightningDataModule
from torch.utils.data import DataLoader, Dataset

from lightning_icml26.data.valueflow.sampler import HierarchicalBatchSampler
from lightning_icml26.data.valueflow.texts import ValueTextCorpus, make_value_texts

__all__ = ["ValueTextDataModule", "ValueTextDataset", "collate_value_texts"]


class ValueTextDataset(Dataset):
    """Rows of a :class:`ValueTextCorpus`; an ``(index, part)`` key masks the labels the part does not use.

    Part 0 keeps ``levels``/``directions`` (hierarchical loss), part 1 keeps ``individual_id``, part 2 keeps
    ``concept_id``; the other label fields read ``-1``. A plain integer key is part 0.

    Example:
        >>> ds = ValueTextDataset(make_value_texts(per_label=1, theories=("mft",)))
        >>> ds[(0, 1)]["levels"].tolist(), ds[(0, 1)]["individual_id"].item() >= 0
        ([-1, -1, -1], True)
    """

    def __init__(self, corpus: ValueTextCorpus) -> None:
        self.corpus = corpus

    def __len__(self) -> int:
        """Number of texts."""
        return len(self.corpus)

    def __getitem__(self, key: int | tuple[int, int]) -> dict[str, Any]:
        """The text and its labels (masked by part)."""
        index, part = (int(key[0]), int(key[1])) if isinstance(key, tuple | list) else (int(key), 0)
        if part not in (0, 1, 2):
            raise ValueError(f"part must be 0, 1 or 2, got {part}")
        c = self.corpus
        none = torch.tensor(-1)
        return {
            "text": c.texts[index],
            "levels": c.levels[index] if part == 0 else torch.full_like(c.levels[index], -1),
            "direction": c.directions[index],
            "individual_id": c.individual_ids[index] if part == 1 else none,
            "concept_id": c.concept_ids[index] if part == 2 else none,
            "theory_id": c.theory_ids[index],
            "intensity": c.intensities[index],
        }


def collate_value_texts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Stack the rows of :class:`ValueTextDataset` (``text`` stays a list of strings).

    Example:
        >>> ds = ValueTextDataset(make_value_texts(per_label=1, theories=("mft",)))
        >>> batch = collate_value_texts([ds[0], ds[1]])
        >>> len(batch["text"]), batch["levels"].shape
        (2, torch.Size([2, 3]))
    """
    out: dict[str, Any] = {"text": [r["text"] for r in rows]}
    for key in ("levels", "direction", "individual_id", "concept_id", "theory_id", "intensity"):
        out[key] = torch.stack([r[key] for r in rows])
    return out


class ValueTextDataModule(LightningDataModule):
    """Generated value texts (:func:`make_value_texts`): hierarchical training batches, held-out validation.

    The test split is held-out texts drawn with seed ``seed + 1000`` (``heldout_per_label`` per label): other
    subjects than the validation texts, never seen by a choice.

    The training batch sampler partitions anchors across ranks itself (from the Trainer's world size and
    rank): with several devices, build the Trainer with ``use_distributed_sampler=False`` (Lightning cannot
    inject its own sampler into a custom batch sampler and says so).

    Args:
        per_label: training texts per label path and direction.
        heldout_per_label: held-out texts (other templates and subjects) per label and direction.
        batch_size: rows per training batch per rank (paper: 32 in stage 1, 64 in stage 2).
        stage: 1 (hierarchical batches only) or 2 (half hierarchical, a quarter each of individual and
            cross-theory pairs).
        positives: positives per anchor (paper: 4).
        theories: subset of the four theories (default all).
        seed: seed of the corpus and of the sampler.

    Example:
        >>> dm = ValueTextDataModule(per_label=2, heldout_per_label=1, batch_size=8, theories=("mft",))
        >>> dm.setup("fit"); batch = next(iter(dm.train_dataloader()))
        >>> len(batch["text"]), int(batch["theory_id"].unique().numel())
        (8, 1)
    """

    def __init__(
        self,
        per_label: int = 8,
        heldout_per_label: int = 4,
        batch_size: int = 32,
        stage: int = 1,
        positives: int = 4,
        theories: tuple[str, ...] | list[str] | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if stage not in (1, 2):
            raise ValueError(f"stage must be 1 or 2, got {stage}")
        self.per_label, self.heldout_per_label = per_label, heldout_per_label
        self.batch_size, self.stage, self.positives = batch_size, stage, positives
        self.theories = None if theories is None else tuple(theories)
        self.seed = seed
        self.train_corpus: ValueTextCorpus | None = None
        self.heldout_corpus: ValueTextCorpus | None = None
        self.test_corpus: ValueTextCorpus | None = None

    def setup(self, stage: str | None = None) -> None:
        """Generate both corpora (cheap, deterministic)."""
        self.train_corpus = make_value_texts(self.per_label, self.seed, "train", self.theories)
        self.heldout_corpus = make_value_texts(self.heldout_per_label, self.seed, "heldout", self.theories)
        self.test_corpus = make_value_texts(self.heldout_per_label, self.seed + 1000, "heldout", self.theories)

    def _replicas(self) -> tuple[int, int]:
        trainer = self._trainer if hasattr(self, "_trainer") else None
        if trainer is not None:
            return int(trainer.world_size), int(trainer.global_rank)
        return 1, 0

    def batch_sampler(self) -> HierarchicalBatchSampler:
        """The training batch sampler of this rank."""
        if self.train_corpus is None:
            self.setup("fit")
        assert self.train_corpus is not None
        c = self.train_corpus
        replicas, rank = self._replicas()
        return HierarchicalBatchSampler(
            c.levels,
            c.directions,
            c.theory_ids,
            self.batch_size,
            self.positives,
            individual_ids=c.individual_ids,
            concept_ids=c.concept_ids,
            fractions=(1.0, 0.0, 0.0) if self.stage == 1 else (0.5, 0.25, 0.25),
            num_replicas=replicas,
            rank=rank,
            seed=self.seed,
        )

    def train_dataloader(self) -> DataLoader:
        """Hierarchical batches (see :class:`HierarchicalBatchSampler`)."""
        sampler = self.batch_sampler()
        assert self.train_corpus is not None
        return DataLoader(ValueTextDataset(self.train_corpus), batch_sampler=sampler, collate_fn=collate_value_texts)

    def val_dataloader(self) -> DataLoader:
        """Held-out texts in order."""
        if self.heldout_corpus is None:
            self.setup("validate")
        assert self.heldout_corpus is not None
        return DataLoader(
            ValueTextDataset(self.heldout_corpus), batch_size=max(self.batch_size, 2), collate_fn=collate_value_texts
        )

    def test_dataloader(self) -> DataLoader:
        """Test texts (held-out templates, seed ``seed + 1000``) in order, 128 per batch."""
        if self.test_corpus is None:
            self.setup("test")
        assert self.test_corpus is not None
        return DataLoader(ValueTextDataset(self.test_corpus), batch_size=128, collate_fn=collate_value_texts)
