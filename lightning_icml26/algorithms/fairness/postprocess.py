"""Attribute-blind fair post-processing: the LP plug-in rule (Xian & Zhao style, multi-class).

Given, on a calibration split, predicted class probabilities ``eta(x) = P(Y | x)`` and predicted group
probabilities ``p(a | x)`` (demographic parity) or ``p(a, y | x)`` (equalized odds / equal opportunity),
:class:`FairPostProcessor` solves

    min_pi  (1/n) sum_i sum_k pi(k | x_i) r_k(x_i),          r_k(x) = 1 - eta_k(x) (+ tie-breaking noise)
    s.t.    sum_k pi(k | x_i) = 1,  pi >= 0,
            |rate_{a,c}(pi) - q_c| <= alpha / 2               for every group a and cell c,

where ``rate_{a,k} = sum_i gamma_a(x_i) pi(k | x_i)`` with ``gamma_a(x) = p(a | x) / sum_j p(a | x_j)``
for DP (cells = classes ``k``), ``gamma_{a,y}(x) = p(a, y | x) / sum_j p(a, y | x_j)`` for EO (cells =
``(y, k)``) and EOpp (cells = ``(k, k)``). Every pairwise group gap of a cell is then at most ``alpha``.
The LP is solved with ``scipy.optimize.linprog(method="highs")``; its inequality duals ``u+``, ``u-``
(``-res.ineqlin.marginals``) give ``mu = u+ - u-`` and the attribute-blind rule

    yhat(x) = argmin_k  r_k(x) + sum_{a, c(k)} mu_{a,c} gamma_{a,c}(x) * n

(``gamma * n`` is ``p(a | x) / p_hat(a)``). The rule sees only ``x`` (through the two probability models).

Deviation / reconstruction notes: the paper's formulas are not public; this follows the precursor
(Xian & Zhao 2024), see docs/fairness.md, with scipy HiGHS instead of cvxpy/Gurobi. Ties are
broken by uniform noise of scale ``noise`` added to the risks both when fitting and when predicting:
with fresh noise at prediction, the rule is a randomised classifier whose expected split of tied
(identical) inputs follows the LP's fractional solution; ``predict_proba`` estimates that distribution by
Monte Carlo. Group priors are estimated as the mean predicted ``p(a | x)`` on the calibration split
(self-normalised), so the constraint is on the plug-in estimate of the population rates.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from scipy import optimize, sparse
from torch import Tensor, nn

from lightning_icml26.algorithms.fairness._common import (
    as_tensor,
    check_alpha,
    check_count,
    check_criterion,
    check_labels,
    check_probabilities,
    to_numpy,
)

__all__ = ["AttributeBlindClassifier", "FairPostProcessor"]


class FairPostProcessor:
    """LP plug-in post-processing for DP, EO or EOpp at tolerance ``alpha`` (attribute-blind).

    Args:
        num_classes: number of classes ``K >= 2``.
        num_groups: number of groups ``G >= 2``.
        criterion: ``"dp"`` (demographic parity), ``"eo"`` (equalized odds) or ``"eopp"`` (equal opportunity).
        alpha: tolerance on every pairwise group gap, ``0 <= alpha <= 1``.
        noise: scale of the uniform tie-breaking noise added to the risks (``>= 0``).
        seed: seed of the fit-time noise.
        atol: tolerance of the sums-to-one checks on probabilities.

    Attributes (after :meth:`fit`):
        mu_: dual weights ``(G, K)`` for DP/EOpp or ``(G, K, K)`` (``[a, y, k]``) for EO.
        group_prior_: estimated ``p(a)`` ``(G,)`` or ``p(a, y)`` ``(G, K)``.
        primal_: the LP's randomised classifier on the calibration points ``(n, K)``.
        objective_: LP objective (expected 0-1 risk under the plug-in ``eta``).

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> eta = torch.softmax(torch.randn(200, 3, generator=g), 1)
        >>> p_a = torch.softmax(torch.randn(200, 2, generator=g), 1)
        >>> post = FairPostProcessor(num_classes=3, num_groups=2, criterion="dp", alpha=0.05).fit(eta, p_a)
        >>> post.predict(eta, p_a).shape
        torch.Size([200])
    """

    def __init__(
        self,
        num_classes: int,
        num_groups: int,
        criterion: str = "dp",
        alpha: float = 0.0,
        noise: float = 1e-4,
        seed: int = 0,
        atol: float = 1e-3,
    ) -> None:
        self.num_classes = check_count("num_classes", num_classes)
        self.num_groups = check_count("num_groups", num_groups)
        self.criterion = check_criterion(criterion)
        self.alpha = check_alpha(alpha)
        if not noise >= 0:
            raise ValueError(f"noise must be non-negative, got {noise}")
        self.noise = float(noise)
        self.seed = seed
        self.atol = atol
        self.mu_: np.ndarray | None = None

    # ------------------------------------------------------------------ inputs
    def _inputs(self, probs_y: Any, probs_group: Any) -> tuple[np.ndarray, np.ndarray]:
        eta = check_probabilities("probs_y", to_numpy("probs_y", probs_y), (None, self.num_classes), self.atol)
        pg = to_numpy("probs_group", probs_group)
        if self.criterion == "dp":
            pg = check_probabilities("probs_group", pg, (eta.shape[0], self.num_groups), self.atol)
        else:
            if pg.ndim == 2 and pg.shape[1] == self.num_groups * self.num_classes:
                pg = pg.reshape(pg.shape[0], self.num_groups, self.num_classes)
            pg = check_probabilities("probs_group", pg, (eta.shape[0], self.num_groups, self.num_classes), self.atol)
        return eta, pg

    def _gamma(self, pg: np.ndarray) -> np.ndarray:
        """``p(a | x) / p_hat(a)`` ``(n, G)`` or ``p(a, y | x) / p_hat(a, y)`` ``(n, G, K)``."""
        if self.group_prior_ is None:
            raise RuntimeError("call fit first")
        return pg / self.group_prior_[None]

    # --------------------------------------------------------------------- fit
    # One pass that validates every input, builds and solves the LP and extracts its duals; the branches are
    # the argument checks and the three criteria.
    def fit(self, probs_y: Any, probs_group: Any, groups: Any = None, labels: Any = None) -> FairPostProcessor:  # noqa: C901
        """Solve the LP on a calibration split.

        Args:
            probs_y: ``P(Y | x)`` ``(n, K)``, rows summing to 1.
            probs_group: ``p(a | x)`` ``(n, G)`` for DP; ``p(a, y | x)`` ``(n, G, K)`` or ``(n, G*K)``
                (index ``a * K + y``) for EO/EOpp; rows summing to 1.
            groups: optional true group ids of the calibration rows: only checked (every group must have
                samples), the rule itself never uses them.
            labels: optional true labels (checked to lie in ``[0, K)``; for EO/EOpp every (group, label)
                cell named by ``groups`` and ``labels`` must have samples).

        Returns:
            ``self``.

        Raises:
            ValueError: probabilities not summing to 1, labels outside ``[0, K)``, a group without samples.
        """
        eta, pg = self._inputs(probs_y, probs_group)
        n, num_classes, num_groups = eta.shape[0], self.num_classes, self.num_groups
        if n == 0:
            raise ValueError("probs_y must hold at least one calibration row, got 0")
        if groups is not None:
            g = check_labels("groups", to_numpy("groups", groups), num_groups, n)
            counts = np.bincount(g, minlength=num_groups)
            if (counts == 0).any():
                missing = np.flatnonzero(counts == 0).tolist()
                raise ValueError(
                    f"groups {missing} have no samples in the calibration split (groups={counts.tolist()})"
                )
            if labels is not None:
                yy = check_labels("labels", to_numpy("labels", labels), num_classes, n)
                if self.criterion != "dp":
                    cell = np.zeros((num_groups, num_classes), dtype=np.int64)
                    np.add.at(cell, (g, yy), 1)
                    if (cell == 0).any():
                        bad = [tuple(c) for c in np.argwhere(cell == 0).tolist()]
                        raise ValueError(f"(group, label) cells {bad} have no samples in the calibration split")
        elif labels is not None:
            check_labels("labels", to_numpy("labels", labels), num_classes, n)
        mass = pg.sum(axis=0)  # (G,) or (G, K)
        if (mass <= 1e-12 * n).any():
            empty = np.argwhere(mass <= 1e-12 * n).tolist()
            raise ValueError(f"the predicted group probabilities give no mass to group(s)/cells {empty}")
        self.group_prior_ = mass / n
        rng = np.random.default_rng(self.seed)
        risk = 1.0 - eta + self.noise * rng.random(eta.shape)

        # cells: list of (rows of weights (n,), class k) per (group a, cell c)
        weights = pg / mass[None]  # sums to 1 over rows
        rows_w: list[np.ndarray] = []
        rows_k: list[int] = []
        if self.criterion == "dp":
            cell_of = [(a, k, k) for a in range(num_groups) for k in range(num_classes)]
            for a, _, k in cell_of:
                rows_w.append(weights[:, a])
                rows_k.append(k)
            num_cells = num_classes
        elif self.criterion == "eo":
            cell_of = [
                (a, y * num_classes + k, k)
                for a in range(num_groups)
                for y in range(num_classes)
                for k in range(num_classes)
            ]
            for a, c, k in cell_of:
                rows_w.append(weights[:, a, c // num_classes])
                rows_k.append(k)
            num_cells = num_classes * num_classes
        else:
            cell_of = [(a, k, k) for a in range(num_groups) for k in range(num_classes)]
            for a, _, k in cell_of:
                rows_w.append(weights[:, a, k])
                rows_k.append(k)
            num_cells = num_classes
        num_rows = len(cell_of)
        num_pi = n * num_classes
        # rate rows: sum_i w_i pi(k | x_i)
        data = np.concatenate(rows_w)
        row_idx = np.repeat(np.arange(num_rows), n)
        col_idx = np.concatenate([np.arange(n) * num_classes + k for k in rows_k])
        rate = sparse.csr_matrix((data, (row_idx, col_idx)), shape=(num_rows, num_pi))
        q_sel = sparse.csr_matrix(
            (np.ones(num_rows), (np.arange(num_rows), [c for _, c, _ in cell_of])), shape=(num_rows, num_cells)
        )
        # The rate rows are written times n (their weights become gamma = p(a | x) / p_hat(a), of order 1): with
        # weights of order 1/n down to ~1e-20, HiGHS declared a feasible alpha = 0 LP infeasible (Adult, n = 11306).
        a_ub = n * sparse.vstack([sparse.hstack([rate, -q_sel]), sparse.hstack([-rate, q_sel])]).tocsr()
        # slack: HiGHS presolve can reject exact equality
        b_ub = np.full(2 * num_rows, n * (self.alpha / 2.0 + 1e-7))
        a_eq = sparse.hstack(
            [
                sparse.csr_matrix(
                    (np.ones(num_pi), (np.repeat(np.arange(n), num_classes), np.arange(num_pi))), shape=(n, num_pi)
                ),
                sparse.csr_matrix((n, num_cells)),
            ]
        ).tocsr()
        cost = np.concatenate([risk.reshape(-1) / n, np.zeros(num_cells)])
        res = optimize.linprog(
            cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=np.ones(n), bounds=(0.0, 1.0), method="highs"
        )
        if res.status != 0:
            raise RuntimeError(f"the fairness LP did not solve: {res.message}")
        u = -n * np.asarray(res.ineqlin.marginals)  # duals of the unscaled rows
        mu_rows = u[:num_rows] - u[num_rows:]
        if self.criterion == "eo":
            self.mu_ = mu_rows.reshape(num_groups, num_classes, num_classes)
        else:
            self.mu_ = mu_rows.reshape(num_groups, num_classes)
        self.primal_ = res.x[:num_pi].reshape(n, num_classes)
        self.objective_ = float(res.fun)
        return self

    # ----------------------------------------------------------------- predict
    def decision_scores(self, probs_y: Any, probs_group: Any) -> Tensor:
        """Scores ``r_k(x) + fairness cost`` (lower is better, no noise) ``(n, K)`` as float64.

        Args:
            probs_y: ``P(Y | x)`` ``(n, K)``.
            probs_group: ``p(a | x)`` or ``p(a, y | x)`` as in :meth:`fit`.

        Returns:
            The scores; the rule predicts their argmin.
        """
        if self.mu_ is None:
            raise RuntimeError("FairPostProcessor is not fitted: call fit first")
        eta, pg = self._inputs(probs_y, probs_group)
        gamma = self._gamma(pg)
        if self.criterion == "dp":
            fair = gamma @ self.mu_  # (n, G) @ (G, K)
        elif self.criterion == "eo":
            fair = np.einsum("nay,ayk->nk", gamma, self.mu_)
        else:
            fair = np.einsum("nak,ak->nk", gamma, self.mu_)
        return as_tensor(1.0 - eta + fair)

    def predict(self, probs_y: Any, probs_group: Any, generator: torch.Generator | None = None) -> Tensor:
        """Randomised attribute-blind prediction: argmin of the scores plus fresh uniform noise.

        Args:
            probs_y: ``P(Y | x)`` ``(n, K)``.
            probs_group: ``p(a | x)`` or ``p(a, y | x)``.
            generator: torch generator of the noise (``None``: the global one).

        Returns:
            int64 labels ``(n,)``.
        """
        scores = self.decision_scores(probs_y, probs_group)
        noise = torch.rand(scores.shape, generator=generator, dtype=torch.float64)
        return (scores + self.noise * noise).argmin(dim=1)

    def predict_proba(
        self, probs_y: Any, probs_group: Any, num_draws: int = 64, generator: torch.Generator | None = None
    ) -> Tensor:
        """Monte-Carlo estimate of the randomised rule's class distribution ``(n, K)``.

        Args:
            probs_y: ``P(Y | x)`` ``(n, K)``.
            probs_group: ``p(a | x)`` or ``p(a, y | x)``.
            num_draws: noise draws per row.
            generator: torch generator of the noise.

        Returns:
            float64 ``(n, K)`` rows summing to 1.
        """
        if num_draws < 1:
            raise ValueError(f"num_draws must be positive, got {num_draws}")
        scores = self.decision_scores(probs_y, probs_group)
        noise = torch.rand((num_draws, *scores.shape), generator=generator, dtype=torch.float64)
        picks = (scores[None] + self.noise * noise).argmin(dim=2)
        return nn.functional.one_hot(picks, self.num_classes).double().mean(0)


class AttributeBlindClassifier(nn.Module):
    """A fitted :class:`FairPostProcessor` with its two probability models: ``forward(x)`` -> labels.

    It sees only ``x``: ``y_model(x)`` gives class logits ``(n, K)``, ``group_model(x)`` group logits
    ``(n, G)`` (DP) or joint (group, label) logits ``(n, G*K)`` with index ``a * K + y`` (EO/EOpp).

    Args:
        y_model: class-probability model (logits).
        group_model: group(-and-label) probability model (logits).
        post_processor: a fitted :class:`FairPostProcessor`.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> y_model, group_model = nn.Linear(4, 3), nn.Linear(4, 2)
        >>> x = torch.randn(50, 4, generator=g)
        >>> with torch.no_grad():
        ...     post = FairPostProcessor(3, 2, alpha=0.1).fit(y_model(x).softmax(1), group_model(x).softmax(1))
        >>> AttributeBlindClassifier(y_model, group_model, post)(x).shape
        torch.Size([50])
    """

    def __init__(self, y_model: nn.Module, group_model: nn.Module, post_processor: FairPostProcessor) -> None:
        super().__init__()
        self.y_model = y_model
        self.group_model = group_model
        self.post_processor = post_processor

    @torch.no_grad()
    def probabilities(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """``(P(Y | x), p(a | x) or p(a, y | x))`` from the two models."""
        return self.y_model(x).softmax(dim=1), self.group_model(x).softmax(dim=1)

    def forward(self, x: Tensor) -> Tensor:
        """Fair labels ``(n,)`` for features ``x`` (randomised tie-breaking)."""
        probs_y, probs_group = self.probabilities(x)
        return self.post_processor.predict(probs_y, probs_group)
