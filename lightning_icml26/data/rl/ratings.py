"""Rated trajectory segments: the container, the simulated teacher and the LightningDataModule.

The data module turns a pool of segments (observations, actions, true returns) into a labelled training set
with a fixed budget of ratings (the simulated teacher rates segments into quantile classes of the true return,
with optional label noise) and a held-out set scored by rank correlation with the true return. It serves the
batches each loss needs:

* ``"rmse"`` (R4): items of one segment from **each** non-empty rating class, in class order; classes with fewer
  segments are oversampled with replacement (uniform sampling with replacement inside each class bin).
* ``"rbrl"``: shuffled single rated segments with their class.
* ``"bradley_terry"``: segment pairs with a preference label. ``preference_source="ratings"`` derives the pairs
  from the same rated segments (pairs with different ratings; label = which rating is higher), so the
  preference model sees exactly the rating budget; ``"queries"`` spends the budget on ``num_ratings`` fresh
  pairwise queries labelled by the true returns (PEBBLE's scripted teacher, with the same label noise).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from lightning.pytorch import LightningDataModule
from torch.utils.data import DataLoader, Dataset

__all__ = ["LOSSES", "RatingDataModule", "Segments", "check_ratings", "quantile_bin_edges", "simulate_ratings"]

LOSSES = ("rmse", "rbrl", "bradley_terry")


def check_ratings(ratings: torch.Tensor, num_classes: int, name: str = "ratings") -> None:
    """Raise a clear error unless ``ratings`` are integer classes in ``{0, ..., num_classes - 1}``.

    Args:
        ratings: integer tensor of rating classes.
        num_classes: number of declared rating classes, at least 2.
        name: argument name quoted in the error.

    Raises:
        ValueError: if ``num_classes < 2`` or a rating is outside the declared classes.
        TypeError: if ``ratings`` is not an integer tensor.

    Example:
        >>> check_ratings(torch.tensor([0, 2, 1]), num_classes=3)
        >>> check_ratings(torch.tensor([0, 3]), num_classes=3)
        Traceback (most recent call last):
        ...
        ValueError: ratings must lie in {0, ..., 2} (num_classes=3), got the value(s) [3]
    """
    if not isinstance(num_classes, int) or isinstance(num_classes, bool) or num_classes < 2:
        raise ValueError(f"num_classes must be an integer of at least 2 (two rating classes), got {num_classes!r}")
    if not isinstance(ratings, torch.Tensor) or ratings.is_floating_point() or ratings.dtype == torch.bool:
        kind = ratings.dtype if isinstance(ratings, torch.Tensor) else type(ratings).__name__
        raise TypeError(f"{name} must be an integer tensor of class indices, got {kind}")
    bad = ratings[(ratings < 0) | (ratings >= num_classes)]
    if bad.numel():
        raise ValueError(
            f"{name} must lie in {{0, ..., {num_classes - 1}}} (num_classes={num_classes}), "
            f"got the value(s) {sorted(set(bad.tolist()))}"
        )


@dataclass
class Segments:
    """A pool of fixed-length trajectory segments.

    Attributes:
        obs: observations ``(N, T, obs_dim)`` (the state each action was taken in).
        act: actions ``(N, T, act_dim)``.
        true_returns: environment return of each segment, ``(N,)``.

    Example:
        >>> seg = Segments(torch.zeros(4, 5, 3), torch.zeros(4, 5, 1), torch.arange(4.0))
        >>> len(seg), seg.segment_length, seg[torch.tensor([0, 2])].true_returns
        (4, 5, tensor([0., 2.]))
    """

    obs: torch.Tensor
    act: torch.Tensor
    true_returns: torch.Tensor

    def __post_init__(self) -> None:
        for name in ("obs", "act", "true_returns"):
            value = getattr(self, name)
            if not isinstance(value, torch.Tensor):
                raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
        if self.obs.dim() != 3 or self.act.dim() != 3:
            raise ValueError(
                "obs and act must have shape (num_segments, segment_length, dim); segments of unequal length "
                f"cannot be stacked. Got obs {tuple(self.obs.shape)} and act {tuple(self.act.shape)}"
            )
        if self.obs.shape[:2] != self.act.shape[:2] or self.true_returns.shape != self.obs.shape[:1]:
            raise ValueError(
                "obs, act and true_returns must agree on (num_segments, segment_length): got "
                f"{tuple(self.obs.shape)}, {tuple(self.act.shape)}, {tuple(self.true_returns.shape)}"
            )

    def __len__(self) -> int:
        return int(self.obs.shape[0])

    @property
    def segment_length(self) -> int:
        """Number of steps per segment."""
        return int(self.obs.shape[1])

    def __getitem__(self, index: torch.Tensor | slice) -> Segments:
        return Segments(self.obs[index], self.act[index], self.true_returns[index])

    @staticmethod
    def from_list(obs: list[torch.Tensor], act: list[torch.Tensor], true_returns: list[float]) -> Segments:
        """Stack per-segment tensors, with a clear error if their lengths differ.

        Example:
            >>> Segments.from_list([torch.zeros(3, 2), torch.zeros(4, 2)], [torch.zeros(3, 1)] * 2, [0.0, 1.0])
            Traceback (most recent call last):
            ...
            ValueError: all segments must have the same length for the rating losses; got lengths [3, 4]
        """
        lengths = sorted({int(o.shape[0]) for o in obs} | {int(a.shape[0]) for a in act})
        if len(lengths) > 1:
            raise ValueError(f"all segments must have the same length for the rating losses; got lengths {lengths}")
        return Segments(torch.stack(obs), torch.stack(act), torch.as_tensor(true_returns, dtype=torch.float32))

    @staticmethod
    def cat(parts: list[Segments]) -> Segments:
        """Concatenate pools of segments of the same length."""
        Segments.from_list([p.obs[0] for p in parts], [p.act[0] for p in parts], [0.0] * len(parts))
        return Segments(
            torch.cat([p.obs for p in parts]), torch.cat([p.act for p in parts]),
            torch.cat([p.true_returns for p in parts]),
        )  # fmt: skip


def quantile_bin_edges(true_returns: torch.Tensor, num_classes: int) -> torch.Tensor:
    """Inner class boundaries at the ``1/n, ..., (n-1)/n`` quantiles of ``true_returns``.

    Example:
        >>> quantile_bin_edges(torch.arange(10.0), 2)
        tensor([4.5000])
    """
    check_ratings(torch.zeros(1, dtype=torch.long), num_classes)
    levels = torch.arange(1, num_classes, dtype=torch.float64) / num_classes
    return torch.quantile(true_returns.to(torch.float64), levels).to(true_returns.dtype)


def simulate_ratings(
    true_returns: torch.Tensor,
    num_classes: int,
    label_noise: float = 0.0,
    bin_edges: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Simulated teacher: rate segments into ``num_classes`` classes of their true return.

    Classes are quantile bins of ``true_returns`` (or the given inner ``bin_edges``). With probability
    ``label_noise`` a rating is replaced by a uniformly drawn *different* class.

    Args:
        true_returns: ``(N,)`` true segment returns.
        num_classes: number of classes ``n >= 2``.
        label_noise: probability of a wrong rating, in ``[0, 1]``.
        bin_edges: ``n - 1`` increasing inner boundaries; default: quantiles of ``true_returns``.
        generator: random generator for the noise.

    Returns:
        ``(N,)`` long tensor of classes in ``{0, ..., n-1}``.

    Raises:
        ValueError: for fewer than two classes, a noise level outside ``[0, 1]`` or wrong ``bin_edges``.

    Example:
        >>> simulate_ratings(torch.tensor([0.3, 5.0, -2.0, 1.0]), num_classes=2)
        tensor([0, 1, 0, 1])
        >>> simulate_ratings(torch.tensor([1.0]), num_classes=1)
        Traceback (most recent call last):
        ...
        ValueError: num_classes must be an integer of at least 2 (two rating classes), got 1
    """
    check_ratings(torch.zeros(1, dtype=torch.long), num_classes)
    if not 0.0 <= label_noise <= 1.0:
        raise ValueError(f"label_noise must lie in [0, 1], got {label_noise!r}")
    edges = quantile_bin_edges(true_returns, num_classes) if bin_edges is None else bin_edges
    if edges.shape != (num_classes - 1,) or (edges.numel() > 1 and bool((edges[1:] < edges[:-1]).any())):
        raise ValueError(f"bin_edges must be {num_classes - 1} non-decreasing values, got {edges.tolist()}")
    ratings = torch.bucketize(true_returns, edges.to(true_returns.dtype), right=True)
    if label_noise > 0:
        flip = torch.rand(ratings.shape, generator=generator) < label_noise
        shift = torch.randint(1, num_classes, ratings.shape, generator=generator)
        ratings = torch.where(flip, (ratings + shift) % num_classes, ratings)
    return ratings


