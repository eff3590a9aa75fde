"""A LightningDataModule base for data held as named in-memory splits (train / val / test)."""

from __future__ import annotations

from collections.abc import Sized
from typing import Any, cast

from lightning.pytorch import LightningDataModule
from torch.utils.data import DataLoader, Dataset

from lightning_icml26.data._sampling import EpochSeededSampler


class SplitsDataModule(LightningDataModule):
    """Serves ``self._splits["train" | "val" | "test"]`` through DataLoaders.

    Subclasses fill ``self._splits`` in :meth:`setup` (which must be safe to call again) and save
    ``batch_size`` (and optionally ``num_workers``, default 0) with ``save_hyperparameters``. A loader
    asked for before ``setup`` ran calls it first, so the module also works outside a Trainer.

    The training split is shuffled with :class:`EpochSeededSampler`: the order is a function of the saved
    ``seed`` hyperparameter (or a ``seed`` attribute) and the epoch only, so a run resumed from a checkpoint
    sees the same batches as an uninterrupted one. Under DDP Lightning wraps the sampler in its
    ``DistributedSamplerWrapper``, which forwards ``set_epoch`` and shards the (identical on every rank)
    permutation, so each rank still sees a disjoint part and every sample is served once per epoch. A subclass
    that sets ``epoch_seeded_shuffle = False`` shuffles from torch's global random state instead (which a
    resumed run does not share). Subclasses that build their own loaders call :meth:`_make_loader`.

    Example:
        >>> import torch
        >>> from torch.utils.data import TensorDataset
        >>> class Ones(SplitsDataModule):
        ...     def __init__(self, batch_size: int = 2) -> None:
        ...         super().__init__()
        ...         self.save_hyperparameters()
        ...     def setup(self, stage: str | None = None) -> None:
        ...         data = TensorDataset(torch.ones(4, 3))
        ...         self._splits = {"train": data, "val": data, "test": data}
        >>> [tuple(b[0].shape) for b in Ones().val_dataloader()]
        [(2, 3), (2, 3)]
    """

    epoch_seeded_shuffle: bool = True

    def __init__(self) -> None:
        super().__init__()
        self._splits: dict[str, Dataset] = {}

    def _make_loader(self, dataset: Dataset, batch_size: int, shuffle: bool, num_workers: int = 0) -> DataLoader:
        """A loader over ``dataset``; a shuffled one orders by (seed, epoch) when ``epoch_seeded_shuffle``."""
        order: dict[str, Any] = {"shuffle": shuffle}
        if shuffle and self.epoch_seeded_shuffle:
            seed = int(self.hparams.get("seed", getattr(self, "seed", 0)))
            order = {"sampler": EpochSeededSampler(len(cast(Sized, dataset)), seed=seed)}
        return DataLoader(dataset, batch_size=batch_size, num_workers=num_workers, **order)

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        if split not in self._splits:
            self.setup("fit")
        return self._make_loader(
            self._splits[split],
            batch_size=int(self.hparams["batch_size"]),
            shuffle=shuffle,
            num_workers=int(self.hparams.get("num_workers", 0)),
        )

    def train_dataloader(self) -> DataLoader:
        """Shuffled training loader."""
        return self._loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        """Validation loader."""
        return self._loader("val", shuffle=False)

    def test_dataloader(self) -> DataLoader:
        """Test loader."""
        return self._loader("test", shuffle=False)
