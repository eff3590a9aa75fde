from __future__ import annotations

import pytest
import torch

from lightning_icml26.data import SpiralsDataModule, make_spirals


def test_spirals_balanced_deterministic_and_on_their_arms() -> None:
    x, y = make_spirals(3000, num_classes=3, noise=0.0, seed=3)
    x2, y2 = make_spirals(3000, num_classes=3, noise=0.0, seed=3)
    assert torch.equal(x, x2)
    assert torch.equal(y, y2)
    assert torch.bincount(y).tolist() == [1000, 1000, 1000]
    radius = x.norm(dim=1)
    assert radius.max() <= 1.0 + 1e-6
    # without noise each point lies exactly on its class's arm: angle = 3 pi r + 2 pi k / 3 (mod 2 pi)
    expected = 2 * torch.pi * 1.5 * radius + 2 * torch.pi * y / 3
    diff = torch.remainder(torch.atan2(x[:, 1], x[:, 0]) - expected + torch.pi, 2 * torch.pi) - torch.pi
    assert diff.abs().max() < 1e-3


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_samples": 2, "num_classes": 3}, "num_samples"),
        ({"num_samples": 10, "num_classes": 1}, "num_classes"),
        ({"num_samples": 10, "noise": -1.0}, "noise"),
        ({"num_samples": 10, "turns": 0.0}, "turns"),
    ],
)
def test_make_spirals_rejects_bad_arguments(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make_spirals(**kwargs)


def test_datamodule_splits_differ_and_reject_bad_sizes() -> None:
    dm = SpiralsDataModule(num_train=30, num_val=9, num_test=9, batch_size=4)
    dm.setup("fit")
    train = next(iter(dm.val_dataloader()))[0]
    test = next(iter(dm.test_dataloader()))[0]
    assert not torch.equal(train, test)
    with pytest.raises(ValueError, match="batch_size"):
        SpiralsDataModule(batch_size=0)
    with pytest.raises(ValueError, match="num_val"):
        SpiralsDataModule(num_val=1)
