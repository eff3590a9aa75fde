"""Reference samples of Boltzmann systems (DW-4, LJ-13, LJ-55, alanine dipeptide) as a LightningDataModule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torch import Tensor
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26.data._splits import SplitsDataModule
from lightning_icml26.data.boltzmann.systems import get_system, reference_samples

__all__ = ["BoltzmannDataModule"]


class BoltzmannDataModule(SplitsDataModule):
    """Loaders over reference samples drawn by the project's MCMC / MD runner (cached on disk after the first run).

    The sample set is drawn once (``num_train + num_val + num_test`` conformations, time-ordered for MD) and split
    into contiguous blocks: train, then validation, then test. Nothing is sampled in ``__init__``.

    Args:
        system: ``"dw4"``, ``"lj13"``, ``"lj55"`` or ``"aldp"``.
        num_train: training conformations.
        num_val: validation conformations (also the reference set of :class:`BoltzmannEvalCallback`).
        num_test: test conformations.
        batch_size: loader batch size.
        seed: sampler seed.
        cache_dir: cache folder for the reference samples (``None``: the default cache).
        sampler_kwargs: overrides of the system's sampler settings (e.g. ``{"thin": 5}``).

    Example:
        >>> import tempfile
        >>> dm = BoltzmannDataModule("dw4", num_train=32, num_val=8, num_test=8, batch_size=16,
        ...                          cache_dir=tempfile.mkdtemp(), sampler_kwargs={"burn_in": 20, "thin": 2})
        >>> dm.setup("fit")
        >>> tuple(next(iter(dm.train_dataloader()))[0].shape), tuple(dm.reference("val").shape)
        ((16, 4, 2), (8, 4, 2))
    """

    def __init__(
        self,
        system: str = "dw4",
        num_train: int = 4000,
        num_val: int = 1000,
        num_test: int = 1000,
        batch_size: int = 256,
        seed: int = 0,
        cache_dir: str | None = None,
        sampler_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.system = get_system(system)
        for name, value in (("num_train", num_train), ("num_val", num_val), ("num_test", num_test)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.num_train, self.num_val, self.num_test = num_train, num_val, num_test
        self.batch_size, self.seed = batch_size, seed
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self.sampler_kwargs = dict(sampler_kwargs or {})
        self._data: dict[str, Tensor] = {}

    def setup(self, stage: str | None = None) -> None:
        """Draw (or load from the cache) the reference samples and split them."""
        if self._data:
            return
        total = self.num_train + self.num_val + self.num_test
        x = reference_samples(self.system, total, seed=self.seed, cache_dir=self.cache_dir, **self.sampler_kwargs)
        a, b = self.num_train, self.num_train + self.num_val
        self._data = {"train": x[:a], "val": x[a:b], "test": x[b:]}

    def reference(self, split: str = "val") -> Tensor:
        """Conformations of a split (``"train"``, ``"val"``, ``"test"``), float64 ``(N, n_atoms, dim)``."""
        if split not in ("train", "val", "test"):
            raise ValueError(f"split must be 'train', 'val' or 'test', got {split!r}")
        if not self._data:
            self.setup()
        return self._data[split]

    def train_positions(self) -> Tensor:
        """Training conformations (the models fit their coordinate scale on them)."""
        return self.reference("train")

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        data = self.reference(split).float()
        return self._make_loader(TensorDataset(data), batch_size=self.batch_size, shuffle=shuffle)
