"""MQAR and copy-with-distractors generators: structure checked token by token, seeds, errors."""

from __future__ import annotations

import pytest
import torch

from lightning_icml26.data import RecallDataModule, make_recall_batch


def test_mqar_queries_ask_stored_keys_and_score_their_values() -> None:
    b = make_recall_batch("mqar", 5, seq_len=64, num_pairs=8, num_queries=6, seed=3)
    ids, labels = b["input_ids"], b["labels"]
    full = torch.cat([ids, labels[:, -1:]], dim=1)
    for i in range(5):
        pairs = {int(full[i, 2 * j]): int(full[i, 2 * j + 1]) for j in range(8)}
        assert len(pairs) == 8
        assert all(1 <= k < 128 for k in pairs)
        assert all(128 <= v < 256 for v in pairs.values())
        start = 65 - 12
        assert bool((full[i, 16:start] == 0).all())
        scored = (labels[i] != -100).nonzero().flatten().tolist()
        assert scored == list(range(start, 65, 2))
        for pos in scored:
            assert int(labels[i, pos]) == pairs[int(ids[i, pos])]
    assert torch.equal(make_recall_batch("mqar", 5, 64, 8, 6, seed=3)["input_ids"], ids)
    assert not torch.equal(make_recall_batch("mqar", 5, 64, 8, 6, seed=4)["input_ids"], ids)


def test_copy_repeats_the_content_after_distractors() -> None:
    b = make_recall_batch("copy", 3, seq_len=40, num_pairs=10, seed=1)
    ids, labels = b["input_ids"], b["labels"]
    for i in range(3):
        content = ids[i, :10]
        assert bool((ids[i, 10:30] >= 128).all())
        assert int(ids[i, 30]) == 0
        scored = labels[i][labels[i] != -100]
        assert torch.equal(scored, content)


def test_datamodule_splits_are_disjoint_seeds() -> None:
    dm = RecallDataModule(seq_len=32, num_pairs=4, num_train=8, num_val=4, batch_size=4)
    dm.setup()
    train = next(iter(dm.train_dataloader()))["input_ids"]
    val = next(iter(dm.val_dataloader()))["input_ids"]
    assert train.shape == (4, 32)
    assert not torch.equal(dm.sets["val"].tensors["input_ids"], dm.sets["test"].tensors["input_ids"])
    assert val.shape == (4, 32)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"task": "sort", "seq_len": 100, "num_pairs": 4}, "task"),
        ({"task": "mqar", "num_pairs": 40, "seq_len": 100}, "too short"),
        ({"task": "mqar", "num_pairs": 4, "num_queries": 5, "seq_len": 100}, "num_queries"),
        ({"task": "copy", "num_pairs": 0, "seq_len": 100}, "num_pairs"),
    ],
)
def test_errors(kw: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make_recall_batch(num=1, **kw)  # type: ignore[arg-type]
