"""The small ConvNet of the dataset-distillation literature, and the teacher resampling FedUSD uses."""

from __future__ import annotations

import copy

import torch
from torch import Tensor, nn

__all__ = ["ConvNet", "perturbed_copy", "reinitialised_copy"]


class ConvNet(nn.Module):
    """``depth`` blocks of conv 3x3 -> instance norm -> ReLU -> 2x2 average pool, then a linear head.

    Args:
        in_channels: image channels.
        num_classes: classes of the head.
        image_size: input side (square images); must be divisible by ``2 ** depth``.
        width: channels of every conv layer.
        depth: number of conv blocks.

    Example:
        >>> net = ConvNet(1, 10, image_size=16)
        >>> net.embed(torch.zeros(2, 1, 16, 16)).shape, net(torch.zeros(2, 1, 16, 16)).shape
        (torch.Size([2, 512]), torch.Size([2, 10]))
    """

    def __init__(
        self, in_channels: int = 1, num_classes: int = 10, image_size: int = 16, width: int = 32, depth: int = 2
    ) -> None:
        super().__init__()
        for name, value in (
            ("in_channels", in_channels),
            ("num_classes", num_classes),
            ("width", width),
            ("depth", depth),
            ("image_size", image_size),
        ):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if image_size % (2**depth):
            raise ValueError(f"image_size={image_size} must be divisible by 2 ** depth = {2**depth}")
        layers: list[nn.Module] = []
        channels = in_channels
        for _ in range(depth):
            layers += [
                nn.Conv2d(channels, width, 3, padding=1),
                nn.GroupNorm(width, width, affine=True),
                nn.ReLU(),
                nn.AvgPool2d(2),
            ]
            channels = width
        self.features = nn.Sequential(*layers, nn.Flatten())
        self.feature_dim = width * (image_size // 2**depth) ** 2
        self.classifier = nn.Linear(self.feature_dim, num_classes)

    def embed(self, x: Tensor) -> Tensor:
        """Penultimate features ``(n, feature_dim)``."""
        return self.features(x)

    def forward(self, x: Tensor) -> Tensor:
        """Logits ``(n, num_classes)``."""
        return self.classifier(self.embed(x))


def reinitialised_copy(net: nn.Module, generator: torch.Generator) -> nn.Module:
    """A frozen copy of ``net`` with freshly initialised weights (every submodule's ``reset_parameters``).

    The initialisation draws from a seed taken from ``generator``, so the result is reproducible.

    Example:
        >>> net = ConvNet(1, 10, 8)
        >>> a = reinitialised_copy(net, torch.Generator().manual_seed(0))
        >>> b = reinitialised_copy(net, torch.Generator().manual_seed(0))
        >>> all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
        True
    """
    fresh = copy.deepcopy(net)
    seed = int(torch.randint(0, 2**62, (1,), generator=generator))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for module in fresh.modules():
            reset = getattr(module, "reset_parameters", None)
            if callable(reset):
                reset()
    return fresh.requires_grad_(False).eval()


def perturbed_copy(net: nn.Module, radius: float, generator: torch.Generator) -> nn.Module:
    """A frozen copy of ``net`` moved along a Gaussian direction whose total norm is at most ``radius``.

    One standard-normal draw for every weight; if the concatenated direction is longer than ``radius`` it
    is rescaled to length ``radius`` (with thousands of weights that is always the case).

    Example:
        >>> net = ConvNet(1, 10, 8)
        >>> moved = perturbed_copy(net, 0.5, torch.Generator().manual_seed(0))
        >>> shift = torch.cat([(p - q).detach().flatten() for p, q in zip(moved.parameters(), net.parameters())])
        >>> round(float(shift.norm()), 4)
        0.5
    """
    if radius < 0:
        raise ValueError(f"radius must be non-negative, got {radius}")
    moved = copy.deepcopy(net)
    params = list(moved.parameters())
    noise = [torch.randn(p.shape, generator=generator, dtype=p.dtype).to(p.device) for p in params]
    norm = torch.sqrt(sum((n.pow(2).sum() for n in noise), torch.zeros(())))
    scale = min(1.0, radius / float(norm)) if float(norm) > 0 else 0.0
    with torch.no_grad():
        for p, n in zip(params, noise, strict=True):
            p.add_(n, alpha=scale)
    return moved.requires_grad_(False).eval()
