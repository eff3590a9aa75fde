"""Recourse baselines: Wachter, Actionable Recourse, GrowingSpheres and a dice-style random search.

Wachter is white-box (gradients), Actionable Recourse a linear integer program; GrowingSpheres and the
dice-style search are label-only, their queries counted through the same oracle as ASR-ICL's.

All share :class:`~lightning_icml26.algorithms.recourse.RecourseResult` and the spec's normalised
``L1 + L0`` cost. The dice-style search is written from the description of dice-ml's model-agnostic
``random`` method (random feature subsets set to random allowed values, first valid counterfactual, then a
post-hoc sparsity pass); it is not dice-ml itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import torch
from scipy.optimize import Bounds, LinearConstraint, milp
from torch import Tensor

from lightning_icml26.algorithms.recourse.asr_icl import refine_flip
from lightning_icml26.algorithms.recourse.base import RecourseGenerator, RecourseResult, SearchState
from lightning_icml26.algorithms.recourse.spec import ActionabilitySpec

__all__ = ["ActionableRecourse", "DiceRandom", "GrowingSpheres", "Wachter", "action_grid"]


class _Differentiable(Protocol):
    classes_: np.ndarray

    def logits_torch(self, X: Tensor) -> Tensor: ...

    def __call__(self, X: np.ndarray) -> np.ndarray: ...


def action_grid(spec: ActionabilitySpec, x: np.ndarray, j: int, n_actions: int) -> np.ndarray:
    """Allowed non-zero changes of feature ``j`` from ``x``: grid steps, or ``n_actions`` evenly spaced values.

    Example:
        >>> spec = ActionabilitySpec((0, 0), (4, 1), (True, True), (1, 0), ((0, 1, 2, 3, 4), None))
        >>> action_grid(spec, np.array([2.0, 0.5]), 0, 3).tolist(), action_grid(spec, np.array([2.0, 0.5]), 1, 3)
        ([1.0, 2.0], array([-0.5,  0.5]))
    """
    lo, hi = spec.bounds(x)
    grid = spec.grids[j]
    values = np.asarray(grid) if grid is not None else np.linspace(lo[j], hi[j], n_actions)
    values = values[(values >= lo[j]) & (values <= hi[j])]
    return values[values != x[j]] - x[j]


class ActionableRecourse:
    """Actionable Recourse for a linear score ``w . x + b`` as a mixed-integer program (``scipy.optimize.milp``).

    Per mutable feature at most one action is picked from :func:`action_grid`; the program minimises the
    spec's cost subject to the score reaching the target side (``> 0`` for class ``classes[1]``).

    Args:
        weights: ``(d,)`` linear weights.
        intercept: bias ``b``.
        spec: the actionability spec.
        classes: the two classes (negative side first).
        n_actions: actions per continuous feature.
        margin: required score margin.

    Example:
        >>> spec = ActionabilitySpec((0, 0), (3, 3), (True, True), (0, 0), ((0, 1, 2, 3), (0, 1, 2, 3)))
        >>> out = ActionableRecourse(np.array([1.0, 2.0]), -4.5, spec).generate(np.array([[0.0, 1.0]]), 1)
        >>> out.counterfactuals.tolist(), out.cost.tolist()
        ([[0.0, 3.0]], [1.0])
    """

    def __init__(
        self,
        weights: np.ndarray,
        intercept: float,
        spec: ActionabilitySpec,
        classes: Sequence[int] = (0, 1),
        n_actions: int = 41,
        margin: float = 1e-6,
    ) -> None:
        self.weights, self.intercept = np.asarray(weights, dtype=float), float(intercept)
        if self.weights.shape != (spec.n_features,):
            raise ValueError(f"weights must have shape ({spec.n_features},) like the spec, got {self.weights.shape}")
        if len(classes) != 2:
            raise ValueError(f"classes must name two classes, got {classes!r}")
        self.spec, self.classes, self.n_actions, self.margin = spec, np.asarray(classes), n_actions, margin

    def _one(self, x: np.ndarray, sign: float) -> np.ndarray | None:
        score = sign * (x @ self.weights + self.intercept)
        if score > 0:
            return x.copy()
        columns = [(j, a) for j in range(x.size) for a in action_grid(self.spec, x, j, self.n_actions)]
        if not columns:
            return None
        feature = np.array([j for j, _ in columns])
        action = np.array([a for _, a in columns])
        gain = sign * self.weights[feature] * action
        cost = np.where(self.spec.discrete[feature], 1.0, np.abs(action) / self.spec.ranges[feature])
        one_per_feature = (feature[None, :] == np.unique(feature)[:, None]).astype(float)
        constraints = [
            LinearConstraint(gain[None, :], lb=self.margin - score, ub=np.inf),
            LinearConstraint(one_per_feature, lb=0.0, ub=1.0),
        ]
        result = milp(cost, constraints=constraints, integrality=np.ones(cost.size), bounds=Bounds(0, 1))
        if result.x is None:
            return None
        chosen = result.x > 0.5
        out = x.copy()
        out[feature[chosen]] += action[chosen]
        return out

    def generate(self, X: np.ndarray, y_target: int) -> RecourseResult:
        """Recourse of every row of ``X`` towards ``y_target`` (white-box: no queries)."""
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != self.spec.n_features:
            raise ValueError(f"X must have shape (n, {self.spec.n_features}), got {X.shape}")
        if y_target not in self.classes:
            raise ValueError(f"y_target {y_target!r} is not a known class; allowed: {self.classes.tolist()}")
        self.spec.check(X)
        sign = 1.0 if y_target == self.classes[1] else -1.0
        labels = self.classes[(X @ self.weights + self.intercept > 0).astype(int)]
        counterfactuals, found = X.copy(), np.zeros(len(X), bool)
        for i, x in enumerate(X):
            out = self._one(x, sign)
            if out is not None:
                counterfactuals[i], found[i] = out, True
        new_labels = self.classes[(counterfactuals @ self.weights + self.intercept > 0).astype(int)]
        found &= new_labels == y_target
        return RecourseResult(
            counterfactuals,
            found,
            labels,
            np.where(found, new_labels, labels),
            np.full(len(X), y_target),
            np.zeros(len(X), int),
            np.where(found, self.spec.cost(X, counterfactuals), 0.0),
        )


class Wachter:
    """Wachter-style counterfactual: proximal gradient on ``lam * hinge(margin) + ||delta / range||_1``.

    White-box: it reads ``model.logits_torch``; its queries are reported as 0. The classification term is a
    hinge on the target's logit margin (Wachter et al. use a squared loss on the score; the hinge stops pushing
    once the boundary is crossed), the L1 cost is handled by soft-thresholding, ``lam`` grows by 1.5 until the
    projected row flips; the flip found is then pulled back towards ``x`` by bisection on the segment (the
    fixed step size leaves an overshoot of about ``lr``).

    Args:
        model: a predictor with ``logits_torch`` and ``classes_``.
        spec: the actionability spec.
        lam: initial weight of the classification loss (small: a too large one moves every helpful feature).
        steps: proximal-gradient steps per ``lam``.
        lr: step size (in units of each feature's range).
        rounds: how many times ``lam`` grows at most.
        margin: logit margin aimed at.

    Example:
        >>> from lightning_icml26.algorithms.recourse.icl import LinearAttentionICL
        >>> icl = LinearAttentionICL(np.array([[1.0, 0.0], [-1.0, 0.0]]), np.array([1, 0]))
        >>> spec = ActionabilitySpec((-2, -2), (2, 2), (True, True), (0, 0), (None, None))
        >>> out = Wachter(icl, spec).generate(np.array([[-0.5, 0.0]]), 1)
        >>> bool(out.found[0]), bool(abs(out.counterfactuals[0, 1]) < 0.05)
        (True, True)
    """

    def __init__(
        self,
        model: _Differentiable,
        spec: ActionabilitySpec,
        lam: float = 0.01,
        steps: int = 50,
        lr: float = 0.01,
        rounds: int = 20,
        margin: float = 1e-4,
    ) -> None:
        if not hasattr(model, "logits_torch"):
            raise TypeError(f"model must expose logits_torch (white-box), got {type(model).__name__}")
        self.model, self.spec, self.lam, self.steps, self.lr, self.rounds = model, spec, lam, steps, lr, rounds
        self.margin = margin

    def _shrink(self, x: np.ndarray, flipped: np.ndarray, target: int) -> np.ndarray:
        low, high = 0.0, 1.0  # bisection on the segment x -> flipped, keeping the label (white-box, no queries)
        for _ in range(20):
            middle = 0.5 * (low + high)
            if self.model(self.spec.project(x, x + middle * (flipped - x))[None])[0] == target:
                high = middle
            else:
                low = middle
        return self.spec.project(x, x + high * (flipped - x))

    def _one(self, x: np.ndarray, target: int) -> np.ndarray:
        lo, hi = self.spec.bounds(x)
        ranges = torch.as_tensor(self.spec.ranges)
        x_t, lo_t, hi_t = (torch.as_tensor(v) for v in (x, lo, hi))
        index = int(np.flatnonzero(self.model.classes_ == target)[0])
        others = [c for c in range(len(self.model.classes_)) if c != index]
        delta = torch.zeros_like(x_t)
        best = x.copy()
        lam = self.lam
        for _ in range(self.rounds):
            for _ in range(self.steps):
                delta.requires_grad_(True)
                candidate = torch.clamp(x_t + delta * ranges, lo_t, hi_t)
                logits = self.model.logits_torch(candidate[None])[0]
                margin = logits[index] - logits[others].max()
                loss = lam * torch.relu(self.margin - margin)
                (grad,) = torch.autograd.grad(loss, delta)
                with torch.no_grad():  # proximal step of the L1 cost: soft-thresholding
                    step = delta - self.lr * grad
                    delta = torch.sign(step) * torch.clamp(step.abs() - self.lr, min=0.0)
            proposal = self.spec.project(x, torch.clamp(x_t + delta * ranges, lo_t, hi_t).numpy())
            if self.model(proposal[None])[0] == target:
                return self._shrink(x, proposal, target)
            best = proposal
            lam *= 1.5
        return best

    def generate(self, X: np.ndarray, y_target: int) -> RecourseResult:
        """Recourse of every row of ``X`` towards ``y_target``."""
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != self.spec.n_features:
            raise ValueError(f"X must have shape (n, {self.spec.n_features}), got {X.shape}")
        if y_target not in self.model.classes_:
            raise ValueError(f"y_target {y_target!r} is not a known class; allowed: {self.model.classes_.tolist()}")
        self.spec.check(X)
        labels = self.model(X)
        counterfactuals = np.stack(
            [self._one(x, y_target) if label != y_target else x for x, label in zip(X, labels, strict=False)]
        )
        new_labels = self.model(counterfactuals)
        found = (new_labels == y_target) & (labels != y_target)
        return RecourseResult(
            np.where(found[:, None], counterfactuals, X),
            found,
            labels,
            np.where(found, new_labels, labels),
            np.full(len(X), y_target),
            np.zeros(len(X), int),
            np.where(found, self.spec.cost(X, counterfactuals), 0.0),
        )


class GrowingSpheres(RecourseGenerator):
    """GrowingSpheres (label-only): sample layers of growing radius around ``x`` until a flip, then sparsify.

    Radii are in units of each feature's range over the actionable features; ``n_per_layer`` queries per
    layer, the radius grows by ``step``; after the first layer with a flip the cheapest flip is kept and
    features are put back while it still flips.

    Args:
        oracle: the label oracle.
        spec: the actionability spec.
        classes: the oracle's classes.
        budget: label queries per row.
        n_per_layer: queries per spherical layer.
        step: radius increment.
        seed: seed.

    Example:
        >>> spec = ActionabilitySpec((0, 0), (1, 1), (True, True), (0, 0), (None, None))
        >>> gs = GrowingSpheres(lambda X: (X[:, 0] > 0.6).astype(int), spec, [0, 1])
        >>> out = gs.generate(np.array([[0.2, 0.5]]), 1)
        >>> bool(out.found[0]), bool(out.counterfactuals[0, 1] == 0.5)
        (True, True)
    """

    def __init__(
        self,
        oracle: _Differentiable | object,
        spec: ActionabilitySpec,
        classes: Sequence[int] | None = None,
        budget: int = 150,
        n_per_layer: int = 10,
        step: float = 0.1,
        seed: int = 0,
    ) -> None:
        super().__init__(oracle, spec, classes, budget, None, seed)  # type: ignore[arg-type]
        if n_per_layer < 1 or not step > 0:
            raise ValueError(f"n_per_layer must be >= 1 and step > 0, got {n_per_layer}, {step}")
        self.n_per_layer, self.step = n_per_layer, step

    def _search(self, state: SearchState, rng: np.random.Generator) -> None:
        features = self.actionable(state.x)
        radius = 0.0
        while state.oracle.remaining > 0 and state.best is None:
            for _ in range(min(self.n_per_layer, state.oracle.remaining)):
                direction = rng.normal(size=features.size)
                length = rng.uniform(radius, radius + self.step)
                x_new = state.x.copy()
                x_new[features] += length * direction / np.linalg.norm(direction) * self.spec.ranges[features]
                state.query(x_new)
            radius += self.step
        refine_flip(state, 0)


class DiceRandom(RecourseGenerator):
    """Dice-style random search (label-only): random feature subsets set to random allowed values.

    Each query changes ``s`` actionable features (``s`` uniform in ``1..m``) to values drawn uniformly from
    their allowed ranges (grid values for discrete ones); the first valid counterfactual is kept and then
    sparsified (features put back while it still flips, then a bisection towards ``x``).

    Example:
        >>> spec = ActionabilitySpec((0, 0), (1, 1), (True, True), (0, 0), (None, None))
        >>> out = DiceRandom(lambda X: (X[:, 0] > 0.6).astype(int), spec, [0, 1]).generate(np.array([[0.2, 0.5]]), 1)
        >>> bool(out.found[0])
        True
    """

    def _search(self, state: SearchState, rng: np.random.Generator) -> None:
        features = self.actionable(state.x)
        lo, hi = self.spec.bounds(state.x)
        while state.oracle.remaining > 0 and state.best is None:
            chosen = rng.choice(features, size=int(rng.integers(1, features.size + 1)), replace=False)
            x_new = state.x.copy()
            x_new[chosen] = rng.uniform(lo[chosen], hi[chosen])  # grids are snapped by the projection
            state.query(x_new)
        refine_flip(state, 5)
