"""FashionMNIST transfer through a residual MLP: pretrained well on five classes, probed per block on the others.

The backbone (:class:`ResidualMLP`) has a linear stem, ``depth`` pre-norm residual blocks
``h <- h + W2 GELU(W1 LayerNorm(h))`` and a final ``LayerNorm -> Linear`` head. It is trained in the project
on *all* FashionMNIST training images of the source classes 0-4 (T-shirt, trouser, pullover, dress, coat;
about 30k images) with AdamW and cosine decay, then frozen; its source accuracy on the ``t10k`` images of
those classes is kept with the features. The candidate layers of the *target* task (classes 5-9: sandal,
shirt, sneaker, bag, ankle boot) are the residual stream after every block.

Unlike :class:`~lightning_icml26.data.FashionTransferFeatures` (a plain MLP whose seed also reseeds
pretraining) the backbone here depends on ``pretrain_seed`` only: changing ``seed`` redraws the
train / validation split of the same frozen features, which is what a seed sweep over probes needs.
The module also keeps the target images and the trained weights (:meth:`inputs`, :meth:`backbone`) for
baselines on raw pixels and for fine-tuning.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from lightning_icml26.data.fashion_mnist import FASHION_MNIST_ROOT, load_fashion_mnist
from lightning_icml26.data.fashion_transfer import SOURCE_CLASSES, FashionTransferFeatures, _images
from lightning_icml26.data.layer_features import cached_tensor

__all__ = ["FashionResidualFeatures", "ResidualBlock", "ResidualMLP", "pretrain_residual_mlp"]


class ResidualBlock(nn.Module):
    """Pre-norm residual MLP block ``h + W2 GELU(W1 LayerNorm(h))``; its output is the residual stream.

    Args:
        width: stream width.
        hidden: hidden width of the branch.

    Example:
        >>> block = ResidualBlock(8, 16)
        >>> _ = nn.init.zeros_(block.branch[-1].weight), nn.init.zeros_(block.branch[-1].bias)
        >>> x = torch.randn(3, 8); bool(torch.equal(block(x), x))  # a zero branch passes the stream through
        True
    """

    def __init__(self, width: int, hidden: int) -> None:
        super().__init__()
        self.branch = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, hidden), nn.GELU(), nn.Linear(hidden, width))

    def forward(self, h: Tensor) -> Tensor:
        """Residual stream after the block."""
        return h + self.branch(h)


class ResidualMLP(nn.Module):
    """Residual MLP: ``Linear`` stem, ``depth`` :class:`ResidualBlock` s, ``LayerNorm -> Linear`` head.

    Args:
        in_features: input size.
        width: residual stream width (= feature dimension of every block).
        depth: number of residual blocks (the candidate layers).
        num_classes: head outputs.
        expansion: branch hidden width as a multiple of ``width``.

    Example:
        >>> net = ResidualMLP(6, 8, depth=3, num_classes=2)
        >>> net.layer_outputs(torch.randn(4, 6)).shape, net(torch.randn(4, 6)).shape
        (torch.Size([4, 3, 8]), torch.Size([4, 2]))
    """

    def __init__(
        self, in_features: int = 784, width: int = 128, depth: int = 12, num_classes: int = 5, expansion: int = 2
    ) -> None:
        super().__init__()
        if depth < 1 or width < 1 or expansion < 1:
            raise ValueError(f"depth, width and expansion must be positive, got {depth}, {width}, {expansion}")
        self.stem = nn.Linear(in_features, width)
        self.blocks = nn.ModuleList(ResidualBlock(width, expansion * width) for _ in range(depth))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, num_classes)

    @property
    def layer_names(self) -> list[str]:
        """Sub-module names of the blocks, for forward hooks (e.g. ``MultiLayerProbe(layer_names=...)``)."""
        return [f"blocks.{i}" for i in range(len(self.blocks))]

    def layer_outputs(self, x: Tensor) -> Tensor:
        """``(B, depth, width)`` residual stream after every block."""
        h = self.stem(x.flatten(1))
        outs = []
        for block in self.blocks:
            h = block(h)
            outs.append(h)
        return torch.stack(outs, dim=1)

    def forward(self, x: Tensor) -> Tensor:
        """Logits of the source task."""
        h = self.stem(x.flatten(1))
        for block in self.blocks:
            h = block(h)
        return self.head(self.norm(h))


def _source(root: str, split: str) -> tuple[Tensor, Tensor]:
    x, y = load_fashion_mnist(root, split)
    keep = y < len(SOURCE_CLASSES)
    return _images(x[keep]).flatten(1), y[keep]


def pretrain_residual_mlp(
    depth: int = 12,
    width: int = 128,
    epochs: int = 8,
    lr: float = 2e-3,
    seed: int = 0,
    root: str = FASHION_MNIST_ROOT,
    num_source: int | None = None,
) -> tuple[ResidualMLP, float]:
    """Train a :class:`ResidualMLP` on the source classes 0-4 of the FashionMNIST training split.

    AdamW (weight decay 0.05), linear warm-up over the first epoch then cosine decay, batch 128,
    label smoothing 0.1.

    Args:
        depth: number of residual blocks.
        width: stream width.
        epochs: passes over the source images.
        lr: peak learning rate.
        seed: initialisation and shuffling seed.
        root: folder of the IDX files.
        num_source: use only this many source images (``None``: all of them, about 30k).

    Returns:
        ``(network in eval mode, source test accuracy in % on the t10k images of classes 0-4)``.

    Example:
        >>> import os
        >>> if os.path.isdir(FASHION_MNIST_ROOT):  # the Debian package dataset-fashion-mnist (make data)
        ...     net, acc = pretrain_residual_mlp(depth=2, width=16, epochs=1, num_source=256)
        ...     assert net(torch.zeros(3, 784)).shape == (3, 5) and 0 <= acc <= 100
    """
    if epochs < 1:
        raise ValueError(f"epochs must be a positive int, got {epochs}")
    xs, ys = _source(root, "train")
    generator = torch.Generator().manual_seed(seed)
    if num_source is not None:
        keep = torch.randperm(len(ys), generator=generator)[:num_source]
        xs, ys = xs[keep], ys[keep]
    torch.manual_seed(seed)
    net = ResidualMLP(784, width, depth, len(SOURCE_CLASSES))
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=0.05)
    per_epoch = (len(ys) + 127) // 128
    warm = per_epoch
    sched = torch.optim.lr_scheduler.SequentialLR(
        opt,
        [
            torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.05, total_iters=warm),
            torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(epochs * per_epoch - warm, 1)),
        ],
        milestones=[warm],
    )
    net.train()
    for _ in range(epochs):
        order = torch.randperm(len(ys), generator=generator)
        for start in range(0, len(ys), 128):
            b = order[start : start + 128]
            loss = nn.functional.cross_entropy(net(xs[b]), ys[b], label_smoothing=0.1)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    net.eval()
    xt, yt = _source(root, "test")
    with torch.no_grad():
        acc = float((net(xt).argmax(1) == yt).float().mean()) * 100
    return net, acc


class FashionResidualFeatures(FashionTransferFeatures):
    """Per-block features of a source-pretrained :class:`ResidualMLP` on the five target classes.

    Args:
        depth: number of residual blocks (candidate layers).
        pretrain_epochs: pretraining epochs over all source images.
        pretrain_seed: seed of pretraining and of the draw of target images (fixed across probe seeds).
        pretrain_source: pretrain on only this many source images (``None``: every one, about 30k; a smoke
            test sets a few hundred).
        per_class: target training-split images per class (split into train / val).
        test_per_class: target ``t10k`` images per class (the test split).
        **kwargs: the other keyword arguments of :class:`FashionTransferFeatures`, with its defaults: ``width``
            (stream width = feature dimension), ``val_fraction``, ``calibration_size``, ``batch_size``, ``seed``
            (here only the seed of the train / validation split and of the calibration draw), ``cache_dir``
            (features and weights) and ``root``. ``num_source`` is not one: every source image is used.

    Raises:
        ValueError: for ``pretrain_epochs < 1`` (and the parent's checks).
        TypeError: for ``num_source`` or an argument the parent does not take.

    Attributes:
        source_accuracy: source test accuracy of the backbone in % (after :meth:`setup`).

    Example:
        >>> dm = FashionResidualFeatures(depth=12, per_class=50)  # nothing is loaded before setup()
        >>> dm.depth, dm.pretrain_seed
        (12, 0)
    """

    def __init__(
        self,
        depth: int = 12,
        *,
        pretrain_epochs: int = 8,
        pretrain_seed: int = 0,
        pretrain_source: int | None = None,
        per_class: int = 1200,
        test_per_class: int = 1000,
        **kwargs: Any,
    ) -> None:
        if pretrain_epochs < 1:
            raise ValueError(f"pretrain_epochs must be a positive int, got {pretrain_epochs}")
        if pretrain_source is not None and (
            isinstance(pretrain_source, bool) or not isinstance(pretrain_source, int) or pretrain_source < 1
        ):
            raise ValueError(f"pretrain_source must be None or a positive int, got {pretrain_source!r}")
        if "num_source" in kwargs:
            raise TypeError(
                f"FashionResidualFeatures pretrains on every source image; got num_source={kwargs['num_source']!r}"
            )
        super().__init__(
            depth=depth,
            num_source=0,
            pretrain_epochs=pretrain_epochs,
            per_class=per_class,
            test_per_class=test_per_class,
            **kwargs,
        )
        self.pretrain_seed = pretrain_seed
        self.pretrain_source = pretrain_source
        self.source_accuracy = float("nan")
        self._inputs: Tensor | None = None
        self._state: dict[str, Tensor] | None = None

    def load(self) -> tuple[Tensor, Tensor]:
        """Pretrain (or read the cache) and extract per-block target features: fit part first, then test."""
        key = {
            "name": f"fashion-residual-d{self.depth}",
            "width": self.width,
            "epochs": self.pretrain_epochs,
            "per_class": self.per_class,
            "test_per_class": self.test_per_class,
            "pretrain_seed": self.pretrain_seed,
        }
        if self.pretrain_source is not None:  # (absent by default: the cache key of a full pretraining is unchanged)
            key["pretrain_source"] = self.pretrain_source

        def compute() -> dict[str, Tensor]:
            net, acc = pretrain_residual_mlp(
                self.depth,
                self.width,
                self.pretrain_epochs,
                seed=self.pretrain_seed,
                root=self.root,
                num_source=self.pretrain_source,
            )
            seed, self.seed = self.seed, self.pretrain_seed  # the target draw follows the pretraining seed
            try:
                xf, yf = self._target("train", self.per_class)
                xt, yt = self._target("test", self.test_per_class)
            finally:
                self.seed = seed
            inputs = torch.cat([xf, xt])
            with torch.no_grad():
                feats = net.layer_outputs(inputs)
            out = {"features": feats, "labels": torch.cat([yf, yt]), "num_fit": torch.tensor(len(yf))}
            out.update(inputs=inputs, source_accuracy=torch.tensor(acc))
            out.update({f"state.{k}": v for k, v in net.state_dict().items()})
            return out

        out = cached_tensor(self.cache_dir, key, compute)
        self._num_fit = int(out["num_fit"])
        self.source_accuracy = float(out["source_accuracy"])
        self._inputs = out["inputs"]
        self._state = {k[len("state.") :]: v for k, v in out.items() if k.startswith("state.")}
        return out["features"], out["labels"]

    def inputs(self, name: str) -> tuple[Tensor, Tensor]:
        """``(normalised pixels (n, 784), labels)`` of split ``name``, the same samples as :meth:`subset`."""
        if self._inputs is None or self.labels is None:
            raise RuntimeError("call setup() before reading the inputs")
        if name not in self.splits:
            raise ValueError(f"name must be one of {sorted(self.splits)}, got {name!r}")
        idx = self.splits[name]
        return self._inputs[idx], self.labels[idx]

    def backbone(self) -> ResidualMLP:
        """A fresh copy of the pretrained backbone (eval mode), e.g. for fine-tuning."""
        if self._state is None:
            raise RuntimeError("call setup() before asking for the backbone")
        net = ResidualMLP(784, self.width, self.depth, len(SOURCE_CLASSES))
        net.load_state_dict(self._state)
        return net.eval()

    def resplit(self, seed: int) -> None:
        """Redraw the train / validation split (and the calibration draw) with ``seed``; features stay."""
        if self.labels is None:
            raise RuntimeError("call setup() before resplitting")
        self.seed = seed
        self.splits = self.split(self.labels)
