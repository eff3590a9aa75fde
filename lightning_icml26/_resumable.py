"""Exact mid-epoch resume: the training loader's position and the random states go into every checkpoint.

Lightning saves a training loader's state in its checkpoints, and restores it, when the loader has
``state_dict`` / ``load_state_dict``: torchdata's ``StatefulDataLoader`` does (how many batches it yielded, the
state of its sampler). :func:`make_resumable` makes a data module's ``train_dataloader`` return one, built
from the same arguments as the plain ``DataLoader`` it returned; :class:`RNGStateCheckpoint` keeps the random
states (torch, numpy, python) so that a resumed step draws what the uninterrupted one drew.
"""

from __future__ import annotations

import random
import warnings
from typing import Any

import numpy as np
import torch
from lightning.fabric.utilities.data import _set_sampler_epoch
from lightning.pytorch import Callback, LightningModule, Trainer
from torch.utils.data import DataLoader, IterableDataset, RandomSampler
from torch.utils.data.sampler import BatchSampler
from torchdata.stateful_dataloader import StatefulDataLoader

__all__ = ["RNGStateCheckpoint", "ResumableDataLoader", "ResumableTrainLoader", "make_resumable", "stateful_loader"]


class ResumableDataLoader(StatefulDataLoader):
    """A ``StatefulDataLoader`` whose state also holds its sampler's epoch.

    On a resume Lightning creates the loader's iterator (which draws the epoch's order from the sampler)
    before it tells the sampler the epoch, so an epoch-seeded order would restart at epoch 0's; the epoch
    saved here is put back on the sampler when the state is loaded, before that iterator exists.

    Example:
        >>> from torch.utils.data import DistributedSampler, TensorDataset
        >>> data = TensorDataset(torch.arange(8.0))
        >>> loader = ResumableDataLoader(data, sampler=DistributedSampler(data, num_replicas=1, rank=0))
        >>> loader.sampler.set_epoch(3)
        >>> state = loader.state_dict()
        >>> fresh = ResumableDataLoader(data, sampler=DistributedSampler(data, num_replicas=1, rank=0))
        >>> fresh.load_state_dict(state); fresh.sampler.epoch
        3
    """

    epoch_key = "icml26_sampler_epoch"

    def _sampler_epoch(self) -> int | None:
        for sampler in (self.sampler, getattr(self.batch_sampler, "sampler", None)):
            epoch = getattr(sampler, "epoch", None)
            if isinstance(epoch, int):
                return epoch
        return None

    def __iter__(self) -> Any:
        """Torchdata's iterator (without its warning about a deprecated torch call it makes)."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*set_vital.* is deprecated")
            return super().__iter__()

    def state_dict(self) -> dict[str, Any]:
        """Torchdata's state plus the sampler's epoch."""
        state = dict(super().state_dict())
        state[self.epoch_key] = self._sampler_epoch()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Set the sampler's epoch, then load torchdata's state."""
        state = dict(state_dict)
        epoch = state.pop(self.epoch_key, None)
        if epoch is not None:
            _set_sampler_epoch(self, epoch)
        super().load_state_dict(state)


def stateful_loader(loader: Any) -> Any:
    """A ``StatefulDataLoader`` with ``loader``'s arguments (``loader`` itself when it cannot be rebuilt).

    Only a plain ``torch.utils.data.DataLoader`` over a map-style dataset is rebuilt; a ``RandomSampler``
    becomes torchdata's stateful one over the same generator.

    Example:
        >>> import torch
        >>> from torch.utils.data import DataLoader, TensorDataset
        >>> plain = DataLoader(TensorDataset(torch.arange(10.0)), batch_size=4, drop_last=True)
        >>> stateful = stateful_loader(plain)
        >>> it = iter(stateful)
        >>> first = next(it)
        >>> state = stateful.state_dict()
        >>> again = stateful_loader(plain)
        >>> again.load_state_dict(state)
        >>> [b[0].tolist() for b in again]
        [[4.0, 5.0, 6.0, 7.0]]
    """
    if type(loader) is not DataLoader or isinstance(loader.dataset, IterableDataset):
        return loader
    options: dict[str, Any] = {
        "num_workers": loader.num_workers,
        "collate_fn": loader.collate_fn,
        "pin_memory": loader.pin_memory,
        "timeout": loader.timeout,
        "worker_init_fn": loader.worker_init_fn,
        "multiprocessing_context": loader.multiprocessing_context,
        "generator": loader.generator,
        "persistent_workers": loader.persistent_workers,
    }
    if loader.num_workers > 0:
        options["prefetch_factor"] = loader.prefetch_factor
    if loader.batch_size is None and loader.batch_sampler is not None:
        options["batch_sampler"] = loader.batch_sampler  # the user's own batch sampler
    elif type(loader.sampler) is RandomSampler and loader.sampler.num_samples == len(loader.dataset):  # type: ignore[arg-type]
        options.update(batch_size=loader.batch_size, drop_last=loader.drop_last, shuffle=True)
        options["generator"] = loader.sampler.generator or loader.generator
    else:
        if loader.batch_sampler is not None and type(loader.batch_sampler) is not BatchSampler:
            return loader
        options.update(batch_size=loader.batch_size, drop_last=loader.drop_last, sampler=loader.sampler)
    return ResumableDataLoader(loader.dataset, **options)


