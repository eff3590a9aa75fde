"""Multi-layer probing of a frozen or fine-tuned backbone (the LOES downstream head).

:class:`LayerFeatureExtractor` turns any backbone into a ``(B, L, D)`` stack of pooled per-layer features:
through forward hooks on named sub-modules, through ``output_hidden_states=True`` for transformers models,
or by passing precomputed features through unchanged (``backbone=None``).

:class:`MultiLayerProbe` keeps ``k`` layer slots whose indices live in a buffer (so a checkpoint restores
them and :class:`~lightning_icml26.callbacks.LOESLayerSelection` can rewrite them at fit start); each slot
has an adapter ``LayerNorm -> Linear(D, 256) -> GELU``, the slots are fused (concatenation, mean, sum or
learned softmax weights) and a probe ``LayerNorm -> Dropout(0.2) -> Linear`` classifies. AdamW with separate
learning rates for the probe and the backbone (reference code: 1e-4 and 1e-5, weight decay 1e-4, cosine).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import torch
import torchmetrics
from lightning.pytorch import LightningModule
from torch import Tensor, nn

__all__ = ["LayerFeatureExtractor", "LayerFusion", "MultiLayerProbe", "pool_tokens"]

_POOLS = ("mean", "cls", "none")
_FUSIONS = ("concat", "mean", "sum", "weighted")


def pool_tokens(h: Tensor, pool: str = "mean", mask: Tensor | None = None) -> Tensor:
    """Pool a hidden state to ``(B, D)``.

    ``(B, D)`` passes through; ``(B, T, D)`` is averaged over (unmasked) tokens (``"mean"``) or reduced to its
    first token (``"cls"``); ``(B, C, H, W)`` is averaged over space.

    Args:
        h: the hidden state.
        pool: ``"mean"``, ``"cls"`` or ``"none"`` (flatten everything after the batch dimension).
        mask: optional ``(B, T)`` attention mask for ``"mean"``.

    Returns:
        ``(B, D)`` features.

    Example:
        >>> pool_tokens(torch.ones(2, 5, 3)).shape
        torch.Size([2, 3])
    """
    if pool not in _POOLS:
        raise ValueError(f"pool must be one of {_POOLS}, got {pool!r}")
    if pool == "none" or h.ndim == 2:
        return h.flatten(1)
    if h.ndim == 4:
        return h.mean(dim=(2, 3))
    if h.ndim != 3:
        raise ValueError(f"cannot pool a hidden state of shape {tuple(h.shape)}")
    if pool == "cls":
        return h[:, 0]
    if mask is None:
        return h.mean(dim=1)
    m = mask.unsqueeze(-1).to(h.dtype)
    return (h * m).sum(1) / m.sum(1).clamp_min(1.0)


class LayerFeatureExtractor(nn.Module):
    """Pooled per-layer features ``(B, L, D)`` of a backbone.

    Args:
        backbone: any ``nn.Module``; ``None`` means the inputs already are ``(B, L, D)`` features.
        layer_names: names of sub-modules whose outputs are the layers (forward hooks; tuple outputs use their
            first element). Exclusive with ``hidden_states``.
        hidden_states: call ``backbone(**x, output_hidden_states=True)`` (transformers models; ``x`` a mapping
            of tensors, mean pooling honours ``attention_mask``).
        pool: see :func:`pool_tokens`.

    Example:
        >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8))
        >>> ext = LayerFeatureExtractor(net, layer_names=["0", "2"])
        >>> ext(torch.randn(5, 4)).shape
        torch.Size([5, 2, 8])
    """

    def __init__(
        self,
        backbone: nn.Module | None = None,
        layer_names: Sequence[str] | None = None,
        hidden_states: bool = False,
        pool: str = "mean",
    ) -> None:
        super().__init__()
        if pool not in _POOLS:
            raise ValueError(f"pool must be one of {_POOLS}, got {pool!r}")
        if backbone is not None and not isinstance(backbone, nn.Module):
            raise TypeError(f"backbone must be an nn.Module or None, got {type(backbone).__name__}")
        if backbone is not None and bool(layer_names) == hidden_states:
            raise ValueError(
                "with a backbone give exactly one of layer_names or hidden_states=True; "
                f"got layer_names={layer_names}, hidden_states={hidden_states}"
            )
        self.backbone = backbone
        self.layer_names = list(layer_names or [])
        self.hidden_states = hidden_states
        self.pool = pool
        if backbone is not None:
            names = dict(backbone.named_modules())
            missing = [n for n in self.layer_names if n not in names]
            if missing:
                raise ValueError(f"layer_names {missing} are not sub-modules of the backbone")

    def forward(self, x: Any) -> Tensor:
        """Return ``(B, L, D)`` pooled features of the input batch ``x``."""
        if self.backbone is None:
            if not isinstance(x, Tensor) or x.ndim != 3:
                raise ValueError("without a backbone the inputs must be (B, L, D) feature tensors")
            return x
        if self.hidden_states:
            if not isinstance(x, Mapping):
                raise TypeError(f"hidden_states=True needs a mapping of tensors as input, got {type(x).__name__}")
            out = self.backbone(**x, output_hidden_states=True)
            mask = x.get("attention_mask")
            return torch.stack([pool_tokens(h, self.pool, mask) for h in out.hidden_states], dim=1)
        captured: dict[str, Tensor] = {}
        modules = dict(self.backbone.named_modules())
        handles = []
        for name in self.layer_names:

            def hook(_m: nn.Module, _i: Any, out: Any, name: str = name) -> None:
                captured[name] = out[0] if isinstance(out, tuple | list) else out

            handles.append(modules[name].register_forward_hook(hook))
        try:
            self.backbone(**x) if isinstance(x, Mapping) else self.backbone(x)
        finally:
            for h in handles:
                h.remove()
        return torch.stack([pool_tokens(captured[n], self.pool) for n in self.layer_names], dim=1)


class LayerFusion(nn.Module):
    """Fuse ``(B, k, H)`` adapted layer features into one embedding.

    Args:
        num_slots: ``k``.
        fusion: ``"concat"`` (``k * H`` output), ``"mean"``, ``"sum"`` or ``"weighted"`` (learned softmax weights).

    Example:
        >>> LayerFusion(3, "concat")(torch.ones(2, 3, 4)).shape
        torch.Size([2, 12])
    """

    def __init__(self, num_slots: int, fusion: str = "concat") -> None:
        super().__init__()
        if fusion not in _FUSIONS:
            raise ValueError(f"fusion must be one of {_FUSIONS}, got {fusion!r}")
        self.fusion = fusion
        self.logits = nn.Parameter(torch.zeros(num_slots)) if fusion == "weighted" else None

    def forward(self, h: Tensor) -> Tensor:
        """Fused embedding of ``h (B, k, H)``."""
        if self.fusion == "concat":
            return h.flatten(1)
        if self.fusion == "mean":
            return h.mean(1)
        if self.fusion == "sum":
            return h.sum(1)
        assert self.logits is not None
        return (torch.softmax(self.logits, 0)[None, :, None] * h).sum(1)


class MultiLayerProbe(LightningModule):
    """Frozen or fine-tuned backbone + per-layer adapters + fusion + linear probe.

    The features of the layers in the buffer ``layer_indices`` (``k`` slots; negative indices count from the
    last layer) go through one adapter each, are fused by ``self.fusion`` (the named layer GeoReg hooks) and
    classified by ``self.probe``.

    Args:
        num_classes: number of classes.
        embed_dim: width ``D`` of every candidate layer.
        layers: ``k`` (start with the last ``k`` layers) or explicit layer indices.
        backbone: see :class:`LayerFeatureExtractor` (``None``: batches hold ``(B, L, D)`` features).
        layer_names: see :class:`LayerFeatureExtractor`.
        hidden_states: see :class:`LayerFeatureExtractor`.
        pool: see :class:`LayerFeatureExtractor`.
        freeze_backbone: keep the backbone frozen (eval mode, no gradients).
        adapter_dim: adapter width (reference: 256).
        fusion: see :class:`LayerFusion`.
        dropout: probe dropout (reference: 0.2).
        lr: probe / adapter learning rate (reference: 1e-4).
        backbone_lr: backbone learning rate when fine-tuning (reference: 1e-5).
        weight_decay: AdamW weight decay (reference: 1e-4).
        optimizer: optional optimizer factory called with the two parameter groups (Hydra ``_partial_``);
            default AdamW.
        cosine: cosine learning-rate decay over the run.
        cosine_interval: ``"epoch"`` (decay over ``trainer.max_epochs``, stepped once per epoch) or ``"step"``
            (decay over ``trainer.estimated_stepping_batches``, stepped after every optimizer step).

    Example:
        >>> probe = MultiLayerProbe(num_classes=3, embed_dim=8, layers=[0, 2], adapter_dim=16)
        >>> probe(torch.randn(4, 5, 8)).shape
        torch.Size([4, 3])
        >>> probe.set_layers([1, 4]); probe.layer_indices.tolist()
        [1, 4]
    """

    def __init__(
        self,
        num_classes: int,
        embed_dim: int,
        layers: int | Sequence[int] = 3,
        backbone: nn.Module | None = None,
        layer_names: Sequence[str] | None = None,
        hidden_states: bool = False,
        pool: str = "mean",
        freeze_backbone: bool = True,
        adapter_dim: int = 256,
        fusion: str = "concat",
        dropout: float = 0.2,
        lr: float = 1e-4,
        backbone_lr: float = 1e-5,
        weight_decay: float = 1e-4,
        optimizer: Callable[[Iterable[dict[str, Any]]], torch.optim.Optimizer] | None = None,
        cosine: bool = True,
        cosine_interval: str = "epoch",
    ) -> None:
        super().__init__()
        if cosine_interval not in ("epoch", "step"):
            raise ValueError(f"cosine_interval must be 'epoch' or 'step', got {cosine_interval!r}")
        if num_classes < 2:
            raise ValueError(f"num_classes must be at least 2, got {num_classes}")
        if embed_dim < 1 or adapter_dim < 1:
            raise ValueError(f"embed_dim and adapter_dim must be positive, got {embed_dim} and {adapter_dim}")
        if isinstance(layers, int):
            if layers < 1:
                raise ValueError(f"layers must be a positive count or a list of indices, got {layers}")
            indices = list(range(-layers, 0))
        else:
            indices = [int(i) for i in layers]
            if not indices:
                raise ValueError("layers must name at least one layer, got an empty list")
        self.save_hyperparameters(ignore=["backbone", "optimizer"])
        self.extractor = LayerFeatureExtractor(backbone, layer_names, hidden_states, pool)
        self.freeze_backbone = freeze_backbone
        if backbone is not None and freeze_backbone:
            backbone.requires_grad_(False)
            backbone.eval()
        self.layer_indices: Tensor
        self.register_buffer("layer_indices", torch.tensor(indices, dtype=torch.long))
        k = len(indices)
        self.adapters = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(embed_dim), nn.Linear(embed_dim, adapter_dim), nn.GELU()) for _ in range(k)
        )
        self.fusion = LayerFusion(k, fusion)
        fused = adapter_dim * k if fusion == "concat" else adapter_dim
        self.probe = nn.Sequential(nn.LayerNorm(fused), nn.Dropout(dropout), nn.Linear(fused, num_classes))
        self.lr, self.backbone_lr, self.weight_decay = lr, backbone_lr, weight_decay
        self.optimizer_factory = optimizer
        self.cosine, self.cosine_interval = cosine, cosine_interval
        self.train_acc = torchmetrics.Accuracy(task="multiclass", num_classes=num_classes)
        self.val_acc = torchmetrics.Accuracy(task="multiclass", num_classes=num_classes)
        self.test_acc = torchmetrics.Accuracy(task="multiclass", num_classes=num_classes)

    @property
    def num_slots(self) -> int:
        """Number of layer slots ``k``."""
        return len(self.adapters)

    def set_layers(self, indices: Sequence[int]) -> None:
        """Point the ``k`` slots at the given layer indices (e.g. the LOES selection)."""
        idx = [int(i) for i in indices]
        if len(idx) != self.num_slots:
            raise ValueError(f"indices must hold k={self.num_slots} layer indices, got {idx}")
        self.layer_indices.copy_(torch.tensor(idx, dtype=torch.long))

    def layer_features(self, x: Any) -> Tensor:
        """``(B, L, D)`` pooled features of every candidate layer (no gradient when the backbone is frozen)."""
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.freeze_backbone):
            return self.extractor(x)

    def embed(self, x: Any) -> Tensor:
        """Fused embedding of the selected layers."""
        feats = self.layer_features(x)
        n_layers = feats.shape[1]
        idx = self.layer_indices
        if bool(((idx >= n_layers) | (idx < -n_layers)).any()):
            raise ValueError(f"layer_indices {idx.tolist()} out of range for {n_layers} layers")
        chosen = feats[:, idx]
        adapted = torch.stack([adapter(chosen[:, i]) for i, adapter in enumerate(self.adapters)], dim=1)
        return self.fusion(adapted)

    def forward(self, x: Any) -> Tensor:
        """Class logits."""
        return self.probe(self.embed(x))

    def on_train_epoch_start(self) -> None:
        """Keep a frozen backbone in eval mode (no dropout / batch-norm updates)."""
        if self.freeze_backbone and self.extractor.backbone is not None:
            self.extractor.backbone.eval()

    def _step(self, batch: Any, metric: torchmetrics.Metric, stage: str) -> Tensor:
        x, y = batch[0], batch[1]
        logits = self(x)
        loss = nn.functional.cross_entropy(logits, y)
        metric(logits, y)
        self.log(f"{stage}_loss", loss, prog_bar=stage != "train")
        self.log(f"{stage}_acc", metric, prog_bar=True)
        return loss

    def training_step(self, batch: Any, batch_idx: int) -> Tensor:
        """Cross-entropy on ``(x, y)``."""
        return self._step(batch, self.train_acc, "train")

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        """Validation loss and accuracy."""
        self._step(batch, self.val_acc, "val")

    def test_step(self, batch: Any, batch_idx: int) -> None:
        """Test loss and accuracy."""
        self._step(batch, self.test_acc, "test")

    def param_groups(self) -> list[dict[str, Any]]:
        """Probe / adapter / fusion parameters at ``lr``; trainable backbone parameters at ``backbone_lr``."""
        head = [p for n, p in self.named_parameters() if not n.startswith("extractor.")]
        groups: list[dict[str, Any]] = [{"params": head, "lr": self.lr}]
        backbone = [p for p in self.extractor.parameters() if p.requires_grad]
        if backbone and not self.freeze_backbone:
            groups.append({"params": backbone, "lr": self.backbone_lr})
        return groups

    def configure_optimizers(self) -> Any:
        """AdamW (or the given factory) over :meth:`param_groups`, with optional cosine decay."""
        groups = self.param_groups()
        optimizer: torch.optim.Optimizer
        if self.optimizer_factory is None:
            optimizer = torch.optim.AdamW(groups, weight_decay=self.weight_decay)
        else:
            optimizer = self.optimizer_factory(groups)
        if not self.cosine:
            return optimizer
        if self.cosine_interval == "step":
            steps = max(int(self.trainer.estimated_stepping_batches), 1) if self._trainer is not None else 1
            scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
            return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}
        epochs = max(int(self.trainer.max_epochs or 1), 1) if self._trainer is not None else 1
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
        return {"optimizer": optimizer, "lr_scheduler": scheduler}
