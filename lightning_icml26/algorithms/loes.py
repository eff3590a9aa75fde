"""LOES: greedy spectral selection of task-discriminative layers from per-layer calibration embeddings.

Faithful to the paper (docs/loes.md; the reference implementation ``arnesh2212/loes`` is the definition):

- ``iso(X) = mean(lambda) / (std(lambda) + eps)`` with ``lambda`` the eigenvalues of ``cov(X_c) + eps I``.
- ``ridge(X, Y)``: ``W = (X_c^T X_c + ridge I)^{-1} X_c^T Y_c``, ``b = mean(Y) - mean(X) W``; its score is the
  in-sample mean squared error of ``X W + b``.
- ``red(X, S) = max_{j in S} ||X^T X_j||_F / (||X||_F ||X_j||_F)``.
- ``tri(X, y)``: mean area of at most ``n_triplets`` random class-centroid triangles.
- Step 1 picks ``argmin MSE(ridge(X_l, Y)) + alpha (1 - iso(X_l))``; step t orthogonalises each candidate
  against the span of the selected layers, ``X~ = X_c - P_S X_c + mean(X)``, fits the current residual and
  scores ``MSE + alpha (1 - iso(X_l)) + gamma red(X_l, S) - eta tri(X~, y)``; the fit of the winner is added
  to the running prediction (residual boosting).
- Label-free variant (``y=None``): ``score = alpha (1 - iso) + gamma red``.

Reading choices where the paper leaves room (stated so they can be checked):

- ``red`` uses the column-centred embeddings (the raw ones make every pair look redundant through their
  common mean); ``iso``'s ``eps`` is ``1e-6``; ``std`` is the population one.
- The simplex term needs at least three classes: with fewer, ``eta > 0`` raises instead of silently
  dropping the term (pass ``eta=0``).
- ``ridge=0`` (unregularised least squares) needs at least as many calibration samples as embedding
  dimensions; otherwise a ``ValueError`` is raised.
- Computation is in float64.

Scale caveat (a property of the reference scoring, kept as is): the MSE of one-hot targets is below 1
while ``alpha (1 - iso)`` is unbounded, so between nearly isotropic layers the sampling noise of ``iso`` can
outweigh the fit term; on real (anisotropic) embeddings ``iso`` is small and stable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

__all__ = ["LayerSelection", "isotropy", "orthogonalize", "redundancy", "ridge_fit", "select_layers", "simplex_area"]

ArrayLike = Tensor | np.ndarray


def _as_tensor(x: Any, name: str) -> Tensor:
    if isinstance(x, Tensor):
        return x.detach().to("cpu", torch.float64)
    if isinstance(x, np.ndarray):
        return torch.from_numpy(np.asarray(x, dtype=np.float64))
    raise TypeError(f"{name} must be a torch.Tensor or numpy.ndarray, got {type(x).__name__}")


def isotropy(x: ArrayLike, eps: float = 1e-6) -> float:
    """Inverse coefficient of variation of the covariance spectrum, ``mean(lambda) / (std(lambda) + eps)``.

    Large for an isotropic cloud, near ``1 / sqrt(D - 1)`` for a rank-1 one.

    Args:
        x: ``(n, D)`` embeddings.
        eps: ridge added to the covariance and to the denominator.

    Returns:
        The isotropy score.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> isotropy(torch.randn(4000, 8, generator=g)) > 10
        True
        >>> isotropy(torch.randn(4000, 1, generator=g) * torch.ones(1, 8)) < 1
        True
    """
    x = _as_tensor(x, "x")
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"x must be (n, D) with n >= 2, got shape {tuple(x.shape)}")
    xc = x - x.mean(0)
    cov = xc.T @ xc / (x.shape[0] - 1) + eps * torch.eye(x.shape[1], dtype=x.dtype)
    lam = torch.linalg.eigvalsh(cov)
    return float(lam.mean() / (lam.std(correction=0) + eps))


def ridge_fit(x: ArrayLike, y: ArrayLike, ridge: float = 1e-3) -> tuple[Tensor, Tensor, Tensor]:
    """Ridge regression on centred data: ``W = (X_c^T X_c + ridge I)^{-1} X_c^T Y_c``, ``b = y_bar - x_bar W``.

    Args:
        x: ``(n, D)`` inputs.
        y: ``(n, T)`` targets.
        ridge: the ridge (``0`` for least squares, which needs ``n >= D``).

    Returns:
        ``(W, b, fitted)`` with ``fitted = x W + b``.

    Example:
        >>> x = torch.randn(50, 3, dtype=torch.float64)
        >>> w, b, fit = ridge_fit(x, x @ torch.ones(3, 1, dtype=torch.float64) + 2, ridge=0.0)
        >>> torch.allclose(w, torch.ones(3, 1, dtype=torch.float64)), round(float(b[0]), 6)
        (True, 2.0)
    """
    x, y = _as_tensor(x, "x"), _as_tensor(y, "y")
    xm, ym = x.mean(0), y.mean(0)
    xc, yc = x - xm, y - ym
    gram = xc.T @ xc + ridge * torch.eye(x.shape[1], dtype=x.dtype)
    w = torch.linalg.solve(gram, xc.T @ yc)
    b = ym - xm @ w
    return w, b, x @ w + b


def orthogonalize(x: ArrayLike, selected: ArrayLike, eps: float = 1e-6) -> Tensor:
    """Remove from ``x`` its projection on the span of ``selected`` (both centred), then add ``x``'s mean back.

    ``X~ = X_c - S_c (S_c^T S_c + eps I)^{-1} S_c^T X_c + mean(X)``.

    Args:
        x: ``(n, D)`` candidate layer.
        selected: ``(n, D_S)`` concatenation of the already selected layers.
        eps: ridge of the projection.

    Returns:
        ``(n, D)`` projected embeddings; ``X~ - mean(X)`` is orthogonal to every column of ``S_c``.

    Example:
        >>> s = torch.randn(40, 2, dtype=torch.float64); x = torch.randn(40, 3, dtype=torch.float64)
        >>> xt = orthogonalize(x, s)
        >>> float(((s - s.mean(0)).T @ (xt - x.mean(0))).abs().max()) < 1e-6
        True
    """
    x, s = _as_tensor(x, "x"), _as_tensor(selected, "selected")
    xm = x.mean(0)
    xc, sc = x - xm, s - s.mean(0)
    gram = sc.T @ sc + eps * torch.eye(s.shape[1], dtype=s.dtype)
    return xc - sc @ torch.linalg.solve(gram, sc.T @ xc) + xm


def redundancy(x: ArrayLike, others: Sequence[ArrayLike]) -> float:
    """``max_j ||X_c^T X_j,c||_F / (||X_c||_F ||X_j,c||_F)`` over the already selected layers (0 if none).

    Args:
        x: ``(n, D)`` candidate layer.
        others: selected layers, each ``(n, D_j)``.

    Returns:
        A value in ``[0, 1]``.

    Example:
        >>> x = torch.randn(30, 4, dtype=torch.float64)
        >>> round(redundancy(x, [x]), 6) > 0.25, redundancy(x, [])
        (True, 0.0)
    """
    xt = _as_tensor(x, "x")
    xc = xt - xt.mean(0)
    best = 0.0
    for o in others:
        ot = _as_tensor(o, "others")
        oc = ot - ot.mean(0)
        denom = float(torch.linalg.norm(xc) * torch.linalg.norm(oc))
        if denom > 0:
            best = max(best, float(torch.linalg.norm(xc.T @ oc) / denom))
    return best


def simplex_area(
    x: ArrayLike, labels: Tensor, n_triplets: int = 200, generator: torch.Generator | None = None
) -> float:
    """Mean triangle area over at most ``n_triplets`` random triplets of distinct class centroids.

    Args:
        x: ``(n, D)`` embeddings.
        labels: ``(n,)`` integer labels with at least three classes.
        n_triplets: cap on the number of triplets (all of them when there are fewer).
        generator: generator of the draw.

    Returns:
        The mean area.

    Example:
        >>> x = torch.tensor([[0.0, 0], [2, 0], [0, 2]], dtype=torch.float64)
        >>> simplex_area(x, torch.tensor([0, 1, 2]))
        2.0
    """
    xt = _as_tensor(x, "x")
    classes = torch.unique(labels)
    if classes.numel() < 3:
        raise ValueError(f"the simplex term needs at least 3 classes, got {classes.numel()}")
    mu = torch.stack([xt[labels == c].mean(0) for c in classes])
    c = classes.numel()
    total = math.comb(c, 3)
    if total <= n_triplets:
        trip = torch.combinations(torch.arange(c), 3)
    else:
        trip = torch.stack([torch.randperm(c, generator=generator)[:3] for _ in range(n_triplets)])
    ab = mu[trip[:, 1]] - mu[trip[:, 0]]
    ac = mu[trip[:, 2]] - mu[trip[:, 0]]
    gram = (ab * ab).sum(1) * (ac * ac).sum(1) - (ab * ac).sum(1) ** 2
    return float((0.5 * gram.clamp_min(0).sqrt()).mean())


@dataclass
class LayerSelection:
    """Result of :func:`select_layers`.

    Attributes:
        indices: selected layer indices, in the order they were picked.
        scores: the winning score at each step.
        isotropy: ``iso`` of every layer.
        steps: per step, a dict of per-layer arrays (``score``, ``mse``, ``iso_penalty``, ``redundancy``,
            ``simplex``; ``nan`` for layers already selected or terms not used).
        residual_mse: mean squared residual after each step (``nan`` in the label-free variant).
    """

    indices: list[int]
    scores: list[float]
    isotropy: list[float]
    steps: list[dict[str, list[float]]] = field(default_factory=list)
    residual_mse: list[float] = field(default_factory=list)


def _targets(y: ArrayLike, n: int, task: str) -> tuple[Tensor, Tensor | None]:
    if isinstance(y, np.ndarray):
        y = torch.from_numpy(y)
    if not isinstance(y, Tensor):
        raise TypeError(f"y must be a torch.Tensor, numpy.ndarray or None, got {type(y).__name__}")
    if y.shape[0] != n:
        raise ValueError(f"y must have {n} rows (one per calibration sample), got shape {tuple(y.shape)}")
    if task == "auto":
        task = "regression" if y.is_floating_point() else "classification"
    if task == "classification":
        if y.is_floating_point() or y.ndim != 1:
            raise ValueError(f"classification needs integer labels of shape (n,), got {y.dtype} {tuple(y.shape)}")
        labels = y.long().cpu()
        _, inverse = torch.unique(labels, return_inverse=True)
        onehot = torch.nn.functional.one_hot(inverse).to(torch.float64)
        return onehot, labels
    if task == "regression":
        target = y.to("cpu", torch.float64)
        return (target[:, None] if target.ndim == 1 else target), None
    raise ValueError(f"task must be 'auto', 'classification' or 'regression', got {task!r}")


# The branches are the argument checks of a public entry point and the labelled / label-free variants of
# one greedy loop; splitting them would scatter the scoring rule over several functions.
def select_layers(  # noqa: C901
    embeddings: Sequence[ArrayLike] | ArrayLike,
    y: ArrayLike | None = None,
    k: int = 3,
    alpha: float = 1.0,
    gamma: float = 0.5,
    eta: float = 0.1,
    ridge: float = 1e-3,
    task: str = "auto",
    n_triplets: int = 200,
    seed: int = 0,
) -> LayerSelection:
    """LOES greedy selection of ``k`` layers from per-layer calibration embeddings.

    Args:
        embeddings: ``L`` arrays ``(n, D_l)`` (a list, or one ``(L, n, D)`` tensor).
        y: integer labels ``(n,)`` (classification, one-hot targets), real targets ``(n,)`` / ``(n, T)``
            (regression), or ``None`` for the label-free variant.
        k: number of layers to select, ``1 <= k <= L``.
        alpha: weight of the isotropy penalty ``1 - iso``.
        gamma: weight of the redundancy penalty.
        eta: weight of the (subtracted) class-centroid simplex area; needs >= 3 classes when > 0.
        ridge: ridge of the residual fits; ``0`` requires ``n >= D``.
        task: ``"auto"`` (integer ``y`` = classification), ``"classification"`` or ``"regression"``.
        n_triplets: cap on the random centroid triplets of the simplex term.
        seed: seed of the triplet draw.

    Returns:
        A :class:`LayerSelection`.

    Raises:
        ValueError: ``k`` out of range, mismatched shapes, fewer than 3 classes with ``eta > 0``, or
            ``ridge == 0`` with fewer samples than dimensions.
        TypeError: inputs of the wrong type.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> y = torch.arange(400) % 3
        >>> scale = torch.tensor([1.0, 1, 2, 3, 4, 5, 6, 7])  # the same anisotropic spectrum in every layer
        >>> layers = [torch.randn(400, 8, generator=g) * scale for _ in range(5)]
        >>> angle = 2 * torch.pi * y / 3  # class centroids on an equilateral triangle: isotropic in 2-D
        >>> signal = 1.2 * torch.stack([angle.cos(), angle.sin()], 1)
        >>> layers[2][:, :2] = signal + 0.53 * torch.randn(400, 2, generator=g)  # unit variance, like the noise
        >>> select_layers(layers, y, k=2).indices[0]
        2
    """
    if isinstance(embeddings, Tensor | np.ndarray | Sequence) and not isinstance(embeddings, str):
        layers = [_as_tensor(e, "embeddings") for e in embeddings]
    else:
        raise TypeError(f"embeddings must be a sequence of (n, D) arrays or an (L, n, D) array, got {type(embeddings)}")
    n_layers = len(layers)
    if n_layers == 0:
        raise ValueError("embeddings must hold at least one layer, got none")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n_layers:
        raise ValueError(f"k must be an int in [1, number of layers = {n_layers}], got {k!r}")
    n = layers[0].shape[0]
    for i, layer in enumerate(layers):
        if layer.ndim != 2 or layer.shape[0] != n:
            raise ValueError(f"every layer must be (n={n}, D); layer {i} has shape {tuple(layer.shape)}")
    if n < 2:
        raise ValueError(f"need at least 2 calibration samples, got {n}")
    if ridge < 0:
        raise ValueError(f"ridge must be >= 0, got {ridge}")
    max_dim = max(layer.shape[1] for layer in layers)
    if ridge == 0 and n < max_dim:
        raise ValueError(
            f"the calibration set has n={n} samples but the embeddings have up to D={max_dim} dimensions: "
            "unregularised least squares (ridge=0) needs n >= D; pass ridge > 0 or more calibration samples"
        )
    generator = torch.Generator().manual_seed(seed)
    iso = [isotropy(layer) for layer in layers]
    iso_pen = [alpha * (1.0 - v) for v in iso]
    nan = float("nan")

    if y is None:  # label-free variant
        selected: list[int] = []
        scores: list[float] = []
        steps: list[dict[str, list[float]]] = []
        for _ in range(k):
            red = [
                nan if i in selected else redundancy(layers[i], [layers[j] for j in selected]) for i in range(n_layers)
            ]
            score = [nan if i in selected else iso_pen[i] + gamma * red[i] for i in range(n_layers)]
            best = min((i for i in range(n_layers) if i not in selected), key=lambda i: score[i])
            selected.append(best)
            scores.append(score[best])
            steps.append({"score": score, "iso_penalty": list(iso_pen), "redundancy": red})
        return LayerSelection(selected, scores, iso, steps, [nan] * k)

    target, labels = _targets(y, n, task)
    if eta > 0:
        if labels is None:
            raise ValueError(f"eta={eta} needs class labels for the simplex term; use eta=0 for regression")
        n_classes = int(torch.unique(labels).numel())
        if n_classes < 3:
            raise ValueError(f"the simplex term (eta={eta}) needs at least 3 classes, got {n_classes}; pass eta=0")

    # step 1
    mse0, fits0 = [], []
    for layer in layers:
        _, _, fitted = ridge_fit(layer, target, ridge)
        fits0.append(fitted)
        mse0.append(float(((target - fitted) ** 2).mean()))
    score0 = [mse0[i] + iso_pen[i] for i in range(n_layers)]
    first = min(range(n_layers), key=lambda i: score0[i])
    selected = [first]
    scores = [score0[first]]
    steps = [{"score": score0, "mse": mse0, "iso_penalty": list(iso_pen)}]
    prediction = fits0[first]
    residual = target - prediction
    residual_mse = [float((residual**2).mean())]
    span = layers[first]

    for _ in range(1, k):
        score = [nan] * n_layers
        mse = [nan] * n_layers
        red = [nan] * n_layers
        tri = [nan] * n_layers
        fits: dict[int, Tensor] = {}
        for i in range(n_layers):
            if i in selected:
                continue
            projected = orthogonalize(layers[i], span)
            _, _, fitted = ridge_fit(projected, residual, ridge)
            fits[i] = fitted
            mse[i] = float(((residual - fitted) ** 2).mean())
            red[i] = redundancy(layers[i], [layers[j] for j in selected])
            tri[i] = simplex_area(projected, labels, n_triplets, generator) if eta > 0 and labels is not None else 0.0
            score[i] = mse[i] + iso_pen[i] + gamma * red[i] - eta * tri[i]
        best = min(fits, key=lambda i: score[i])
        selected.append(best)
        scores.append(score[best])
        steps.append({"score": score, "mse": mse, "iso_penalty": list(iso_pen), "redundancy": red, "simplex": tri})
        prediction = prediction + fits[best]
        residual = target - prediction
        residual_mse.append(float((residual**2).mean()))
        span = torch.cat([span, layers[best]], dim=1)
    return LayerSelection(selected, scores, iso, steps, residual_mse)
