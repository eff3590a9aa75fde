"""LOES top-k layer probing against the usual heads, and GeoReg fine-tuning (``benchmarks/loes_probe.py``).

On one feature setting (the per-block features of a pretrained residual MLP, or a text model's layers) every
head is a :class:`~lightning_icml26.modules.MultiLayerProbe` trained by a Lightning ``Trainer`` with the same
budget (AdamW, cosine decay per step, batch 128): ``raw`` (the pixels), ``last``, ``best_single`` (one head per
layer, the best on validation), ``mean`` / ``learned`` (every layer, mean or learned softmax weights),
``concat_last3`` (the last ``k`` layers) and ``loes`` (the ``k`` layers that
:func:`~lightning_icml26.algorithms.select_layers` picks on the calibration draw). The test split is read once
per head, at its last epoch. With ``finetune=True`` the backbone is fine-tuned with a head on the LOES layers,
with cross-entropy alone and with the :class:`~lightning_icml26.callbacks.GeoReg` callback added.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

import torch
from lightning.pytorch import Callback, Trainer
from torch import Tensor, nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26.algorithms import select_layers
from lightning_icml26.algorithms.loes import redundancy
from lightning_icml26.callbacks.georeg import GeoReg
from lightning_icml26.data.fashion_mnist import FASHION_MNIST_ROOT
from lightning_icml26.data.fashion_residual import FashionResidualFeatures
from lightning_icml26.data.layer_features import LayerFeatureDataModule
from lightning_icml26.data.movie_genres import MovieGenreFeatures
from lightning_icml26.modules.probe import MultiLayerProbe
from lightning_icml26.ops.georeg import GeoRegLoss
from lightning_icml26.tasks._config import TaskConfig

__all__ = ["LOES_PROBE_METHODS", "LoesProbeConfig", "georeg_gradient_share", "loes_probe_task"]

LOES_PROBE_METHODS = ("raw", "last", "best_single", "mean", "learned", "concat_last3", "loes")
_FEATURES = ("fashion", "minilm", "smollm2")


@dataclass(frozen=True)
class LoesProbeConfig(TaskConfig):
    """Settings of :func:`loes_probe_task`.

    Args:
        features: ``"fashion"`` (the residual MLP) or a text model, ``"minilm"`` / ``"smollm2"`` (optional extras;
            frozen-feature heads only, no ``raw`` head, no fine-tuning).
        depth: residual blocks of the backbone (``fashion``).
        width: backbone width (``fashion``).
        seeds: probe seeds (each changes the head initialisation, the train / validation split and the
            calibration draw; the backbone stays).
        epochs: epochs of every head.
        lr: head learning rate.
        k: LOES layers.
        pretrain_epochs: backbone pretraining epochs (``fashion``).
        pretrain_source: pretrain on this many source images (``None``: all).
        per_class: target training-split images per class; test_per_class: target test images per class.
        calibration_size: calibration draw of the LOES selection.
        probe_heads: train the frozen-feature heads (off: only the LOES selection, e.g. before fine-tuning).
        finetune: fine-tune the backbone with a head on the LOES layers, plain and with GeoReg (``fashion``).
        finetune_epochs: fine-tuning epochs; backbone_lr: the backbone's learning rate there.
        georeg_weight: GeoReg weight of the fine-tuning (reference: 0.1).
        batch_size: batch size of every head.
        cache_dir: cache of backbones and features; root: the FashionMNIST IDX folder.

    Example:
        >>> LoesProbeConfig(depth=4, seeds=(0,)).k
        3
    """

    features: str = "fashion"
    depth: int = 8
    width: int = 128
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    epochs: int = 20
    lr: float = 1e-3
    k: int = 3
    pretrain_epochs: int = 15
    pretrain_source: int | None = None
    per_class: int = 1200
    test_per_class: int = 1000
    calibration_size: int = 2000
    probe_heads: bool = True
    finetune: bool = False
    finetune_epochs: int = 10
    backbone_lr: float = 1e-4
    georeg_weight: float = 0.1
    batch_size: int = 128
    cache_dir: str | None = "outputs/cache/loes"
    root: str = FASHION_MNIST_ROOT

    def __post_init__(self) -> None:
        if self.features not in _FEATURES:
            raise ValueError(f"features must be one of {_FEATURES}, got {self.features!r}")
        if not self.seeds:
            raise ValueError(f"seeds must name at least one seed, got {self.seeds!r}")
        for name in ("depth", "epochs", "k", "finetune_epochs", "batch_size"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be a positive int, got {getattr(self, name)!r}")

    def run(self) -> dict[str, Any]:
        """Run :func:`loes_probe_task` with these settings."""
        return loes_probe_task(self)


def feature_data(config: LoesProbeConfig) -> LayerFeatureDataModule:
    """The set-up feature data module of ``config.features`` (the backbone is pretrained or read from the cache)."""
    dm: LayerFeatureDataModule
    if config.features == "fashion":
        dm = FashionResidualFeatures(
            depth=config.depth, width=config.width, pretrain_epochs=config.pretrain_epochs,
            pretrain_source=config.pretrain_source, per_class=config.per_class, test_per_class=config.test_per_class,
            calibration_size=config.calibration_size, cache_dir=config.cache_dir, root=config.root,
        )  # fmt: skip
    else:
        dm = MovieGenreFeatures(config.features, per_class=500, cache_dir=config.cache_dir)
    dm.setup()
    return dm


def resplit(dm: LayerFeatureDataModule, seed: int) -> None:
    """Redraw the train / validation split and the calibration draw of ``dm`` with ``seed``."""
    if isinstance(dm, FashionResidualFeatures):
        dm.resplit(seed)
    else:
        dm.seed, dm.features = seed, None
        dm.setup()


def fit_head(
    model: MultiLayerProbe,
    splits: dict[str, tuple[Tensor, Tensor]],
    config: LoesProbeConfig,
    seed: int,
    callbacks: list[Callback] | None = None,
) -> dict[str, float]:
    """Train ``model`` on ``splits["train"]`` through a ``Trainer``; accuracy (%) on every other split."""
    fine = not model.freeze_backbone
    loader = DataLoader(
        TensorDataset(*splits["train"]), batch_size=config.batch_size, shuffle=True,
        generator=torch.Generator().manual_seed(seed),
    )  # fmt: skip
    trainer = Trainer(
        max_epochs=config.finetune_epochs if fine else config.epochs, accelerator="cpu", devices=1, logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False, callbacks=callbacks,
    )  # fmt: skip
    model.train()  # a fine-tuned backbone comes in eval mode; Lightning keeps each module's mode
    trainer.fit(model, train_dataloaders=loader)
    model.eval()
    with torch.no_grad():
        return {
            name: float((model(x).argmax(1) == y).float().mean()) * 100
            for name, (x, y) in splits.items()
            if name != "train"
        }


def feature_head(
    dm: LayerFeatureDataModule, layers: list[int], fusion: str, config: LoesProbeConfig, seed: int
) -> dict[str, float]:
    """One head on frozen per-layer features; validation and test accuracy (%)."""
    torch.manual_seed(seed)
    model = MultiLayerProbe(
        dm.num_classes, dm.embed_dim, layers=layers, fusion=fusion, lr=config.lr, cosine_interval="step"
    )
    return fit_head(model, {s: dm.subset(s) for s in ("train", "val", "test")}, config, seed)


def raw_head(dm: FashionResidualFeatures, config: LoesProbeConfig, seed: int) -> dict[str, float]:
    """The same head on the raw pixels (one slot of width 784)."""
    torch.manual_seed(seed)
    model = MultiLayerProbe(dm.num_classes, 784, layers=[0], lr=config.lr, cosine_interval="step")
    splits = {s: (x[:, None, :], y) for s, (x, y) in ((s, dm.inputs(s)) for s in ("train", "val", "test"))}
    return fit_head(model, splits, config, seed)


def loes_layers(dm: LayerFeatureDataModule, config: LoesProbeConfig, seed: int) -> list[int]:
    """The ``k`` layers :func:`select_layers` picks on the calibration draw."""
    xc, yc = dm.subset("calibration")
    return list(select_layers(list(xc.transpose(0, 1)), yc, k=config.k, seed=seed).indices)


def probe_seed(dm: LayerFeatureDataModule, config: LoesProbeConfig, seed: int, layers: list[int]) -> dict[str, Any]:
    """Every frozen-feature head of one seed: test accuracies and the best single layer (by validation)."""
    n = dm.num_layers
    acc = {
        "loes": feature_head(dm, layers, "concat", config, seed)["test"],
        "last": feature_head(dm, [n - 1], "concat", config, seed)["test"],
        "concat_last3": feature_head(dm, list(range(max(n - config.k, 0), n)), "concat", config, seed)["test"],
        "mean": feature_head(dm, list(range(n)), "mean", config, seed)["test"],
        "learned": feature_head(dm, list(range(n)), "weighted", config, seed)["test"],
    }
    singles = [feature_head(dm, [i], "concat", config, seed) for i in range(n)]
    best = max(range(n), key=lambda i: singles[i]["val"])
    acc["best_single"] = singles[best]["test"]
    if isinstance(dm, FashionResidualFeatures):
        acc["raw"] = raw_head(dm, config, seed)["test"]
    return {"test_acc": acc, "best_single": best}


def georeg_gradient_share(model: MultiLayerProbe, x: Any, y: Tensor, weight: float = 0.1, seed: int = 0) -> float:
    """``|d(weight * GeoReg)/dz| / |d CE/dz|`` on the fused embedding ``z`` of one batch (no parameter changes).

    Args:
        model: the probe (any backbone); it is put in eval mode.
        x: the batch's inputs.
        y: the batch's labels.
        weight: the GeoReg weight.
        seed: seed of the GeoReg class-triplet draw.

    Example:
        >>> probe = MultiLayerProbe(3, 8, layers=[0, 1], adapter_dim=8)
        >>> share = georeg_gradient_share(probe, torch.randn(30, 2, 8), torch.arange(30) % 3)
        >>> share > 0
        True
    """
    model.eval()
    with torch.enable_grad():
        z = model.embed(x)
        ce = nn.functional.cross_entropy(model.probe(z), y)
        pen = GeoRegLoss(seed=seed)(z, y)
        g_ce = torch.autograd.grad(ce, z, retain_graph=True)[0]
        g_reg = torch.autograd.grad(weight * pen, z)[0]
    return float(g_reg.norm() / g_ce.norm())


def finetune_seed(dm: FashionResidualFeatures, config: LoesProbeConfig, seed: int, layers: list[int]) -> dict[str, Any]:
    """Fine-tune the backbone with a head on ``layers``: plain, with GeoReg, and the gradient share at the start."""

    def probe() -> MultiLayerProbe:
        torch.manual_seed(seed)
        net = dm.backbone()
        return MultiLayerProbe(
            dm.num_classes, dm.embed_dim, layers=layers, backbone=net, layer_names=net.layer_names,
            freeze_backbone=False, lr=config.lr, backbone_lr=config.backbone_lr, cosine_interval="step",
        )  # fmt: skip

    x, y = dm.inputs("train")
    batch = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))[: config.batch_size]
    share = georeg_gradient_share(probe(), x[batch], y[batch], config.georeg_weight, seed)
    splits = {s: dm.inputs(s) for s in ("train", "val", "test")}
    plain = fit_head(probe(), splits, config, seed)["test"]
    reg = GeoReg(feature_layer="fusion", weight=config.georeg_weight, seed=seed)
    georeg = fit_head(probe(), splits, config, seed, callbacks=[reg])["test"]
    return {"plain": plain, "georeg": georeg, "share": share}


def adjacent_redundancy(dm: LayerFeatureDataModule) -> float:
    """Mean ``red`` of each layer with the previous one on the calibration draw."""
    x, _ = dm.subset("calibration")
    return statistics.mean(redundancy(x[:, i], [x[:, i - 1]]) for i in range(1, x.shape[1]))


def loes_probe_task(config: LoesProbeConfig) -> dict[str, Any]:
    """Every head (and optionally the GeoReg fine-tuning) over ``config.seeds`` on one feature setting.

    Returns:
        ``num_layers``, ``source_accuracy`` (``nan`` for text), ``adjacent_redundancy``, ``loes_layers`` and
        ``best_single`` (the choices per seed), ``test_acc`` ``{method: [per-seed %]}`` (empty without
        ``probe_heads``) and, with ``finetune``, ``finetune`` ``{"plain": [...], "georeg": [...]}`` and
        ``georeg_over_ce_gradient_at_start`` (per seed).

    Example:
        >>> callable(loes_probe_task)
        True
    """
    if config.finetune and config.features != "fashion":
        raise ValueError(f"finetune needs features='fashion', got features={config.features!r}")
    dm = feature_data(config)
    out: dict[str, Any] = {
        "num_layers": dm.num_layers, "source_accuracy": float(getattr(dm, "source_accuracy", float("nan"))),
        "adjacent_redundancy": adjacent_redundancy(dm), "loes_layers": [], "best_single": [], "test_acc": {},
    }  # fmt: skip
    ft: dict[str, list[float]] = {"plain": [], "georeg": [], "share": []}
    for seed in config.seeds:
        resplit(dm, seed)
        layers = loes_layers(dm, config, seed)
        out["loes_layers"].append(layers)
        if config.probe_heads:
            res = probe_seed(dm, config, seed, layers)
            out["best_single"].append(res["best_single"])
            for method, value in res["test_acc"].items():
                out["test_acc"].setdefault(method, []).append(value)
        if config.finetune and isinstance(dm, FashionResidualFeatures):
            for name, value in finetune_seed(dm, config, seed, layers).items():
                ft[name].append(value)
    if config.finetune:
        out["finetune"] = {"plain": ft["plain"], "georeg": ft["georeg"]}
        out["georeg_over_ce_gradient_at_start"] = ft["share"]
    return out
