"""Small reusable networks."""

from __future__ import annotations

from collections.abc import Sequence

from torch import nn

__all__ = ["MLP"]

_ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "silu": nn.SiLU}


class MLP(nn.Sequential):
    """A multi-layer perceptron: ``depth`` hidden layers of width ``hidden``, then a linear head.

    Args:
        in_features: input width.
        out_features: output width.
        hidden: hidden width, or one width per hidden layer (a sequence; ``depth`` must then be ``None`` or
            equal its length).
        depth: number of hidden layers (0 gives a linear model); ``None``: ``len(hidden)`` for a sequence, 2
            otherwise.
        activation: one of ``"relu"``, ``"gelu"``, ``"tanh"``, ``"silu"``.
        flatten: start with ``nn.Flatten()``, so that images ``(batch, C, H, W)`` enter as
            ``(batch, C * H * W)`` vectors.

    Example:
        >>> import torch
        >>> MLP(2, 3, hidden=8, depth=2)(torch.zeros(4, 2)).shape
        torch.Size([4, 3])
        >>> net = MLP(784, 10, hidden=[300, 100], flatten=True)  # LeNet-300-100 on 28x28 images
        >>> net(torch.zeros(4, 1, 28, 28)).shape, [m.out_features for m in net if isinstance(m, nn.Linear)]
        (torch.Size([4, 10]), [300, 100, 10])
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        hidden: int | Sequence[int] = 64,
        depth: int | None = None,
        activation: str = "relu",
        flatten: bool = False,
    ) -> None:
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}")
        if isinstance(hidden, int):
            depth = 2 if depth is None else depth
            widths = [hidden] * max(depth, 0)
        else:
            widths = [int(w) for w in hidden]
            if depth is not None and depth != len(widths):
                raise ValueError(f"depth must be None or len(hidden)={len(widths)} for a list of widths, got {depth}")
            depth = len(widths)
        if depth < 0:
            raise ValueError(f"depth must be non-negative, got {depth}")
        for name, value in (("in_features", in_features), ("out_features", out_features)):
            if value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value}")
        if any(w < 1 for w in widths) or (isinstance(hidden, int) and hidden < 1):
            raise ValueError(f"hidden must be a positive integer or a list of them, got {hidden!r}")
        layers: list[nn.Module] = [nn.Flatten()] if flatten else []
        width = in_features
        for w in widths:
            layers += [nn.Linear(width, w), _ACTIVATIONS[activation]()]
            width = w
        layers.append(nn.Linear(width, out_features))
        super().__init__(*layers)
