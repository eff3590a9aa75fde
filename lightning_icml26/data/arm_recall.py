"""Generated long-range recall tasks over a 256-token vocabulary: multi-query associative recall and copying.

Both tasks return ``{"input_ids", "labels"}`` (next-token targets, ``-100`` where nothing is scored), like
:class:`lightning_icml26.data.StdlibTextDataModule`, so one decoder trains on either.

* ``"mqar"``: ``num_pairs`` (key, value) pairs, keys drawn without replacement from ``1..127`` and values from
  ``128..255``, then filler token ``0`` up to the query block, then ``num_queries`` of the keys again in random
  order, each followed by its value; the value after each query key is scored. The filler puts at least
  ``seq_len - 2 num_pairs - 2 num_queries`` tokens between the last pair and the first query.
* ``"copy"``: ``num_pairs`` content tokens from ``1..127``, distractors from ``128..255`` up to the separator
  ``0``, then the content again; every copied token after the first is scored (the first is the separator's
  target, also scored).
"""

from __future__ import annotations

import torch
from lightning.pytorch import LightningDataModule
from torch.utils.data import DataLoader, Dataset

from lightning_icml26.data._sampling import EpochSeededSampler

__all__ = ["RECALL_TASKS", "RecallDataModule", "RecallDataset", "make_recall_batch"]

RECALL_TASKS = ("mqar", "copy")
_KEYS, _VALUES = (1, 128), (128, 256)


