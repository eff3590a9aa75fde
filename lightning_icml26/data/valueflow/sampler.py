"""``HierarchicalBatchSampler``: anchor + positives + same-theory negatives, DDP-aware and resumable.

A stage-1 batch holds blocks of one anchor and up to ``positives`` texts of its ``(L1, L2, L3, direction,
theory)`` group, all from one theory, topped up with random texts of the same theory (negatives). The
anchors of an epoch are a seeded permutation split into ``num_replicas`` disjoint shares (one per rank);
each theory's share is cut to whole batches so every rank yields the same number of batches.

Stage 2 (``fractions=(0.5, 0.25, 0.25)``) appends two sub-batches of pairs: two texts of one individual value
(same ``individual_ids``), and two texts of different theories mapped to one cross-theory concept (same
``concept_ids``). Every yielded element is ``(index, part)`` with part 0 (hierarchical), 1 (individual) or
2 (cross-theory); :class:`~lightning_icml26.data.valueflow.datamodule.ValueTextDataset` reads both.

Randomness is drawn from ``numpy`` generators seeded by ``(seed, epoch)`` for the anchor split and by
``(seed, epoch, rank, batch)`` within a batch, so resuming at batch ``b`` needs no replay.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import Sampler

__all__ = ["HierarchicalBatchSampler"]


def _as_long(name: str, value: Any, rows: int | None) -> np.ndarray:
    array = value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else np.asarray(value)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {array.dtype}")
    if rows is not None and array.shape[0] != rows:
        raise ValueError(f"{name} must have {rows} rows, got shape {array.shape}")
    return array.astype(np.int64)


class HierarchicalBatchSampler(Sampler[list[tuple[int, int]]]):
    """Batches of anchors with their label-group positives and same-theory negatives.

    Args:
        levels: ``[N, L]`` integer label ids per level.
        directions: ``[N]`` integer directions.
        theory_ids: ``[N]`` integer theory of each text.
        batch_size: rows per batch (per rank), at least ``2``.
        positives: at most this many positives per anchor (paper: 4), ``>= 1``.
        individual_ids: ``[N]`` ids for the stage-2 individual part (needed when ``fractions[1] > 0``).
        concept_ids: ``[N]`` cross-theory concept ids, ``-1`` for none (needed when ``fractions[2] > 0``).
        fractions: shares of the hierarchical, individual and cross-theory parts, summing to 1.
        num_replicas: number of ranks (default: the process group's size, else 1).
        rank: this rank (default: the process group's rank, else 0).
        seed: base seed.

    Example:
        >>> levels = torch.tensor([[0, 0], [0, 0], [0, 1], [0, 1], [1, 2], [1, 2]] * 2)
        >>> s = HierarchicalBatchSampler(levels, torch.zeros(12, dtype=torch.long), torch.zeros(12, dtype=torch.long),
        ...                              batch_size=4, positives=1, num_replicas=1, rank=0)
        >>> batch = next(iter(s)); len(batch), len(s)
        (4, 6)
    """

    def __init__(
        self,
        levels: Any,
        directions: Any,
        theory_ids: Any,
        batch_size: int,
        positives: int = 4,
        individual_ids: Any = None,
        concept_ids: Any = None,
        fractions: tuple[float, float, float] = (1.0, 0.0, 0.0),
        num_replicas: int | None = None,
        rank: int | None = None,
        seed: int = 0,
    ) -> None:
        lv = _as_long("levels", levels, None)
        if lv.ndim != 2:
            raise ValueError(f"levels must be 2-D [N, L], got shape {lv.shape}")
        n = lv.shape[0]
        self.directions = _as_long("directions", directions, n)
        self.theory_ids = _as_long("theory_ids", theory_ids, n)
        if batch_size < 2:
            raise ValueError(f"batch_size must be >= 2, got {batch_size}")
        if positives < 1:
            raise ValueError(f"positives must be >= 1, got {positives}")
        if len(fractions) != 3 or min(fractions) < 0 or abs(sum(fractions) - 1.0) > 1e-6:
            raise ValueError(f"fractions must be three non-negative shares summing to 1, got {fractions}")
        if num_replicas is None:
            num_replicas = dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
        if rank is None:
            rank = dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
        if num_replicas < 1 or not 0 <= rank < num_replicas:
            raise ValueError(f"rank must be in [0, num_replicas), got rank={rank}, num_replicas={num_replicas}")
        self.batch_size, self.positives, self.seed = batch_size, positives, seed
        self.num_replicas, self.rank = num_replicas, rank
        self.hier_size = int(round(batch_size * fractions[0]))
        self.ind_size = 2 * (int(round(batch_size * fractions[1])) // 2)
        self.theory_size = 2 * ((batch_size - self.hier_size - self.ind_size) // 2)
        if self.hier_size < 2:
            raise ValueError(f"the hierarchical part batch_size * fractions[0] must be >= 2, got {self.hier_size}")
        self.per_batch = max(1, self.hier_size // (positives + 1))
        keys = np.concatenate([lv, self.directions[:, None], self.theory_ids[:, None]], axis=1)
        _, self.group_of = np.unique(keys, axis=0, return_inverse=True)
        self.group_of = self.group_of.reshape(-1)
        self.members = [np.flatnonzero(self.group_of == g) for g in range(int(self.group_of.max()) + 1)]
        self.theories = np.unique(self.theory_ids)
        self.theory_members = {int(t): np.flatnonzero(self.theory_ids == t) for t in self.theories}
        self._pairs_individual = self._pair_pool(individual_ids, "individual_ids", n, self.ind_size, False)
        self._pairs_theory = self._pair_pool(concept_ids, "concept_ids", n, self.theory_size, True)
        self.epoch = 0
        self.start_batch = 0

    def _pair_pool(self, ids: Any, name: str, n: int, size: int, cross: bool) -> list[np.ndarray]:
        if size == 0:
            return []
        if ids is None:
            raise ValueError(f"{name} is needed when its fraction is positive")
        array = _as_long(name, ids, n)
        pool = []
        for value in np.unique(array[array >= 0]):
            members = np.flatnonzero(array == value)
            if len(members) >= 2 and (not cross or len(np.unique(self.theory_ids[members])) >= 2):
                pool.append(members)
        if not pool:
            raise ValueError(f"{name} has no id shared by two texts" + (" of different theories" if cross else ""))
        return pool

    def _plan(self) -> list[np.ndarray]:
        """This rank's anchors of the epoch, one array per batch, in batch order."""
        rng = np.random.default_rng([self.seed, self.epoch])
        order = rng.permutation(len(self.group_of))
        chunks: list[np.ndarray] = []
        step = self.num_replicas * self.per_batch
        for t in self.theories:
            anchors = order[self.theory_ids[order] == t]
            usable = (len(anchors) // step) * step
            mine = anchors[:usable][self.rank :: self.num_replicas]
            chunks.extend(mine[i : i + self.per_batch] for i in range(0, len(mine), self.per_batch))
        shuffle = rng.permutation(len(chunks))
        return [chunks[i] for i in shuffle]

    def __len__(self) -> int:
        """Batches per epoch on this rank (equal on every rank)."""
        step = self.num_replicas * self.per_batch
        return int(sum(len(m) // step for m in self.theory_members.values()))

    def _batch(self, anchors: np.ndarray, index: int) -> list[tuple[int, int]]:
        rng = np.random.default_rng([self.seed, self.epoch, self.rank, index])
        chosen: list[int] = []
        taken: set[int] = set()
        for a in anchors.tolist():
            if a in taken:
                continue
            others = [int(i) for i in rng.permutation(self.members[self.group_of[a]]) if i != a and i not in taken]
            for i in [a, *others[: self.positives]]:
                if len(chosen) < self.hier_size:
                    chosen.append(i)
                    taken.add(i)
        pool = [
            int(i) for i in rng.permutation(self.theory_members[int(self.theory_ids[anchors[0]])]) if i not in taken
        ]
        chosen.extend(pool[: self.hier_size - len(chosen)])
        batch = [(i, 0) for i in chosen]
        for part, size, pairs in (
            (1, self.ind_size, self._pairs_individual),
            (2, self.theory_size, self._pairs_theory),
        ):
            for _ in range(size // 2):
                members = pairs[rng.integers(len(pairs))]
                first = int(rng.choice(members))
                rest = members[members != first]
                if part == 2:
                    rest = rest[self.theory_ids[rest] != self.theory_ids[first]]
                batch.extend([(first, part), (int(rng.choice(rest)), part)])
        return batch

    def __iter__(self) -> Iterator[list[tuple[int, int]]]:
        """Yield this rank's batches of ``(index, part)`` pairs, starting at ``start_batch``."""
        plan = self._plan()
        start, self.start_batch = self.start_batch, 0
        for index in range(start, len(plan)):
            yield self._batch(plan[index], index)

    def set_epoch(self, epoch: int) -> None:
        """Choose the epoch (the Trainer calls this before each epoch)."""
        self.epoch = int(epoch)

    def state_dict(self) -> dict[str, int]:
        """``{"epoch", "start_batch"}``; set ``start_batch`` to the batches already consumed before saving."""
        return {"epoch": self.epoch, "start_batch": self.start_batch}

    def load_state_dict(self, state: dict[str, int]) -> None:
        """Resume: the next iteration starts at batch ``state["start_batch"]`` of ``state["epoch"]``."""
        self.epoch = int(state.get("epoch", 0))
        self.start_batch = int(state.get("start_batch", 0))