class _OnePerClass(Dataset):
    """Items of one segment per non-empty class, in class order, sampled with replacement inside each bin."""

    def __init__(self, segments: Segments, ratings: torch.Tensor, num_items: int | None, seed: int) -> None:
        self.segments = segments
        self.classes = torch.unique(ratings)
        self.bins = [torch.nonzero(ratings == c).flatten() for c in self.classes]
        self.num_items = num_items or max(len(b) for b in self.bins)
        self.generator = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return self.num_items

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        pick = torch.stack([b[torch.randint(len(b), (1,), generator=self.generator)[0]] for b in self.bins])
        return {"obs": self.segments.obs[pick], "act": self.segments.act[pick], "ratings": self.classes}


class _Rated(Dataset):
    def __init__(self, segments: Segments, ratings: torch.Tensor) -> None:
        self.segments, self.ratings = segments, ratings

    def __len__(self) -> int:
        return len(self.segments)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        s = self.segments
        return {
            "obs": s.obs[index],
            "act": s.act[index],
            "ratings": self.ratings[index],
            "returns": s.true_returns[index],
        }


class _Pairs(Dataset):
    def __init__(self, a: Segments, b: Segments, preference: torch.Tensor) -> None:
        self.a, self.b, self.preference = a, b, preference

    def __len__(self) -> int:
        return len(self.preference)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return {
            "obs_a": self.a.obs[index], "act_a": self.a.act[index],
            "obs_b": self.b.obs[index], "act_b": self.b.act[index],
            "preference": self.preference[index],
        }  # fmt: skip


