"""One-class "seen detectors": fit on embeddings of problems already used, score how in-support new ones are.

Every detector follows one convention: :meth:`score` is **higher for more seen** (more in-support) inputs, so
that a calibrated score (:class:`~lightning_icml26.algorithms.novelty.CalibratedSeenDetector`) reads as "how
seen" and novelty is one minus it. The scikit-learn detectors return their ``decision_function`` (OC-SVM,
IsolationForest) or the negated mean distance to the ``k`` nearest fitted points; Deep SVDD returns the negated
squared distance of the network's image to the hypersphere centre.

Reconstructed choices (the paper that motivates this module was not located): the detector families come from
the method's description; their hyper-parameter defaults (RBF ``gamma="scale"``, ``nu=0.1``, 100 trees,
``k=5``, a two-layer bias-free SVDD network trained with Adam for 200 full-batch steps) are ours.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import torch
from torch import Tensor, nn

from lightning_icml26._optional import require

if TYPE_CHECKING:  # scikit-learn (the `novelty` extra) is imported when a detector is built
    from sklearn.ensemble import IsolationForest
    from sklearn.neighbors import NearestNeighbors
    from sklearn.svm import OneClassSVM

__all__ = [
    "DeepSVDDDetector",
    "IsolationForestDetector",
    "KNNDistanceDetector",
    "OneClassSVMDetector",
    "SeenDetector",
    "check_embeddings",
]


def check_embeddings(embeddings: Tensor, dim: int | None = None, name: str = "embeddings") -> Tensor:
    """Validate a ``(n, d)`` float tensor of embeddings and return it as float64 on the CPU.

    Args:
        embeddings: the embeddings.
        dim: the width they must have (``None`` accepts any).
        name: the argument name quoted in errors.

    Returns:
        The embeddings, detached, float64, CPU.

    Raises:
        TypeError: if ``embeddings`` is not a floating tensor.
        ValueError: if it is not 2-D, has a wrong width or holds non-finite values.

    Example:
        >>> check_embeddings(torch.zeros(2, 3), dim=3).dtype
        torch.float64
    """
    if not isinstance(embeddings, Tensor) or not embeddings.is_floating_point():
        raise TypeError(f"{name} must be a floating-point torch.Tensor, got {type(embeddings).__name__}")
    if embeddings.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n, d), got shape {tuple(embeddings.shape)}")
    if dim is not None and embeddings.shape[1] != dim:
        raise ValueError(f"{name} has width {embeddings.shape[1]}, the detector was fitted on width {dim}")
    if not bool(torch.isfinite(embeddings).all()):
        raise ValueError(f"{name} holds non-finite values")
    return embeddings.detach().to("cpu", torch.float64)


@runtime_checkable
class SeenDetector(Protocol):
    """What a seen detector offers: ``fit`` on buffered embeddings, ``score`` (higher = more seen).

    Example:
        >>> isinstance(KNNDistanceDetector(), SeenDetector)
        True
    """

    def fit(self, embeddings: Tensor) -> SeenDetector:
        """Fit on the ``(n, d)`` embeddings of seen problems; returns ``self``."""
        ...

    def score(self, embeddings: Tensor) -> Tensor:
        """A float64 ``(n,)`` tensor, higher for inputs closer to the fitted support."""
        ...


def _sklearn(module: str, detector: str) -> ModuleType:
    """Import ``sklearn.<module>`` for ``detector``, or fail naming the ``novelty`` extra."""
    return require(f"sklearn.{module}", extra="novelty", purpose=detector)


class _SklearnDetector:
    """Shared fit/score plumbing for the scikit-learn backed detectors."""

    min_fit: int = 1
    dim: int | None = None

    def _check_fit(self, embeddings: Tensor) -> np.ndarray:
        x = check_embeddings(embeddings)
        if x.shape[0] < self.min_fit:
            raise ValueError(
                f"embeddings has {x.shape[0]} rows; {type(self).__name__} needs at least {self.min_fit} to fit"
            )
        self.dim = int(x.shape[1])
        return x.numpy()

    def _check_score(self, embeddings: Tensor) -> np.ndarray:
        if self.dim is None:
            raise RuntimeError(f"{type(self).__name__} is not fitted: call fit first")
        return check_embeddings(embeddings, self.dim).numpy()


class OneClassSVMDetector(_SklearnDetector):
    """scikit-learn ``OneClassSVM``; the score is its ``decision_function``.

    Args:
        nu: upper bound on the share of training outliers, in ``(0, 1]``.
        gamma: RBF kernel width (``"scale"``, ``"auto"`` or a positive float).

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> det = OneClassSVMDetector().fit(torch.randn(50, 2, generator=g))
        >>> bool(det.score(torch.zeros(1, 2)) > det.score(torch.full((1, 2), 6.0)))
        True
    """

    def __init__(self, nu: float = 0.1, gamma: float | str = "scale") -> None:
        if not 0.0 < float(nu) <= 1.0:
            raise ValueError(f"nu must lie in (0, 1], got {nu!r}")
        self.nu = float(nu)
        self.gamma = gamma
        _sklearn("svm", "OneClassSVMDetector")  # a missing scikit-learn is reported when the detector is built
        self.model: OneClassSVM | None = None

    def fit(self, embeddings: Tensor) -> OneClassSVMDetector:
        """Fit the one-class SVM (see :class:`SeenDetector`)."""
        x = self._check_fit(embeddings)
        self.model = (
            _sklearn("svm", "OneClassSVMDetector").OneClassSVM(kernel="rbf", nu=self.nu, gamma=self.gamma).fit(x)
        )
        return self

    def score(self, embeddings: Tensor) -> Tensor:
        """``decision_function`` of the fitted SVM (see :class:`SeenDetector`)."""
        x = self._check_score(embeddings)
        assert self.model is not None
        return torch.from_numpy(np.asarray(self.model.decision_function(x), dtype=np.float64))


class IsolationForestDetector(_SklearnDetector):
    """scikit-learn ``IsolationForest``; the score is its ``decision_function``.

    Args:
        n_estimators: number of trees.
        seed: ``random_state`` of the forest.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> det = IsolationForestDetector(seed=0).fit(torch.randn(64, 2, generator=g))
        >>> bool(det.score(torch.zeros(1, 2)) > det.score(torch.full((1, 2), 6.0)))
        True
    """

    def __init__(self, n_estimators: int = 100, seed: int = 0) -> None:
        if isinstance(n_estimators, bool) or not isinstance(n_estimators, int) or n_estimators < 1:
            raise ValueError(f"n_estimators must be a positive int, got {n_estimators!r}")
        self.n_estimators = n_estimators
        self.seed = int(seed)
        _sklearn("ensemble", "IsolationForestDetector")
        self.model: IsolationForest | None = None

    def fit(self, embeddings: Tensor) -> IsolationForestDetector:
        """Fit the forest (see :class:`SeenDetector`)."""
        x = self._check_fit(embeddings)
        forest = _sklearn("ensemble", "IsolationForestDetector").IsolationForest
        self.model = forest(n_estimators=self.n_estimators, random_state=self.seed).fit(x)
        return self

    def score(self, embeddings: Tensor) -> Tensor:
        """``decision_function`` of the fitted forest (see :class:`SeenDetector`)."""
        x = self._check_score(embeddings)
        assert self.model is not None
        return torch.from_numpy(np.asarray(self.model.decision_function(x), dtype=np.float64))


class KNNDistanceDetector(_SklearnDetector):
    """Negated mean Euclidean distance to the ``k`` nearest fitted embeddings.

    Args:
        k: neighbours averaged (when fewer points are fitted, all of them are used).

    Example:
        >>> det = KNNDistanceDetector(k=1).fit(torch.tensor([[0.0, 0.0], [3.0, 4.0]]))
        >>> det.score(torch.tensor([[0.0, 1.0]]))
        tensor([-1.], dtype=torch.float64)
    """

    def __init__(self, k: int = 5) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive int, got {k!r}")
        self.k = k
        _sklearn("neighbors", "KNNDistanceDetector")
        self.model: NearestNeighbors | None = None

    def fit(self, embeddings: Tensor) -> KNNDistanceDetector:
        """Index the embeddings (see :class:`SeenDetector`)."""
        x = self._check_fit(embeddings)
        self.model = (
            _sklearn("neighbors", "KNNDistanceDetector").NearestNeighbors(n_neighbors=min(self.k, x.shape[0])).fit(x)
        )
        return self

    def score(self, embeddings: Tensor) -> Tensor:
        """Negated mean distance to the nearest fitted points (see :class:`SeenDetector`)."""
        x = self._check_score(embeddings)
        assert self.model is not None
        dist, _ = self.model.kneighbors(x)
        return torch.from_numpy(-dist.mean(axis=1).astype(np.float64))


class DeepSVDDDetector(nn.Module):
    """Deep SVDD (one-class): a bias-free network maps seen embeddings close to a fixed centre.

    The centre ``c`` is the mean image of the fitted embeddings under the freshly initialised network; the
    network is then trained to minimise the mean squared distance ``||phi(x) - c||^2`` (plus weight decay).
    Bias-free layers avoid the trivial constant solution. Inputs are standardised with the fitted mean and
    standard deviation. The score is ``-||phi(x) - c||^2``.

    Args:
        hidden: hidden width.
        out_dim: output width.
        steps: full-batch Adam steps per fit.
        lr: Adam learning rate.
        weight_decay: Adam weight decay.
        seed: seed of the initialisation (each fit restarts from it, so refits are reproducible).

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> det = DeepSVDDDetector(steps=50).fit(torch.randn(64, 2, generator=g))
        >>> bool(det.score(torch.zeros(1, 2)) > det.score(torch.full((1, 2), 6.0)))
        True
    """

    def __init__(
        self,
        hidden: int = 32,
        out_dim: int = 8,
        steps: int = 200,
        lr: float = 1e-2,
        weight_decay: float = 1e-4,
        seed: int = 0,
    ) -> None:
        super().__init__()
        for name, value in (("hidden", hidden), ("out_dim", out_dim), ("steps", steps)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if lr <= 0 or weight_decay < 0:
            raise ValueError(f"lr must be > 0 and weight_decay >= 0, got lr={lr!r}, weight_decay={weight_decay!r}")
        self.hidden, self.out_dim, self.steps = hidden, out_dim, steps
        self.lr, self.weight_decay, self.seed = float(lr), float(weight_decay), int(seed)
        self.dim: int | None = None
        self.net: nn.Sequential | None = None
        self.register_buffer("center", torch.zeros(0, dtype=torch.float64))
        self.register_buffer("mean", torch.zeros(0, dtype=torch.float64))
        self.register_buffer("std", torch.zeros(0, dtype=torch.float64))

    def _build(self, dim: int) -> nn.Sequential:
        gen_state = torch.random.get_rng_state()
        torch.manual_seed(self.seed)
        net = nn.Sequential(
            nn.Linear(dim, self.hidden, bias=False), nn.LeakyReLU(0.1), nn.Linear(self.hidden, self.out_dim, bias=False)
        ).double()
        torch.random.set_rng_state(gen_state)
        return net

    def fit(self, embeddings: Tensor) -> DeepSVDDDetector:
        """Train the network on the embeddings (see :class:`SeenDetector`)."""
        x = check_embeddings(embeddings)
        if x.shape[0] < 2:
            raise ValueError(f"embeddings has {x.shape[0]} rows; DeepSVDDDetector needs at least 2 to fit")
        self.dim = int(x.shape[1])
        self.mean = x.mean(0)
        self.std = x.std(0).clamp_min(1e-6)
        z = (x - self.mean) / self.std
        self.net = self._build(self.dim)
        with torch.no_grad():
            self.center = self.net(z).mean(0)
        opt = torch.optim.Adam(self.net.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        for _ in range(self.steps):
            opt.zero_grad()
            loss = (self.net(z) - self.center).pow(2).sum(1).mean()
            loss.backward()
            opt.step()
        return self

    def score(self, embeddings: Tensor) -> Tensor:
        """Negated squared distance to the centre (see :class:`SeenDetector`)."""
        if self.net is None or self.dim is None:
            raise RuntimeError("DeepSVDDDetector is not fitted: call fit first")
        z = (check_embeddings(embeddings, self.dim) - self.mean) / self.std
        with torch.no_grad():
            return -(self.net(z) - self.center).pow(2).sum(1)
