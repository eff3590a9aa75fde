"""FashionMNIST transfer: a deep MLP pretrained on five classes, probed layer by layer on the other five.

The backbone (:class:`DeepMLP`, ``depth`` blocks ``Linear -> LayerNorm -> ReLU`` of constant width) is trained
in the project on the *source* classes 0-4 (T-shirt, trouser, pullover, dress, coat) of the FashionMNIST
training split, then frozen. The *target* task is the other five classes (sandal, shirt, sneaker, bag, ankle
boot): the per-block outputs of target images are the candidate layers. Training, validation and calibration
samples come from the FashionMNIST training split, the test samples from its separate ``t10k`` split.

The IDX files come from the Debian package ``dataset-fashion-mnist`` and are read by
:func:`lightning_icml26.data.fashion_mnist.load_fashion_mnist`.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from lightning_icml26.data.fashion_mnist import FASHION_MNIST_ROOT, load_fashion_mnist
from lightning_icml26.data.layer_features import LayerFeatureDataModule, cached_tensor, stratified_split

__all__ = ["DeepMLP", "FashionTransferFeatures", "pretrain_deep_mlp"]

SOURCE_CLASSES = (0, 1, 2, 3, 4)
TARGET_CLASSES = (5, 6, 7, 8, 9)


class DeepMLP(nn.Module):
    """Plain deep MLP (no skip connections): ``depth`` blocks ``Linear -> LayerNorm -> ReLU`` and a head.

    Args:
        in_features: input size.
        width: block width.
        depth: number of blocks (the candidate layers).
        num_classes: head outputs.

    Example:
        >>> net = DeepMLP(6, 8, depth=3, num_classes=2)
        >>> net.layer_outputs(torch.randn(4, 6)).shape, net(torch.randn(4, 6)).shape
        (torch.Size([4, 3, 8]), torch.Size([4, 2]))
    """

    def __init__(self, in_features: int = 784, width: int = 128, depth: int = 8, num_classes: int = 5) -> None:
        super().__init__()
        if depth < 1 or width < 1:
            raise ValueError(f"depth and width must be positive, got {depth} and {width}")
        dims = [in_features] + [width] * depth
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(dims[i], dims[i + 1]), nn.LayerNorm(dims[i + 1]), nn.ReLU()) for i in range(depth)
        )
        self.head = nn.Linear(width, num_classes)

    def layer_outputs(self, x: Tensor) -> Tensor:
        """``(B, depth, width)`` outputs of every block."""
        outs = []
        h = x.flatten(1)
        for block in self.blocks:
            h = block(h)
            outs.append(h)
        return torch.stack(outs, dim=1)

    def forward(self, x: Tensor) -> Tensor:
        """Logits of the source task."""
        h = x.flatten(1)
        for block in self.blocks:
            h = block(h)
        return self.head(h)


def _images(x: Tensor) -> Tensor:
    return (x.float() / 255.0 - 0.2860) / 0.3530


def pretrain_deep_mlp(
    depth: int = 8,
    width: int = 128,
    num_source: int = 10000,
    epochs: int = 5,
    seed: int = 0,
    root: str = FASHION_MNIST_ROOT,
) -> DeepMLP:
    """Train a :class:`DeepMLP` on the source classes 0-4 of the FashionMNIST training split.

    Args:
        depth: number of blocks.
        width: block width.
        num_source: source training images (drawn from classes 0-4).
        epochs: passes over them (Adam, lr 1e-3, batch 128).
        seed: initialisation and shuffling seed.
        root: folder of the IDX files.

    Returns:
        The trained network, in eval mode.

    Example:
        >>> import os
        >>> from lightning_icml26.data.fashion_mnist import FASHION_MNIST_ROOT
        >>> if os.path.isdir(FASHION_MNIST_ROOT):  # the Debian package dataset-fashion-mnist (make data)
        ...     net = pretrain_deep_mlp(depth=2, width=16, num_source=256, epochs=1)
        ...     assert net(torch.zeros(3, 784)).shape == (3, 5)
    """
    x, y = load_fashion_mnist(root, "train")
    idx = torch.nonzero(y < len(SOURCE_CLASSES)).flatten()
    generator = torch.Generator().manual_seed(seed)
    idx = idx[torch.randperm(len(idx), generator=generator)[:num_source]]
    xs, ys = _images(x[idx]).flatten(1), y[idx]
    torch.manual_seed(seed)
    net = DeepMLP(784, width, depth, len(SOURCE_CLASSES))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    for _ in range(epochs):
        order = torch.randperm(len(xs), generator=generator)
        for start in range(0, len(xs), 128):
            b = order[start : start + 128]
            loss = nn.functional.cross_entropy(net(xs[b]), ys[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return net.eval()


class FashionTransferFeatures(LayerFeatureDataModule):
    """Per-block features of a source-pretrained :class:`DeepMLP` on the five target classes.

    Args:
        depth: backbone depth (number of candidate layers).
        width: backbone width (= feature dimension).
        num_source: source images for pretraining.
        pretrain_epochs: pretraining epochs.
        per_class: target training-split images per class (split into train / val).
        test_per_class: target ``t10k`` images per class (the test split).
        val_fraction: fraction of the training-split target images kept for validation.
        calibration_size: see :class:`LayerFeatureDataModule`.
        batch_size: loader batch size.
        seed: seed of pretraining and splits.
        cache_dir: where features are cached (``None``: recompute).
        root: folder of the IDX files.

    Example:
        >>> dm = FashionTransferFeatures(depth=4, per_class=50)  # nothing is loaded before setup()
        >>> dm.depth, dm.per_class
        (4, 50)
    """

    def __init__(
        self,
        depth: int = 8,
        width: int = 128,
        num_source: int = 10000,
        pretrain_epochs: int = 5,
        per_class: int = 600,
        test_per_class: int = 400,
        val_fraction: float = 0.25,
        calibration_size: int = 2000,
        batch_size: int = 128,
        seed: int = 0,
        cache_dir: str | None = None,
        root: str = FASHION_MNIST_ROOT,
    ) -> None:
        if per_class < 4 or test_per_class < 1:
            raise ValueError(f"per_class must be >= 4 and test_per_class >= 1, got {per_class}, {test_per_class}")
        super().__init__(None, None, val_fraction, 0.1, calibration_size, batch_size, seed)
        self.depth, self.width = depth, width
        self.num_source, self.pretrain_epochs = num_source, pretrain_epochs
        self.per_class, self.test_per_class = per_class, test_per_class
        self.cache_dir, self.root = cache_dir, root
        self._num_fit = 0

    def _target(self, split: str, per_class: int) -> tuple[Tensor, Tensor]:
        x, y = load_fashion_mnist(self.root, split)
        generator = torch.Generator().manual_seed(self.seed + (0 if split == "train" else 1))
        chosen = []
        for new, cls in enumerate(TARGET_CLASSES):
            idx = torch.nonzero(y == cls).flatten()
            chosen.append((idx[torch.randperm(len(idx), generator=generator)[:per_class]], new))
        xs = torch.cat([x[i] for i, _ in chosen])
        ys = torch.cat([torch.full((len(i),), new, dtype=torch.long) for i, new in chosen])
        return _images(xs).flatten(1), ys

    def load(self) -> tuple[Tensor, Tensor]:
        """Pretrain (or read the cache) and extract per-block target features: fit part first, then test."""
        key = {
            "name": f"fashion-d{self.depth}",
            "width": self.width,
            "num_source": self.num_source,
            "epochs": self.pretrain_epochs,
            "per_class": self.per_class,
            "test_per_class": self.test_per_class,
            "seed": self.seed,
        }

        def compute() -> dict[str, Tensor]:
            net = pretrain_deep_mlp(self.depth, self.width, self.num_source, self.pretrain_epochs, self.seed, self.root)
            xf, yf = self._target("train", self.per_class)
            xt, yt = self._target("test", self.test_per_class)
            with torch.no_grad():
                feats = torch.cat([net.layer_outputs(xf), net.layer_outputs(xt)])
            return {"features": feats, "labels": torch.cat([yf, yt]), "num_fit": torch.tensor(len(yf))}

        out = cached_tensor(self.cache_dir, key, compute)
        self._num_fit = int(out["num_fit"])
        return out["features"], out["labels"]

    def split(self, labels: Tensor) -> dict[str, Tensor]:
        """Train / val from the training-split images, test = the ``t10k`` images."""
        fit = labels[: self._num_fit]
        val, train = stratified_split(fit, (self.val_fraction,), seed=self.seed)
        return {"train": train, "val": val, "test": torch.arange(self._num_fit, len(labels))}
