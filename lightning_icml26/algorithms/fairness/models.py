"""Small torch probability models (softmax regression or MLP) for ``P(Y | x)``, ``p(a | x)``, ``p(a, y | x)``."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

__all__ = ["fit_probability_model", "make_mlp"]


def make_mlp(in_features: int, out_features: int, hidden: Sequence[int] = ()) -> nn.Module:
    """A ReLU MLP (softmax regression when ``hidden`` is empty) returning logits.

    Args:
        in_features: input dimension.
        out_features: number of logits.
        hidden: widths of the hidden layers.

    Returns:
        The module.

    Example:
        >>> make_mlp(4, 3, hidden=(8,))(torch.zeros(2, 4)).shape
        torch.Size([2, 3])
    """
    layers: list[nn.Module] = []
    width = in_features
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, out_features))
    return nn.Sequential(*layers)


def fit_probability_model(
    x: Tensor,
    target: Tensor,
    num_outputs: int,
    hidden: Sequence[int] = (),
    steps: int = 300,
    lr: float = 0.05,
    weight_decay: float = 1e-4,
    seed: int = 0,
) -> nn.Module:
    """Fit a classifier by full-batch Adam on the cross-entropy; returns the module (logits) in eval mode.

    Args:
        x: features ``(n, d)``.
        target: labels ``(n,)`` in ``[0, num_outputs)``.
        num_outputs: number of classes.
        hidden: hidden widths (empty: softmax regression).
        steps: Adam steps on the whole batch.
        lr: learning rate.
        weight_decay: decoupled weight decay (AdamW).
        seed: initialisation seed.

    Returns:
        The fitted module.

    Raises:
        ValueError: if labels are outside ``[0, num_outputs)`` or shapes disagree.

    Example:
        >>> x = torch.randn(64, 2, generator=torch.Generator().manual_seed(0))
        >>> model = fit_probability_model(x, (x[:, 0] > 0).long(), 2, steps=50)
        >>> bool((model(x).argmax(1) == (x[:, 0] > 0).long()).float().mean() > 0.9)
        True
    """
    if x.ndim != 2 or target.ndim != 1 or x.shape[0] != target.shape[0]:
        raise ValueError(f"x must be (n, d) and target (n,), got {tuple(x.shape)} and {tuple(target.shape)}")
    if target.numel() and (int(target.min()) < 0 or int(target.max()) >= num_outputs):
        raise ValueError(
            f"target must hold integers in [0, {num_outputs}), got [{int(target.min())}, {int(target.max())}]"
        )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = make_mlp(x.shape[1], num_outputs, hidden)
    x = x.float()
    target = target.long()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), target)
        loss.backward()
        optimizer.step()
    return model.eval()
