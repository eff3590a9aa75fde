"""CIFAR-style ResNets (He et al. 2016, section 4.2): three stages of basic blocks, widths ``w, 2w, 4w``."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["BasicBlock", "CifarResNet"]


class BasicBlock(nn.Module):
    """Two 3x3 conv-BN layers with a residual connection (1x1 conv-BN shortcut when the shape changes).

    Example:
        >>> BasicBlock(4, 8, stride=2)(torch.zeros(2, 4, 8, 8)).shape
        torch.Size([2, 8, 4, 4])
    """

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride, bias=False), nn.BatchNorm2d(out_channels)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Residual block output."""
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class CifarResNet(nn.Module):
    """ResNet-``depth`` for small images: a 3x3 stem, 3 stages of ``(depth - 2) / 6`` blocks, global pooling.

    ``depth = 20`` with ``width = 16`` is the classical ResNet-20 (0.27 M parameters); ``depth = 8`` with a
    narrow ``width`` is the CPU-sized version the benchmarks use.

    Args:
        depth: ``6 n + 2`` for a positive integer ``n`` (8, 14, 20, 32, 44, 56, 110).
        width: channels of the first stage.
        in_channels: image channels (1 for FashionMNIST, 3 for CIFAR-10).
        num_classes: output logits.

    Example:
        >>> net = CifarResNet(depth=8, width=4, in_channels=1, num_classes=10)
        >>> net(torch.zeros(2, 1, 28, 28)).shape
        torch.Size([2, 10])
    """

    def __init__(self, depth: int = 20, width: int = 16, in_channels: int = 3, num_classes: int = 10) -> None:
        super().__init__()
        if depth < 8 or (depth - 2) % 6 != 0:
            raise ValueError(f"depth must be 6n + 2 with n >= 1 (8, 14, 20, ...), got {depth}")
        for name, value in (("width", width), ("in_channels", in_channels)):
            if value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value}")
        if num_classes < 2:
            raise ValueError(f"num_classes must be at least 2, got {num_classes}")
        blocks_per_stage = (depth - 2) // 6
        self.stem = nn.Sequential(nn.Conv2d(in_channels, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        layers: list[nn.Module] = []
        channels = width
        for stage, out_channels in enumerate((width, 2 * width, 4 * width)):
            for block in range(blocks_per_stage):
                stride = 2 if stage > 0 and block == 0 else 1
                layers.append(BasicBlock(channels, out_channels, stride))
                channels = out_channels
        self.layers = nn.Sequential(*layers)
        self.head = nn.Linear(channels, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(batch, num_classes)``."""
        out = self.layers(self.stem(x))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(out, 1), 1))
