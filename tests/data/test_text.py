"""Byte-level text data over the Python standard library's source files."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest
import torch

from lightning_icml26.data.text import ByteChunkDataset, StdlibTextDataModule, load_stdlib_bytes


def test_bytes_are_the_sorted_stdlib_files() -> None:
    root = Path(sysconfig.get_paths()["stdlib"])
    first = sorted(root.glob("*.py"))[0].read_bytes()
    data = load_stdlib_bytes(max_bytes=len(first) + 10)
    assert bytes(data[: len(first)].tolist()) == first
    assert int(data[len(first)]) == 0  # file separator
    assert data.numel() == len(first) + 10


def test_chunks_are_shifted_next_byte_targets() -> None:
    data = load_stdlib_bytes(max_bytes=500)
    ds = ByteChunkDataset(data, seq_len=16)
    assert len(ds) == (500 - 1) // 16
    sample = ds[3]
    assert torch.equal(sample["input_ids"][1:], sample["labels"][:-1])
    assert torch.equal(sample["labels"], data[3 * 16 + 1 : 4 * 16 + 1].long())
    with pytest.raises(IndexError):
        ds[len(ds)]


def test_datamodule_splits_and_is_deterministic() -> None:
    a = StdlibTextDataModule(seq_len=32, batch_size=4, max_bytes=10_000, val_fraction=0.1, shuffle=False)
    b = StdlibTextDataModule(seq_len=32, batch_size=4, max_bytes=10_000, val_fraction=0.1, shuffle=False)
    a.setup("fit")
    b.setup("fit")
    assert a.train_set is not None
    assert a.val_set is not None
    assert len(a.train_set) == (9000 - 1) // 32
    assert len(a.val_set) == (1000 - 1) // 32
    batch_a, batch_b = next(iter(a.train_dataloader())), next(iter(b.train_dataloader()))
    assert torch.equal(batch_a["input_ids"], batch_b["input_ids"])
    assert batch_a["input_ids"].shape == (4, 32)
    assert batch_a["input_ids"].max() < 256


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seq_len": 0}, "seq_len"),
        ({"batch_size": 0}, "batch_size"),
        ({"val_fraction": 1.0}, "val_fraction"),
        ({"max_bytes": 10, "seq_len": 8}, "max_bytes"),
    ],
)
def test_bad_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        StdlibTextDataModule(**kwargs)


def test_empty_root_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="holds no"):
        load_stdlib_bytes(root=tmp_path)