def make_recall_batch(
    task: str, num: int, seq_len: int, num_pairs: int, num_queries: int | None = None, seed: int = 0
) -> dict[str, torch.Tensor]:
    """``num`` samples of ``task`` as ``{"input_ids", "labels"}`` int64 ``(num, seq_len)`` tensors.

    Args:
        task: ``"mqar"`` or ``"copy"``.
        num: samples.
        seq_len: tokens per sample (the labels are the inputs shifted by one).
        num_pairs: key-value pairs (``"mqar"``, <= 127) or content tokens (``"copy"``).
        num_queries: queries of ``"mqar"`` (default ``num_pairs``, <= num_pairs).
        seed: generator seed.

    Example:
        >>> b = make_recall_batch("mqar", 2, seq_len=16, num_pairs=3)
        >>> b["input_ids"].shape, int((b["labels"] >= 0).sum())
        (torch.Size([2, 16]), 6)
    """
    if task not in RECALL_TASKS:
        raise ValueError(f"task must be one of {RECALL_TASKS}, got {task!r}")
    queries = num_pairs if num_queries is None else num_queries
    for name, value in (("num", num), ("seq_len", seq_len), ("num_pairs", num_pairs), ("num_queries", queries)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if task == "mqar" and (num_pairs > _KEYS[1] - _KEYS[0] or queries > num_pairs):
        raise ValueError(f"mqar needs num_queries <= num_pairs <= 127, got {queries!r} and {num_pairs!r}")
    need = 2 * num_pairs + 2 * queries if task == "mqar" else 2 * num_pairs + 1
    if seq_len + 1 < need:
        raise ValueError(f"seq_len={seq_len} is too short for task={task!r} with these counts (needs {need - 1})")
    g = torch.Generator().manual_seed(seed)
    seqs = torch.zeros(num, seq_len + 1, dtype=torch.long)
    scored = torch.zeros(num, seq_len + 1, dtype=torch.bool)
    for i in range(num):
        if task == "mqar":
            keys = torch.randperm(_KEYS[1] - _KEYS[0], generator=g)[:num_pairs] + _KEYS[0]
            vals = torch.randint(*_VALUES, (num_pairs,), generator=g)
            seqs[i, 0 : 2 * num_pairs : 2], seqs[i, 1 : 2 * num_pairs : 2] = keys, vals
            ask = torch.randperm(num_pairs, generator=g)[:queries]
            start = seq_len + 1 - 2 * queries
            seqs[i, start::2], seqs[i, start + 1 :: 2] = keys[ask], vals[ask]
            scored[i, start + 1 :: 2] = True
        else:
            content = torch.randint(*_KEYS, (num_pairs,), generator=g)
            start = seq_len + 1 - num_pairs
            seqs[i, :num_pairs] = content
            seqs[i, num_pairs : start - 1] = torch.randint(*_VALUES, (start - 1 - num_pairs,), generator=g)
            seqs[i, start - 1] = 0
            seqs[i, start:] = content
            scored[i, start:] = True
    labels = seqs[:, 1:].masked_fill(~scored[:, 1:], -100)
    return {"input_ids": seqs[:, :-1].clone(), "labels": labels}


class RecallDataset(Dataset):
    """A fixed, seeded set of recall samples (see :func:`make_recall_batch`).

    Example:
        >>> ds = RecallDataset("copy", num=4, seq_len=32, num_pairs=8)
        >>> len(ds), ds[0]["input_ids"].shape
        (4, torch.Size([32]))
    """

    def __init__(
        self, task: str, num: int, seq_len: int, num_pairs: int, num_queries: int | None = None, seed: int = 0
    ):
        self.tensors = make_recall_batch(task, num, seq_len, num_pairs, num_queries, seed)

    def __len__(self) -> int:
        """Number of samples."""
        return self.tensors["input_ids"].shape[0]

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        """``{"input_ids", "labels"}`` of one sample."""
        return {k: v[index] for k, v in self.tensors.items()}


class RecallDataModule(LightningDataModule):
    """Train / validation / test loaders of generated MQAR or copy-with-distractors samples (disjoint seeds).

    The training order is a permutation drawn from ``seed`` and the epoch, so a run resumed at an epoch boundary
    sees the same batches as an uninterrupted one.

    Args:
        task: ``"mqar"`` or ``"copy"``.
        seq_len: tokens per sample (the issue's range is 512 to 2048).
        num_pairs: pairs (``"mqar"``) or content tokens (``"copy"``).
        num_queries: queries of ``"mqar"``.
        num_train: training samples.
        num_val: validation samples (also the test samples, from a third seed).
        batch_size: samples per batch.
        seed: base seed; train, validation and test use ``seed``, ``seed + 1`` and ``seed + 2``.

    Example:
        >>> dm = RecallDataModule(seq_len=64, num_pairs=8, num_train=8, num_val=4, batch_size=4)
        >>> dm.setup("fit")
        >>> next(iter(dm.train_dataloader()))["labels"].shape
        torch.Size([4, 64])
    """

    def __init__(
        self,
        task: str = "mqar",
        seq_len: int = 512,
        num_pairs: int = 32,
        num_queries: int | None = None,
        num_train: int = 2048,
        num_val: int = 256,
        batch_size: int = 16,
        seed: int = 0,
    ) -> None:
        super().__init__()
        make_recall_batch(task, 1, seq_len, num_pairs, num_queries, seed)  # validates the arguments
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.task, self.seq_len, self.num_pairs, self.num_queries = task, seq_len, num_pairs, num_queries
        self.num_train, self.num_val, self.batch_size, self.seed = num_train, num_val, batch_size, seed
        self.vocab_size = 256
        self.sets: dict[str, RecallDataset] = {}

    def setup(self, stage: str | None = None) -> None:
        """Generate the three splits (once)."""
        if self.sets:
            return
        for offset, (name, num) in enumerate(
            (("train", self.num_train), ("val", self.num_val), ("test", self.num_val))
        ):
            self.sets[name] = RecallDataset(
                self.task, num, self.seq_len, self.num_pairs, self.num_queries, self.seed + offset
            )

    def _loader(self, name: str, shuffle: bool) -> DataLoader:
        self.setup()
        data = self.sets[name]
        sampler = EpochSeededSampler(len(data), self.seed) if shuffle else None
        return DataLoader(data, batch_size=self.batch_size, sampler=sampler, drop_last=shuffle)

    def train_dataloader(self) -> DataLoader:
        """Shuffled training batches."""
        return self._loader("train", True)

    def val_dataloader(self) -> DataLoader:
        """Validation batches."""
        return self._loader("val", False)

    def test_dataloader(self) -> DataLoader:
        """Test batches."""
        return self._loader("test", False)