class ResumableTrainLoader:
    """A data module's ``train_dataloader`` whose loaders come back as ``StatefulDataLoader`` (picklable).

    Example:
        >>> import torch
        >>> from torch.utils.data import DataLoader, TensorDataset
        >>> wrapped = ResumableTrainLoader(lambda: DataLoader(TensorDataset(torch.zeros(3))))
        >>> type(wrapped()).__name__
        'ResumableDataLoader'
    """

    def __init__(self, method: Any) -> None:
        self.method = method

    def __call__(self) -> Any:
        loaders = self.method()
        if isinstance(loaders, dict):
            return {key: stateful_loader(value) for key, value in loaders.items()}
        if isinstance(loaders, list | tuple):
            return type(loaders)(stateful_loader(value) for value in loaders)
        return stateful_loader(loaders)


def make_resumable(datamodule: Any) -> None:
    """Make ``datamodule.train_dataloader`` return stateful loaders (idempotent; ``None`` is ignored).

    Example:
        >>> from lightning.pytorch.demos.boring_classes import BoringDataModule
        >>> dm = BoringDataModule()
        >>> make_resumable(dm); make_resumable(dm)
        >>> dm.setup("fit"); type(dm.train_dataloader()).__name__
        'ResumableDataLoader'
    """
    method = getattr(datamodule, "train_dataloader", None)
    if method is None or isinstance(method, ResumableTrainLoader):
        return
    datamodule.train_dataloader = ResumableTrainLoader(method)


def _rng_states() -> dict[str, Any]:
    """The random states as tensors and plain numbers (a checkpoint loads with ``weights_only=True``)."""
    name, keys, pos, has_gauss, cached = np.random.get_state()  # type: ignore[misc]
    return {
        "torch": torch.get_rng_state(),
        "numpy": [name, torch.from_numpy(np.asarray(keys, dtype=np.int64)), int(pos), int(has_gauss), float(cached)],
        "python": random.getstate(),
    }


def _set_rng(states: dict[str, Any]) -> None:
    torch.set_rng_state(states["torch"])
    name, keys, pos, has_gauss, cached = states["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))


class RNGStateCheckpoint(Callback):
    """Save the torch / numpy / python random states in checkpoints and put them back before training resumes.

    Example:
        >>> import random
        >>> callback = RNGStateCheckpoint()
        >>> checkpoint = {}
        >>> callback.on_save_checkpoint(None, None, checkpoint)
        >>> expected = random.random()
        >>> callback.on_load_checkpoint(None, None, checkpoint)
        >>> callback.on_train_start(None, None)
        >>> random.random() == expected
        True
    """

    key = "icml26_rng_states"

    def __init__(self) -> None:
        self._loaded: dict[str, Any] | None = None

    def on_save_checkpoint(self, trainer: Trainer, pl_module: LightningModule, checkpoint: dict[str, Any]) -> None:
        """Store this process's random states."""
        checkpoint[self.key] = _rng_states()

    def on_load_checkpoint(self, trainer: Trainer, pl_module: LightningModule, checkpoint: dict[str, Any]) -> None:
        """Keep the saved states until training starts (older checkpoints without them are fine)."""
        self._loaded = checkpoint.get(self.key)

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        """Put the saved states back right before the first resumed step."""
        if self._loaded is not None:
            _set_rng(self._loaded)
            self._loaded = None
