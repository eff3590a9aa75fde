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

    A subclass that sets ``epoch_seeded_shuffle = True`` shuffles its training split with
    :class:`EpochSeededSampler` (order a function of the saved ``seed`` hyperparameter and the epoch), so a run
    resumed from a checkpoint sees the same batches as an uninterrupted one; otherwise the order comes from
    torch's global random state, which a resumed run does not share.

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

    epoch_seeded_shuffle: bool = False

    def __init__(self) -> None:
        super().__init__()
        self._splits: dict[str, Dataset] = {}

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        if split not in self._splits:
            self.setup("fit")
        dataset = self._splits[split]
        order: dict[str, Any] = {"shuffle": shuffle}
        if shuffle and self.epoch_seeded_shuffle:
            order = {"sampler": EpochSeededSampler(len(cast(Sized, dataset)), seed=int(self.hparams.get("seed", 0)))}
        return DataLoader(
            dataset,
            batch_size=int(self.hparams["batch_size"]),
            num_workers=self.hparams.get("num_workers", 0),
            **order,
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
