"""Seeded random PB-SCM graphs and their count tables as a LightningDataModule, for causal-discovery sweeps.

Each item is one random Poisson branching SCM (:func:`random_pbscm_graph`, latent columns dropped by
:class:`PBSCMSimulator`): its ``(n_samples, n_observed)`` count table and its observed-level edge-code matrix
(the encoding of the causal-discovery metrics). Splits hold disjoint graphs: ``val`` graphs for choosing
an estimator's settings, ``test`` graphs for reporting; causal-discovery estimators are not trained, so the
``train`` split is empty unless ``num_train`` is set.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np
import torch
from torch.utils.data import Dataset

from lightning_icml26._checks import check_int
from lightning_icml26.data._splits import SplitsDataModule
from lightning_icml26.data.pbscm_simulator import PBSCMSimulator, random_pbscm_graph

__all__ = ["PBSCMDataModule", "PBSCMGraphs"]

_SPLITS = ("train", "val", "test")


class PBSCMGraphs(Dataset):
    """Random PB-SCMs drawn from ``(seed, split, index)``; item ``k`` is ``{"counts", "target", "index"}``.

    Graphs and samples are drawn on first access and cached; the draw of item ``k`` depends only on
    ``(seed, split, k)`` and the settings, never on the access order.

    Args:
        num_graphs: number of graphs.
        n_observed: observed variables per graph.
        n_latent: latent confounders per graph (two observed children each).
        n_samples: rows of each count table.
        split: ``"train"``, ``"val"`` or ``"test"`` (part of the seed, so splits never share a graph).
        seed: base seed.
        graph_kwargs: further arguments of :func:`random_pbscm_graph` (``edges_per_node``, ``alpha_range``,
            ``mu_range``).

    Example:
        >>> ds = PBSCMGraphs(2, n_observed=4, n_latent=1, n_samples=50, split="test", seed=0)
        >>> item = ds[0]
        >>> tuple(item["counts"].shape), tuple(item["target"].shape), item["counts"].dtype
        ((50, 4), (4, 4), torch.int64)
    """

    def __init__(
        self,
        num_graphs: int,
        n_observed: int,
        n_latent: int,
        n_samples: int,
        split: str,
        seed: int = 0,
        graph_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if split not in _SPLITS:
            raise ValueError(f"split must be one of {_SPLITS}, got {split!r}")
        self.num_graphs = check_int("num_graphs", num_graphs, 0)
        self.n_observed = check_int("n_observed", n_observed, 3)
        self.n_latent = check_int("n_latent", n_latent, 0)
        self.n_samples = check_int("n_samples", n_samples, 1)
        self.seed = check_int("seed", seed, 0)
        self.split = split
        self.graph_kwargs = dict(graph_kwargs or {})
        self._cache: dict[int, tuple[nx.DiGraph, torch.Tensor, torch.Tensor]] = {}

    def __len__(self) -> int:
        return self.num_graphs

    def _seeds(self, index: int) -> tuple[int, int]:
        state = np.random.SeedSequence([self.seed, _SPLITS.index(self.split), index]).generate_state(2)
        return int(state[0]), int(state[1])

    def _draw(self, index: int) -> tuple[nx.DiGraph, torch.Tensor, torch.Tensor]:
        if not 0 <= index < self.num_graphs:
            raise IndexError(f"index must lie in [0, {self.num_graphs}), got {index}")
        if index not in self._cache:
            graph_seed, sample_seed = self._seeds(index)
            graph = random_pbscm_graph(self.n_observed, self.n_latent, seed=graph_seed, **self.graph_kwargs)
            sim = PBSCMSimulator(graph)
            counts = torch.from_numpy(sim.sample(self.n_samples, seed=sample_seed))
            self._cache[index] = (graph, counts, torch.from_numpy(sim.true_graph()))
        return self._cache[index]

    def graph(self, index: int) -> nx.DiGraph:
        """The annotated ``networkx`` graph of item ``index`` (latent nodes included), e.g. for exact tests."""
        return self._draw(index)[0]

    def __getitem__(self, index: int) -> dict[str, Any]:
        _, counts, target = self._draw(index)
        return {"counts": counts, "target": target, "index": index}


class PBSCMDataModule(SplitsDataModule):
    """Loaders over :class:`PBSCMGraphs`: batches of count tables ``(B, n, p)`` with edge codes ``(B, p, p)``.

    Args:
        num_train: graphs in the ``train`` split (estimators without training leave it at 0).
        num_val: graphs in the ``val`` split, for choosing settings.
        num_test: graphs in the ``test`` split, for reporting.
        n_observed: observed variables per graph (>= 3).
        n_latent: latent confounders per graph.
        n_samples: rows per count table.
        edges_per_node: expected edges per observed node.
        alpha_range: range of the thinning probabilities.
        mu_range: range of the Poisson means.
        batch_size: graphs per batch.
        seed: data seed.

    Example:
        >>> dm = PBSCMDataModule(num_val=1, num_test=3, n_observed=5, n_latent=2, n_samples=100, batch_size=2)
        >>> batch = next(iter(dm.test_dataloader()))
        >>> tuple(batch["counts"].shape), tuple(batch["target"].shape)
        ((2, 100, 5), (2, 5, 5))
    """

    def __init__(
        self,
        num_train: int = 0,
        num_val: int = 5,
        num_test: int = 20,
        n_observed: int = 6,
        n_latent: int = 2,
        n_samples: int = 10_000,
        edges_per_node: float = 1.5,
        alpha_range: tuple[float, float] = (0.2, 1.0),
        mu_range: tuple[float, float] = (1.0, 3.0),
        batch_size: int = 1,
        seed: int = 0,
    ) -> None:
        super().__init__()
        for name, value, low in (
            ("num_train", num_train, 0),
            ("num_val", num_val, 0),
            ("num_test", num_test, 0),
            ("n_observed", n_observed, 3),
            ("n_latent", n_latent, 0),
            ("n_samples", n_samples, 1),
            ("batch_size", batch_size, 1),
            ("seed", seed, 0),
        ):
            check_int(name, value, low)
        # the graph generator checks these; drawing one tiny graph now makes a bad value fail at construction
        random_pbscm_graph(3, 0, edges_per_node=edges_per_node, alpha_range=alpha_range, mu_range=mu_range, seed=0)
        self.save_hyperparameters()

    def setup(self, stage: str | None = None) -> None:
        """Create the three splits (graphs are drawn lazily, on first access)."""
        if self._splits:
            return
        hp: Any = self.hparams
        kwargs = {
            "edges_per_node": hp.edges_per_node,
            "alpha_range": tuple(hp.alpha_range),
            "mu_range": tuple(hp.mu_range),
        }
        for split in _SPLITS:
            self._splits[split] = PBSCMGraphs(
                hp[f"num_{split}"], hp.n_observed, hp.n_latent, hp.n_samples, split, hp.seed, kwargs
            )

    def train_dataloader(self) -> Any:
        """Training loader, in index order (the graphs are independent draws already)."""
        return self._loader("train", shuffle=False)

    def graphs(self, split: str) -> PBSCMGraphs:
        """The dataset of ``split`` (``"train"``, ``"val"`` or ``"test"``), e.g. to read its graphs."""
        if split not in _SPLITS:
            raise ValueError(f"split must be one of {_SPLITS}, got {split!r}")
        self.setup()
        dataset = self._splits[split]
        if not isinstance(dataset, PBSCMGraphs):
            raise TypeError(f"split {split!r} holds {type(dataset).__name__}, not PBSCMGraphs")
        return dataset
