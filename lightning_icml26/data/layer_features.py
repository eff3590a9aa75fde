"""Per-layer feature data: a DataModule over cached ``(n, L, D)`` layer embeddings with stratified splits.

The LOES recipes probe a *frozen* backbone, so the backbone runs once over the data and its pooled
per-layer features are kept (in memory, optionally on disk). Training, validation and test loaders then
yield ``(features (B, L, D), label)`` pairs; a separate calibration loader (drawn from the training split
only) feeds layer selection, so the test split is never used for any choice.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26.data._splits import SplitsDataModule

__all__ = ["LayerFeatureDataModule", "cached_tensor", "stratified_split"]


def stratified_split(labels: torch.Tensor, fractions: tuple[float, ...], seed: int = 0) -> list[torch.Tensor]:
    """Split sample indices into parts with the same class proportions.

    Args:
        labels: int64 labels ``(n,)``.
        fractions: the fractions of every part but the last, each in ``(0, 1)``, summing to < 1; the last
            part takes the rest.
        seed: seed of the private permutation generator.

    Returns:
        ``len(fractions) + 1`` index tensors that partition ``range(n)``.

    Raises:
        ValueError: if the fractions are out of range.

    Example:
        >>> parts = stratified_split(torch.tensor([0, 0, 0, 0, 1, 1, 1, 1]), (0.5,), seed=0)
        >>> [len(p) for p in parts]
        [4, 4]
    """
    if any(not 0 < f < 1 for f in fractions) or sum(fractions) >= 1:
        raise ValueError(f"fractions must each lie in (0, 1) and sum to less than 1, got {fractions}")
    generator = torch.Generator().manual_seed(seed)
    parts: list[list[torch.Tensor]] = [[] for _ in range(len(fractions) + 1)]
    for cls in torch.unique(labels):
        idx = torch.nonzero(labels == cls).flatten()
        idx = idx[torch.randperm(len(idx), generator=generator)]
        start = 0
        for p, frac in enumerate(fractions):
            stop = start + round(frac * len(idx))
            parts[p].append(idx[start:stop])
            start = stop
        parts[-1].append(idx[start:])
    return [torch.sort(torch.cat(p)).values for p in parts]


def cached_tensor(cache_dir: str | Path | None, key: dict[str, Any], compute: Any) -> Any:
    """Return ``compute()``, loading it from / saving it to ``cache_dir`` under a hash of ``key``.

    Args:
        cache_dir: folder of the cache, or ``None`` for no caching.
        key: JSON-serialisable description of what is computed (hashed into the file name).
        compute: zero-argument callable returning tensors (anything ``torch.save`` accepts).

    Returns:
        The computed or cached object.

    Example:
        >>> cached_tensor(None, {"a": 1}, lambda: torch.ones(2)).tolist()
        [1.0, 1.0]
    """
    if cache_dir is None:
        return compute()
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    path = Path(cache_dir) / f"{key.get('name', 'features')}-{digest}.pt"
    if path.exists():
        return torch.load(path, weights_only=True)
    value = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(value, tmp)
    tmp.replace(path)
    return value


class LayerFeatureDataModule(SplitsDataModule):
    """Loaders over per-layer features ``(n, L, D)`` with stratified train / val / test splits.

    Subclasses override :meth:`load` to produce the features (running a frozen backbone once); the base
    class can also be used directly with tensors passed in.

    Args:
        features: ``(n, L, D)`` float features, or ``None`` when a subclass loads them.
        labels: ``(n,)`` int64 labels, or ``None`` when a subclass loads them.
        val_fraction: fraction of each class kept for validation (model / layer choice by the baselines).
        test_fraction: fraction of each class kept for the test split (only ever used for the final score).
        calibration_size: how many training samples the calibration loader yields (LOES selection).
        batch_size: loader batch size.
        seed: split seed.

    Example:
        >>> feats, labels = torch.randn(40, 3, 4), torch.arange(40) % 4
        >>> dm = LayerFeatureDataModule(feats, labels, batch_size=8, calibration_size=10)
        >>> dm.setup("fit")
        >>> x, y = next(iter(dm.train_dataloader()))
        >>> tuple(x.shape), dm.num_layers, dm.embed_dim, dm.num_classes
        ((8, 3, 4), 3, 4, 4)
    """

    def __init__(
        self,
        features: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        val_fraction: float = 0.2,
        test_fraction: float = 0.2,
        calibration_size: int = 2000,
        batch_size: int = 128,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if calibration_size < 1:
            raise ValueError(f"calibration_size must be a positive int, got {calibration_size}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size}")
        self._given = (features, labels)
        self.val_fraction = val_fraction
        self.test_fraction = test_fraction
        self.calibration_size = calibration_size
        self.batch_size = batch_size
        self.seed = seed
        self.features: torch.Tensor | None = None
        self.labels: torch.Tensor | None = None
        self.splits: dict[str, torch.Tensor] = {}

    def load(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Return ``(features (n, L, D), labels (n,))``; subclasses run their backbone here."""
        features, labels = self._given
        if features is None or labels is None:
            raise ValueError("features and labels must be given to LayerFeatureDataModule (or override load())")
        return features, labels

    def split(self, labels: torch.Tensor) -> dict[str, torch.Tensor]:
        """Index tensors of the ``train`` / ``val`` / ``test`` splits (stratified, seeded)."""
        val, test, train = stratified_split(labels, (self.val_fraction, self.test_fraction), seed=self.seed)
        return {"train": train, "val": val, "test": test}

    def setup(self, stage: str | None = None) -> None:
        """Load the features once and build the splits."""
        if self.features is not None:
            return
        features, labels = self.load()
        if features.ndim != 3 or labels.ndim != 1 or len(features) != len(labels):
            raise ValueError(
                f"features must be (n, L, D) and labels (n,), got {tuple(features.shape)} and {tuple(labels.shape)}"
            )
        self.features, self.labels = features.float(), labels.long()
        self.splits = self.split(self.labels)

    @property
    def num_layers(self) -> int:
        """Number of candidate layers ``L`` (after :meth:`setup`)."""
        return int(self._data().shape[1])

    @property
    def embed_dim(self) -> int:
        """Feature dimension ``D`` (after :meth:`setup`)."""
        return int(self._data().shape[2])

    @property
    def num_classes(self) -> int:
        """Number of classes (after :meth:`setup`)."""
        assert self.labels is not None, "call setup() first"
        return int(self.labels.max()) + 1

    def _data(self) -> torch.Tensor:
        if self.features is None:
            raise RuntimeError("call setup() before reading the data")
        return self.features

    def subset(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """``(features, labels)`` of split ``name`` (``train``, ``val``, ``test`` or ``calibration``)."""
        feats = self._data()
        assert self.labels is not None
        if name == "calibration":
            idx = self.splits["train"]
            generator = torch.Generator().manual_seed(self.seed + 1)
            idx = idx[torch.randperm(len(idx), generator=generator)[: self.calibration_size]]
        elif name in self.splits:
            idx = self.splits[name]
        else:
            raise ValueError(f"name must be one of train, val, test, calibration; got {name!r}")
        return feats[idx], self.labels[idx]

    def _loader(self, name: str, shuffle: bool) -> DataLoader:
        return self._make_loader(TensorDataset(*self.subset(name)), batch_size=self.batch_size, shuffle=shuffle)

    def calibration_dataloader(self) -> DataLoader:
        """Loader over ``calibration_size`` training samples, for :class:`LOESLayerSelection`."""
        return self._loader("calibration", False)