class RatingDataModule(LightningDataModule):
    """Rated segments for reward learning, batched for the chosen loss, plus a held-out set with true returns.

    ``setup()`` obtains the segment pool (calling ``segments`` if it is a callable, e.g. a partial of
    :func:`~lightning_icml26.data.rl.envs.collect_segments`), puts the first ``num_heldout`` segments of a
    random permutation aside for evaluation, and rates ``num_ratings`` of the rest with the simulated teacher.

    Args:
        segments: a :class:`Segments` pool or a no-argument callable returning one.
        loss: ``"rmse"``, ``"rbrl"`` or ``"bradley_terry"`` (decides the training batches).
        num_classes: number of rating classes, at least 2.
        num_ratings: rating budget (number of rated segments, or of preference queries).
        num_heldout: segments kept aside for validation/test (rank correlation with the true return).
        label_noise: teacher's probability of a wrong label.
        batch_size: items per batch (an R4 item holds one segment per class).
        items_per_epoch: training items per epoch; default: the largest class bin (R4) or the dataset size.
        preference_source: ``"ratings"`` or ``"queries"`` (see the module docstring).
        bt_ties: with ``preference_source="ratings"``, also use equal-rating pairs with label 0.5.
        seed: seed of the split, the teacher noise and the sampling.

    Example:
        >>> pool = Segments(torch.randn(40, 5, 3), torch.randn(40, 5, 1), torch.randn(40))
        >>> dm = RatingDataModule(pool, loss="rmse", num_classes=3, num_ratings=20, num_heldout=10, batch_size=4)
        >>> dm.setup("fit")
        >>> batch = next(iter(dm.train_dataloader()))
        >>> batch["obs"].shape, batch["ratings"][0].tolist()
        (torch.Size([4, 3, 5, 3]), [0, 1, 2])
    """

    def __init__(
        self,
        segments: Segments | Callable[[], Segments],
        loss: str = "rmse",
        num_classes: int = 5,
        num_ratings: int = 100,
        num_heldout: int = 200,
        label_noise: float = 0.0,
        batch_size: int = 64,
        items_per_epoch: int | None = None,
        preference_source: str = "ratings",
        bt_ties: bool = False,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
        check_ratings(torch.zeros(1, dtype=torch.long), num_classes)
        if preference_source not in ("ratings", "queries"):
            raise ValueError(f"preference_source must be 'ratings' or 'queries', got {preference_source!r}")
        for name, value, low in (("num_ratings", num_ratings, 2), ("num_heldout", num_heldout, 0),
                                 ("batch_size", batch_size, 1)):  # fmt: skip
            if not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer of at least {low}, got {value!r}")
        if not 0.0 <= label_noise <= 1.0:
            raise ValueError(f"label_noise must lie in [0, 1], got {label_noise!r}")
        self.source = segments
        self.loss = loss
        self.num_classes = num_classes
        self.num_ratings = num_ratings
        self.num_heldout = num_heldout
        self.label_noise = label_noise
        self.batch_size = batch_size
        self.items_per_epoch = items_per_epoch
        self.preference_source = preference_source
        self.bt_ties = bt_ties
        self.seed = seed
        self.rated: Segments | None = None
        self.ratings: torch.Tensor | None = None
        self.heldout: Segments | None = None
        self.pairs: tuple[Segments, Segments, torch.Tensor] | None = None

    def setup(self, stage: str | None = None) -> None:
        """Collect (if needed), split and rate the segments; idempotent."""
        if self.rated is not None:
            return
        pool = self.source() if callable(self.source) else self.source
        if not isinstance(pool, Segments):
            raise TypeError(f"segments must be a Segments pool or a callable returning one, got {type(pool).__name__}")
        per_label = 2 if (self.loss == "bradley_terry" and self.preference_source == "queries") else 1
        need = self.num_heldout + per_label * self.num_ratings
        if len(pool) < need:
            raise ValueError(f"the segment pool has {len(pool)} segments but num_heldout + num_ratings needs {need}")
        generator = torch.Generator().manual_seed(self.seed)
        order = torch.randperm(len(pool), generator=generator)
        self.heldout = pool[order[: self.num_heldout]]
        train = order[self.num_heldout : need]
        if per_label == 2:
            a, b = pool[train[: self.num_ratings]], pool[train[self.num_ratings :]]
            preference = (a.true_returns > b.true_returns).float()
            preference[a.true_returns == b.true_returns] = 0.5
            flip = torch.rand(preference.shape, generator=generator) < self.label_noise
            preference = torch.where(flip, 1.0 - preference, preference)
            self.pairs = (a, b, preference)
            self.rated = Segments.cat([a, b])
            self.ratings = simulate_ratings(self.rated.true_returns, self.num_classes, 0.0)
            return
        self.rated = pool[train]
        self.ratings = simulate_ratings(
            self.rated.true_returns, self.num_classes, self.label_noise, generator=generator
        )
        if len(torch.unique(self.ratings)) < 2:
            raise ValueError("the rated segments fall into fewer than two rating classes; rate more segments")
        if self.loss == "bradley_terry":
            i, j = torch.triu_indices(len(self.rated), len(self.rated), offset=1)
            keep = self.ratings[i] != self.ratings[j]
            if self.bt_ties:
                keep = torch.ones_like(keep)
            i, j = i[keep], j[keep]
            preference = (self.ratings[i] > self.ratings[j]).float()
            preference[self.ratings[i] == self.ratings[j]] = 0.5
            self.pairs = (self.rated[i], self.rated[j], preference)

    def train_dataloader(self) -> DataLoader:
        """Batches for the configured loss."""
        self.setup("fit")
        assert self.rated is not None
        assert self.ratings is not None
        dataset: Dataset
        if self.loss == "rmse":
            dataset = _OnePerClass(self.rated, self.ratings, self.items_per_epoch, self.seed)
            return DataLoader(dataset, batch_size=self.batch_size, shuffle=False)
        if self.loss == "rbrl":
            dataset = _Rated(self.rated, self.ratings)
        else:
            assert self.pairs is not None
            dataset = _Pairs(*self.pairs)
        generator = torch.Generator().manual_seed(self.seed)
        sampler: Any = None
        if self.items_per_epoch is not None:
            sampler = torch.utils.data.RandomSampler(
                dataset, replacement=True, num_samples=self.items_per_epoch, generator=generator
            )
        return DataLoader(
            dataset, batch_size=self.batch_size, shuffle=sampler is None, sampler=sampler, generator=generator
        )

    def _heldout_loader(self) -> DataLoader:
        self.setup("test")
        assert self.heldout is not None
        ratings = torch.zeros(len(self.heldout), dtype=torch.long)
        return DataLoader(_Rated(self.heldout, ratings), batch_size=256)

    def val_dataloader(self) -> DataLoader:
        """Held-out segments with their true returns (monitoring)."""
        return self._heldout_loader()

    def test_dataloader(self) -> DataLoader:
        """Held-out segments with their true returns (the reported rank correlations)."""
        return self._heldout_loader()
