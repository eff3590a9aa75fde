"""Byte-level language-modelling data from the Python standard library's own source files.

The corpus is real text present wherever Python is installed (no download): the ``*.py`` files
of ``sysconfig.get_paths()["stdlib"]``, read as bytes (vocabulary 256, no tokenizer, nothing downloaded).
Files are read in sorted order, so every process of a multi-process run on the same Python installation
builds the same tensors. Machines with different Python versions read different files: multi-node runs
should use the same Python build on every node (or pass ``root`` to a shared copy).
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

import torch
from lightning.pytorch import LightningDataModule
from torch.utils.data import DataLoader, Dataset

from lightning_icml26.data._sampling import EpochSeededSampler

__all__ = ["ByteChunkDataset", "StdlibTextDataModule", "load_stdlib_bytes"]

VOCAB_SIZE = 256


def load_stdlib_bytes(
    max_bytes: int = 1_000_000, root: str | Path | None = None, recursive: bool = False
) -> torch.Tensor:
    """Concatenate the bytes of the standard library's ``*.py`` files (sorted by path).

    Args:
        max_bytes: stop once this many bytes are read (the last file is cut), positive.
        root: folder to read; defaults to ``sysconfig.get_paths()["stdlib"]``.
        recursive: also read sub-folders (``site-packages`` is always skipped).

    Returns:
        A ``uint8`` tensor of at most ``max_bytes`` bytes; files are separated by a NUL byte.

    Raises:
        ValueError: if ``max_bytes`` is not positive or the folder holds no ``*.py`` file.

    Example:
        >>> data = load_stdlib_bytes(max_bytes=1000)
        >>> data.dtype, data.numel()
        (torch.uint8, 1000)
    """
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be positive, got {max_bytes}")
    folder = Path(root) if root is not None else Path(sysconfig.get_paths()["stdlib"])
    pattern = folder.rglob("*.py") if recursive else folder.glob("*.py")
    files = sorted(p for p in pattern if "site-packages" not in p.relative_to(folder).parts)
    if not files:
        raise ValueError(f"root={str(folder)!r} holds no *.py file")
    chunks: list[bytes] = []
    total = 0
    for path in files:
        blob = path.read_bytes() + b"\x00"
        chunks.append(blob[: max_bytes - total])
        total += len(chunks[-1])
        if total >= max_bytes:
            break
    return torch.frombuffer(bytearray(b"".join(chunks)), dtype=torch.uint8).clone()


class ByteChunkDataset(Dataset):
    """Non-overlapping next-byte prediction samples cut from a byte tensor.

    Sample ``i`` covers bytes ``[i * seq_len, (i + 1) * seq_len + 1)``: ``input_ids`` are the first ``seq_len``
    of them and ``labels`` the last ``seq_len`` (already shifted by one, so a context-parallel strategy can
    shard both along the sequence without losing the targets at shard borders).

    Args:
        data: a 1-D integer tensor of byte values.
        seq_len: tokens per sample, positive.

    Example:
        >>> ds = ByteChunkDataset(torch.arange(10, dtype=torch.uint8), seq_len=4)
        >>> len(ds), ds[1]["input_ids"].tolist(), ds[1]["labels"].tolist()
        (2, [4, 5, 6, 7], [5, 6, 7, 8])
    """

    def __init__(self, data: torch.Tensor, seq_len: int) -> None:
        if seq_len <= 0:
            raise ValueError(f"seq_len must be positive, got {seq_len}")
        if data.ndim != 1:
            raise ValueError(f"data must be 1-D, got shape {tuple(data.shape)}")
        if data.numel() < seq_len + 1:
            raise ValueError(f"data holds {data.numel()} tokens, fewer than seq_len + 1 = {seq_len + 1}")
        self.data = data.long()
        self.seq_len = seq_len

    def __len__(self) -> int:
        """Number of samples."""
        return (self.data.numel() - 1) // self.seq_len

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        """``{"input_ids": (seq_len,), "labels": (seq_len,)}`` int64 tensors."""
        if not 0 <= index < len(self):
            raise IndexError(f"index {index} out of range for {len(self)} samples")
        start = index * self.seq_len
        window = self.data[start : start + self.seq_len + 1]
        return {"input_ids": window[:-1], "labels": window[1:]}


class StdlibTextDataModule(LightningDataModule):
    """Byte-level causal-LM loaders over the Python standard library's source (see :func:`load_stdlib_bytes`).

    The first ``1 - val_fraction`` of the bytes train, the rest validate. Nothing is read in ``__init__``;
    ``setup`` reads at most ``max_bytes`` bytes.

    Args:
        seq_len: tokens per sample.
        batch_size: samples per batch (per data-parallel replica).
        max_bytes: bytes of source text to read.
        val_fraction: fraction of the bytes kept for validation, in ``(0, 1)``.
        shuffle: shuffle the training samples each epoch, in an order drawn from ``seed`` and the epoch (under
            DDP, Lightning's sampler wrapper shards that order across the ranks).
        seed: seed of the training shuffle.
        root: folder to read instead of the standard library.

    Example:
        >>> dm = StdlibTextDataModule(seq_len=16, batch_size=2, max_bytes=2000)
        >>> dm.setup("fit")
        >>> batch = next(iter(dm.train_dataloader()))
        >>> tuple(batch["input_ids"].shape), dm.vocab_size
        ((2, 16), 256)
    """

    def __init__(
        self,
        seq_len: int = 128,
        batch_size: int = 4,
        max_bytes: int = 1_000_000,
        val_fraction: float = 0.05,
        shuffle: bool = True,
        seed: int = 0,
        root: str | None = None,
    ) -> None:
        super().__init__()
        if seq_len <= 0:
            raise ValueError(f"seq_len must be positive, got {seq_len}")
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if not 0.0 < val_fraction < 1.0:
            raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
        if max_bytes <= 2 * (seq_len + 1):
            raise ValueError(f"max_bytes must exceed 2 * (seq_len + 1) = {2 * (seq_len + 1)}, got {max_bytes}")
        self.seq_len = seq_len
        self.batch_size = batch_size
        self.max_bytes = max_bytes
        self.val_fraction = val_fraction
        self.shuffle = shuffle
        self.seed = seed
        self.root = root
        self.vocab_size = VOCAB_SIZE
        self.train_set: ByteChunkDataset | None = None
        self.val_set: ByteChunkDataset | None = None

    def setup(self, stage: str | None = None) -> None:
        """Read the bytes and cut the train / validation samples."""
        if self.train_set is not None:
            return
        data = load_stdlib_bytes(self.max_bytes, self.root)
        cut = int(round(data.numel() * (1.0 - self.val_fraction)))
        cut = min(max(cut, self.seq_len + 1), data.numel() - self.seq_len - 1)
        self.train_set = ByteChunkDataset(data[:cut], self.seq_len)
        self.val_set = ByteChunkDataset(data[cut:], self.seq_len)

    def train_dataloader(self) -> DataLoader:
        """Training batches of ``{"input_ids", "labels"}``."""
        if self.train_set is None:
            self.setup("fit")
        assert self.train_set is not None
        # order from (seed, epoch) only, so a resumed run sees the batches of an uninterrupted one (a generator
        # seeded here would restart at the first epoch's order after a resume)
        sampler = EpochSeededSampler(len(self.train_set), seed=self.seed) if self.shuffle else None
        return DataLoader(self.train_set, batch_size=self.batch_size, sampler=sampler, drop_last=True)

    def val_dataloader(self) -> DataLoader:
        """Validation batches of ``{"input_ids", "labels"}``."""
        if self.val_set is None:
            self.setup("validate")
        assert self.val_set is not None
        return DataLoader(self.val_set, batch_size=self.batch_size, shuffle=False, drop_last=True)
