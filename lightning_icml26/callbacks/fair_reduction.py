"""Fair multi-class training of any LightningModule classifier by the exponentiated-gradient reduction.

:class:`FairReductionCallback` turns an ordinary ``Trainer.fit`` of a classifier whose ``forward(x)``
returns logits ``(n, K)`` into the multi-class reduction of
:mod:`lightning_icml26.algorithms.fairness.reduction` (whose math it reuses: :func:`eg_multipliers`,
:func:`eg_update`, :func:`reduction_costs`, :func:`reduction_moments`, :func:`reduction_cells`,
:func:`mixture_weights`):

* during fit, the module's ``training_step`` is replaced on the instance by the cost-sensitive softmax
  loss ``mean_i sum_k softmax(f(x_i))_k c_i(k)`` with the Lagrangian costs ``c_i(k)`` of the current
  multipliers (batches are ``(x, y, groups)``; group ids serve the training loss only, never ``forward``);
* at the end of every round (``epochs_per_round`` epochs) the confusion counts ``[group, label,
  prediction]`` of the module's argmax predictions on the training data (``statistics="pass"``: one extra
  forward pass in eval mode over each rank's share of the training loader; ``"running"``: the predictions
  made during the round's last epoch, free but stale) are summed over DDP ranks and give the moments
  ``gamma``; the multipliers take one EG step, ``theta += eta0 / B * ([gamma, -gamma] - alpha/2)``;
* each round's weights (the approximate best response to the round's multipliers) are kept as an iterate
  (CPU copies; ``keep_iterates``), with their training error and constrained rates;
* at the end of fit the module holds the **best deterministic** iterate (the most accurate one whose
  training gap is ``<= alpha``, else the one with the smallest gap; ``output="best"``) or the last
  weights (``output="last"``); :attr:`mixture_weights_` are the weights of the **randomised** classifier
  (LP over the iterates and the ``K`` constant classifiers, as fairlearn's ``run_linprog_step``), used by
  :meth:`predict_mixture`.

Why a callback rather than a wrapper LightningModule: the user's module, optimizer and scheduler
configuration, checkpoint format and ``forward`` stay untouched (the project's other loss-changing
callback, :class:`~lightning_icml26.callbacks.GeoReg`, wraps ``training_step`` the same way), the EG state
lives in the callback's ``state_dict`` (checkpointed and restored by Lightning on resume), and removing the
callback gives back plain training. The module's own ``training_step`` (its logging, its metrics) does not
run while the callback is attached; the callback logs ``fair_loss`` (step/epoch) and ``fair_gap``,
``fair_error``, ``fair_lambda_l1`` (per round).

Deviations from the batch reduction (:class:`~lightning_icml26.algorithms.fairness.ExponentiatedGradientReduction`):
a best response is ``epochs_per_round`` epochs of the user's optimizer warm-started from the previous round
(not a fresh full-batch fit), and a round's statistics are those of the predictions made during its last
epoch (the weights move during that epoch, so they approximate those of the final weights; no extra pass
over the data). The group and (group, label) frequencies of the moments come from the previous round's
counts (in round 0 the multipliers are zero, so they are not needed). With a ``DistributedSampler`` the
few padded duplicate rows count twice.

This module is over 400 lines on purpose: it is one Callback whose hooks share the EG state (multipliers,
round counts, iterates), and this docstring documents its design; the math lives in
:mod:`lightning_icml26.algorithms.fairness.eg`.

Example:
    >>> import lightning.pytorch as pl
    >>> from torch.utils.data import DataLoader, TensorDataset
    >>> from lightning_icml26.data.tabular import make_fair_gaussian
    >>> from lightning_icml26.modules import MLP, ClassifierModule
    >>> data = make_fair_gaussian(256, seed=1)
    >>> loader = DataLoader(TensorDataset(data.x, data.y, data.a), batch_size=64)
    >>> fair = FairReductionCallback(num_classes=4, num_groups=3, alpha=0.1)
    >>> trainer = pl.Trainer(max_epochs=2, callbacks=[fair], logger=False, enable_checkpointing=False,
    ...                      enable_progress_bar=False, enable_model_summary=False)
    >>> trainer.fit(ClassifierModule(MLP(5, 4, hidden=8), num_classes=4), loader)
    >>> fair.round, tuple(fair.theta.shape), len(fair.history)
    (2, (2, 4, 3), 2)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from lightning.pytorch import Callback, LightningModule, Trainer
from torch import Tensor

from lightning_icml26.algorithms.fairness._common import check_alpha, check_count, check_criterion
from lightning_icml26.algorithms.fairness.eg import (
    _cell_shape,
    _eg_lambda,
    best_iterate,
    eg_update,
    mixture_weights,
    reduction_cells,
    reduction_costs,
    reduction_moments,
)

__all__ = ["FairReductionCallback"]

BatchUnpack = Callable[[Any], tuple[Any, Tensor, Tensor]]


def _default_unpack(batch: Any) -> tuple[Any, Tensor, Tensor]:
    if isinstance(batch, Mapping) and {"x", "y", "groups"} <= set(batch):
        return batch["x"], batch["y"], batch["groups"]
    if isinstance(batch, Sequence) and len(batch) == 3:
        return batch[0], batch[1], batch[2]
    raise TypeError(
        "FairReductionCallback needs training batches (x, y, groups) or a mapping with keys 'x', 'y', "
        f"'groups' (or pass unpack=...), got {type(batch).__name__}"
        + (f" of length {len(batch)}" if isinstance(batch, Sequence) else "")
    )


class FairReductionCallback(Callback):
    """Train any logits-returning LightningModule under a multi-class fairness constraint (EG reduction).

    Args:
        num_classes: number of classes ``K >= 2``.
        num_groups: number of groups ``G >= 2``.
        criterion: ``"dp"`` (demographic parity), ``"eo"`` (equalized odds) or ``"eopp"`` (equal opportunity).
        alpha: tolerance on every pairwise group gap, ``0 <= alpha <= 1``.
        eta0: EG step scale (the step is ``eta0 / bound``), ``> 0``.
        bound: ``B``, the l1 bound of the multipliers (default ``1 / max(alpha, 0.01)``), ``> 0``.
        epochs_per_round: epochs per EG round (per multiplier update), ``>= 1``.
        output: ``"best"`` (load the best deterministic iterate at the end of fit) or ``"last"``.
        statistics: ``"pass"`` (exact statistics of each iterate: one forward pass over the training
            loader per round) or ``"running"`` (from the round's last training epoch, no extra pass).
        keep_iterates: keep a CPU copy of the weights of every round (needed by ``output="best"`` and
            :meth:`predict_mixture`; they are part of the callback's checkpointed state).
        unpack: ``batch -> (x, y, groups)``; the default reads ``(x, y, groups)`` tuples or mappings with
            keys ``x``, ``y``, ``groups``.

    Attributes:
        theta: EG state ``(2, *cells)`` (float64, CPU); cells are ``(K, G)`` for DP/EOpp, ``(K, K, G)`` for EO.
        round: number of completed rounds.
        history: per round ``dict(error, gap, lambda_l1)`` on the training data (all ranks).
        mixture_weights_: after fit, weights of the iterates then of the ``K`` constant classifiers.
        best_index_: after fit, index of the best deterministic iterate.
    """

    def __init__(
        self,
        num_classes: int,
        num_groups: int,
        criterion: str = "dp",
        alpha: float = 0.05,
        eta0: float = 2.0,
        bound: float | None = None,
        epochs_per_round: int = 1,
        output: str = "best",
        statistics: str = "pass",
        keep_iterates: bool = True,
        unpack: BatchUnpack | None = None,
    ) -> None:
        super().__init__()
        self.num_classes = check_count("num_classes", num_classes)
        self.num_groups = check_count("num_groups", num_groups)
        self.criterion = check_criterion(criterion)
        self.alpha = check_alpha(alpha)
        if isinstance(eta0, bool) or not isinstance(eta0, int | float) or not eta0 > 0:
            raise ValueError(f"eta0 must be a positive number, got {eta0!r}")
        self.eta0 = float(eta0)
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int | float) or not bound > 0):
            raise ValueError(f"bound must be a positive number or None, got {bound!r}")
        self.bound = float(bound) if bound is not None else 1.0 / max(self.alpha, 0.01)
        self.epochs_per_round = check_count("epochs_per_round", epochs_per_round, 1)
        if output not in ("best", "last"):
            raise ValueError(f"output must be 'best' or 'last', got {output!r}")
        if output == "best" and not keep_iterates:
            raise ValueError("output='best' needs keep_iterates=True (the iterates are what it chooses from)")
        self.output = output
        if statistics not in ("pass", "running"):
            raise ValueError(f"statistics must be 'pass' or 'running', got {statistics!r}")
        self.statistics = statistics
        self.keep_iterates = bool(keep_iterates)
        if unpack is not None and not callable(unpack):
            raise TypeError(f"unpack must be callable or None, got {type(unpack).__name__}")
        self.unpack: BatchUnpack = unpack or _default_unpack
        self._cells_shape = _cell_shape(self.criterion, self.num_classes, self.num_groups)
        self.theta = torch.zeros(2, *self._cells_shape, dtype=torch.float64)
        self.round = 0
        self.history: list[dict[str, float]] = []
        self.iterates: list[dict[str, Tensor]] = []
        self.round_cells: list[Tensor] = []
        self.group_label_counts: Tensor | None = None  # N(a, y) of the last round (all ranks)
        self._confusion: Tensor | None = None
        self._module: LightningModule | None = None
        self.mixture_weights_: np.ndarray | None = None
        self.best_index_: int | None = None

    @property
    def state_key(self) -> str:
        """Key of this callback's state in a checkpoint (includes the constraint)."""
        return self._generate_state_key(criterion=self.criterion, alpha=self.alpha)

    # ------------------------------------------------------------------ math
    def multipliers(self) -> Tensor:
        """Signed multipliers ``mu`` (``lambda+ - lambda-``) of the current state, float64 on CPU."""
        lam = _eg_lambda(self.theta, self.bound)
        return lam[0] - lam[1]

    def costs(self, y: Tensor, groups: Tensor) -> Tensor:
        """Per-example costs ``c_i(k)`` ``(n, K)`` (float64) under the current multipliers.

        Args:
            y: labels ``(n,)`` in ``[0, K)``.
            groups: group ids ``(n,)`` in ``[0, G)``.

        Returns:
            ``1[k != y_i]`` plus the fairness term (zero before the first round).
        """
        if self.group_label_counts is None:  # round 0: theta = 0, so mu = 0 and no frequencies are needed
            return 1.0 - torch.nn.functional.one_hot(y.long(), self.num_classes).double()
        mu = self.multipliers().to(y.device)
        return reduction_costs(y, groups, mu, self.criterion, self.group_label_counts.to(y.device))

    def loss(self, logits: Tensor, y: Tensor, groups: Tensor) -> Tensor:
        """Cost-sensitive softmax loss ``mean_i sum_k softmax(logits_i)_k c_i(k)``; accumulates the round counts.

        Args:
            logits: ``(n, K)``.
            y: labels ``(n,)``.
            groups: group ids ``(n,)``.

        Returns:
            The scalar loss (differentiable w.r.t. ``logits``).

        Raises:
            ValueError: on a shape mismatch or labels / groups out of range.
        """
        if not isinstance(logits, Tensor) or logits.ndim != 2 or logits.shape[1] != self.num_classes:
            raise ValueError(
                f"the module's forward must return logits (n, num_classes={self.num_classes}), got "
                f"{tuple(logits.shape) if isinstance(logits, Tensor) else type(logits).__name__}"
            )
        y, groups = self._check_targets(y, groups, logits.shape[0])
        y, groups = y.to(logits.device), groups.to(logits.device)
        costs = self.costs(y, groups)
        costs = (costs - costs.min(dim=1, keepdim=True).values).to(logits.dtype)
        if self.statistics == "running":
            self._count(logits, y, groups)
        return (logits.softmax(dim=1) * costs).sum(dim=1).mean()

    @torch.no_grad()
    def _count(self, logits: Tensor, y: Tensor, groups: Tensor) -> None:
        index = (groups * self.num_classes + y) * self.num_classes + logits.argmax(dim=1)
        counts = torch.bincount(index, minlength=self.num_groups * self.num_classes**2).double()
        counts = counts.reshape(self.num_groups, self.num_classes, self.num_classes)
        self._confusion = counts if self._confusion is None else self._confusion + counts.to(self._confusion)

    @torch.no_grad()
    def _statistics_pass(self, trainer: Trainer, pl_module: LightningModule) -> None:
        loader = trainer.train_dataloader
        if not isinstance(loader, torch.utils.data.DataLoader):
            raise TypeError(
                "statistics='pass' needs a single training DataLoader, got "
                f"{type(loader).__name__}; use statistics='running'"
            )
        was_training = pl_module.training
        pl_module.eval()
        try:
            with torch.random.fork_rng(devices=[]):  # a shuffled loader must not move the global RNG
                for batch in loader:
                    batch = trainer.strategy.batch_to_device(batch)
                    x, y, groups = self.unpack(batch)
                    logits = pl_module(x)
                    y, groups = self._check_targets(y, groups, logits.shape[0])
                    self._count(logits, y.to(logits.device), groups.to(logits.device))
        finally:
            pl_module.train(was_training)

    def _check_targets(self, y: Any, groups: Any, n: int) -> tuple[Tensor, Tensor]:
        for name, value, upper in (("y", y, self.num_classes), ("groups", groups, self.num_groups)):
            if not isinstance(value, Tensor) or value.is_floating_point() or value.ndim != 1:
                raise ValueError(
                    f"{name} must be a 1-D integer tensor, got "
                    f"{type(value).__name__} {getattr(value, 'dtype', '')} {tuple(getattr(value, 'shape', ()))}"
                )
            if value.shape[0] != n:
                raise ValueError(f"{name} must have one entry per row of logits ({n}), got {value.shape[0]}")
            if n and (int(value.min()) < 0 or int(value.max()) >= upper):
                raise ValueError(
                    f"{name} must hold integers in [0, {upper}), got values in [{int(value.min())}, {int(value.max())}]"
                )
        return y.long(), groups.long()

    # ----------------------------------------------------------------- hooks
    def on_fit_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        """Replace the module's ``training_step`` (on the instance) by the cost-sensitive loss."""
        if not pl_module.automatic_optimization:
            raise ValueError("FairReductionCallback returns the training loss: it needs automatic_optimization=True")
        self._module = pl_module

        def training_step(batch: Any, batch_idx: int = 0, *args: Any, **kwargs: Any) -> Tensor:
            x, y, groups = self.unpack(batch)
            loss = self.loss(pl_module(x), y, groups)
            pl_module.log("fair_loss", loss.detach(), on_step=True, on_epoch=True, prog_bar=True, batch_size=len(y))
            return loss

        pl_module.training_step = training_step  # type: ignore[method-assign]

    def on_train_epoch_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        """Start the epoch's counts (only the last epoch of a round is used)."""
        self._confusion = None

    def on_train_epoch_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        """At the end of a round: sum the counts over ranks, take one EG step, keep the iterate."""
        if (trainer.current_epoch + 1) % self.epochs_per_round != 0:
            return
        if self.statistics == "pass":
            self._confusion = None
            self._statistics_pass(trainer, pl_module)
        local = self._confusion
        if local is None:
            local = torch.zeros(self.num_groups, self.num_classes, self.num_classes, dtype=torch.float64)
        local = local.to(pl_module.device)
        confusion = trainer.strategy.reduce(local, reduce_op="sum").double().cpu()
        self._confusion = None
        self.update(confusion)
        if self.keep_iterates:
            self.iterates.append({k: v.detach().cpu().clone() for k, v in pl_module.state_dict().items()})
        last = self.history[-1]
        pl_module.log_dict(
            {"fair_gap": last["gap"], "fair_error": last["error"], "fair_lambda_l1": last["lambda_l1"]},
            on_step=False,
            on_epoch=True,
            sync_dist=False,  # already global
        )

    def update(self, confusion: Tensor) -> None:
        """One EG round from the round's confusion counts ``[group, label, prediction]`` (all ranks).

        Args:
            confusion: ``(G, K, K)`` counts.

        Raises:
            ValueError: if a group (DP) or (group, label) cell (EO, EOpp) had no training samples.
        """
        counts = confusion.sum(2)  # (G, K)
        empty = (counts.sum(1) == 0).nonzero().flatten().tolist()
        if empty:
            raise ValueError(f"groups {empty} have no samples in this round's training data (round {self.round})")
        if self.criterion != "dp" and bool((counts == 0).any()):
            missing = [tuple(c) for c in (counts == 0).nonzero().tolist()]
            raise ValueError(f"(group, label) cells {missing} have no samples in this round's training data")
        lam = _eg_lambda(self.theta, self.bound)
        gamma = reduction_moments(confusion, self.criterion)
        self.theta = eg_update(self.theta, gamma, self.alpha, self.eta0 / self.bound)
        self.group_label_counts = counts.clone()
        cells = reduction_cells(confusion, self.criterion)
        self.round_cells.append(cells)
        total = float(confusion.sum())
        correct = float(torch.diagonal(confusion, dim1=1, dim2=2).sum())
        self.history.append(
            {
                "error": 1.0 - correct / total,
                "gap": float((cells.amax(0) - cells.amin(0)).max()),
                "lambda_l1": float(lam.sum()),
            }
        )
        self.round += 1

    def on_fit_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        """Restore ``training_step``; choose the best iterate and the mixture weights."""
        self._restore()
        if not self.history:
            return
        gaps = np.array([h["gap"] for h in self.history])
        errors = np.array([h["error"] for h in self.history])
        self.best_index_ = best_iterate(errors, gaps, self.alpha)
        if self.keep_iterates and len(self.iterates) == len(self.history):
            counts = self.group_label_counts
            assert counts is not None  # set with the first round
            constants = [
                reduction_cells(counts[:, :, None] * torch.eye(self.num_classes)[k].double(), self.criterion)
                for k in range(self.num_classes)
            ]
            p_y = (counts.sum(0) / counts.sum()).numpy()
            cells = torch.stack([*self.round_cells, *constants], dim=2).numpy()
            all_errors = np.concatenate([errors, 1.0 - p_y])
            self.mixture_weights_ = mixture_weights(all_errors, cells, self.alpha)
        if self.output == "best":
            pl_module.load_state_dict(self.iterates[self.best_index_])

    def on_exception(self, trainer: Trainer, pl_module: LightningModule, exception: BaseException) -> None:
        """Restore ``training_step`` after a failure too."""
        self._restore()

    def _restore(self) -> None:
        if self._module is not None and "training_step" in vars(self._module):
            del self._module.training_step
        self._module = None

    # ------------------------------------------------------------ prediction
    @torch.no_grad()
    def predict_mixture(self, pl_module: LightningModule, x: Tensor) -> Tensor:
        """Class distribution ``(n, K)`` of the randomised classifier (the LP mixture of the iterates).

        Loads each iterate with positive weight into ``pl_module`` in turn and restores its weights after.

        Args:
            pl_module: the module the callback trained.
            x: inputs of ``pl_module.forward``.

        Returns:
            float64 rows summing to 1.
        """
        if self.mixture_weights_ is None:
            raise RuntimeError("predict_mixture needs a finished fit with keep_iterates=True")
        current = {k: v.detach().clone() for k, v in pl_module.state_dict().items()}
        was_training = pl_module.training
        pl_module.eval()
        out: Tensor | None = None
        num_iterates = len(self.iterates)
        try:
            for t, w in enumerate(self.mixture_weights_):
                if w <= 0 or t >= num_iterates:
                    continue
                pl_module.load_state_dict(self.iterates[t])
                hard = torch.nn.functional.one_hot(pl_module(x).argmax(1), self.num_classes).double().cpu()
                out = w * hard if out is None else out + w * hard
        finally:
            pl_module.load_state_dict(current)
            pl_module.train(was_training)
        n = out.shape[0] if out is not None else len(x)
        dist = out if out is not None else torch.zeros(n, self.num_classes, dtype=torch.float64)
        const = torch.as_tensor(self.mixture_weights_[num_iterates:], dtype=torch.float64)
        return dist + const[None]

    # ------------------------------------------------------------ checkpoint
    def state_dict(self) -> dict[str, Any]:
        """EG state, round counter, history, frequencies and (if kept) the iterates."""
        return {
            "theta": self.theta.clone(),
            "round": self.round,
            "history": [dict(h) for h in self.history],
            "group_label_counts": None if self.group_label_counts is None else self.group_label_counts.clone(),
            "round_cells": [c.clone() for c in self.round_cells],
            "iterates": self.iterates if self.keep_iterates else [],
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the state (missing keys keep their fresh defaults).

        Raises:
            ValueError: if the saved ``theta`` has another shape (another criterion or class/group count).
        """
        theta = state_dict.get("theta")
        if theta is not None:
            theta = torch.as_tensor(theta, dtype=torch.float64).cpu()
            if tuple(theta.shape) != (2, *self._cells_shape):
                raise ValueError(
                    f"checkpointed theta has shape {tuple(theta.shape)}, this callback needs {(2, *self._cells_shape)}"
                )
            self.theta = theta.clone()
        self.round = int(state_dict.get("round", self.round))
        self.history = [dict(h) for h in state_dict.get("history", self.history)]
        counts = state_dict.get("group_label_counts", self.group_label_counts)
        self.group_label_counts = None if counts is None else torch.as_tensor(counts, dtype=torch.float64).cpu()
        self.round_cells = [torch.as_tensor(c) for c in state_dict.get("round_cells", self.round_cells)]
        self.iterates = list(state_dict.get("iterates", self.iterates))
