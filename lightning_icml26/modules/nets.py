"""Small reusable networks."""

from __future__ import annotations

from torch import nn

__all__ = ["MLP"]

_ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "silu": nn.SiLU}


class MLP(nn.Sequential):
    """A multi-layer perceptron: ``depth`` hidden layers of width ``hidden``, then a linear head.

    Args:
        in_features: input width.
        out_features: output width.
        hidden: hidden width.
        depth: number of hidden layers (0 gives a linear model).
        activation: one of ``"relu"``, ``"gelu"``, ``"tanh"``, ``"silu"``.

    Example:
        >>> import torch
        >>> MLP(2, 3, hidden=8, depth=2)(torch.zeros(4, 2)).shape
        torch.Size([4, 3])
    """

    def __init__(
        self, in_features: int, out_features: int, hidden: int = 64, depth: int = 2, activation: str = "relu"
    ) -> None:
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}")
        if depth < 0:
            raise ValueError(f"depth must be non-negative, got {depth}")
        for name, value in (("in_features", in_features), ("out_features", out_features), ("hidden", hidden)):
            if value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value}")
        layers: list[nn.Module] = []
        width = in_features
        for _ in range(depth):
            layers += [nn.Linear(width, hidden), _ACTIVATIONS[activation]()]
            width = hidden
        layers.append(nn.Linear(width, out_features))
        super().__init__(*layers)
