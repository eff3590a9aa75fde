"""``R4RewardModel``: an ensemble of reward networks learned from rated segments (R4, RbRL or Bradley-Terry loss).

R4 (Kharyal, Muslimani and Taylor, ICML 2026) regresses soft ranks of predicted segment returns onto the ranks
of the ratings (:func:`~lightning_icml26.modules.r4.losses.ranking_mse_loss`). The same module trains the
RbRL rating loss and a Bradley-Terry preference loss, chosen by ``loss``, so a recipe switch compares them on
the same data. The per-step reward is the ensemble mean; :meth:`R4RewardModel.reward` returns it normalised
by the mean and standard deviation of the predicted per-step reward on the rated segments (refreshed at the end
of every fit), the scale handed to the RL agent.

Deviations from the official code, all documented: segment returns are undiscounted sums (as in the code; a
summary of the paper writes a discounted sum); every ensemble member sees the same batch and the members are
updated together by one optimizer on the sum of their losses (the official code trains the members one after
another, each with its own shuffling of the same rated segments; the members still differ by initialisation).
The official L2 penalty ``lambda * sum_layers ||theta||_2`` (un-squared norms; 0.01 for cheetah / walker) is the
``l2_lambda`` option, off by default. Two further options of the official code: the optimal-transport soft rank
(``soft_rank="ot"``) and the out-of-distribution regulariser (``ood_coeff > 0``, the official ``regularize_ood``):
``ood_coeff * (mean reward of uniform random state-actions in the box [ood_low, ood_high] - mean reward of the
batch's state-actions)``, which keeps the learned reward low away from the data. The official code draws
``ood_batch_size = 1024`` points per step with coefficient 0.1 and takes the box from the environment's declared
state and action ranges.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import torch
from lightning.pytorch import LightningModule
from scipy.stats import kendalltau, spearmanr
from torch import nn

from lightning_icml26.data.rl.ratings import LOSSES, check_ratings
from lightning_icml26.modules.nets import MLP
from lightning_icml26.modules.r4.losses import SOFT_RANK_METHODS, bradley_terry_loss, ranking_mse_loss, rbrl_loss

__all__ = ["R4RewardModel", "RewardEnsemble"]

OptimizerFactory = Callable[[Iterable[Any]], torch.optim.Optimizer]


class RewardEnsemble(nn.Module):
    """``ensemble_size`` independent MLPs ``r(s, a)``; returns every member's per-step reward.

    Args:
        obs_dim: observation width.
        act_dim: action width (0 for state-only rewards).
        ensemble_size: number of members (3 in the paper).
        hidden: hidden width.
        depth: hidden layers.
        activation: hidden activation (see :class:`~lightning_icml26.modules.MLP`).

    Example:
        >>> net = RewardEnsemble(3, 1, ensemble_size=2, hidden=8)
        >>> net(torch.zeros(4, 10, 3), torch.zeros(4, 10, 1)).shape
        torch.Size([2, 4, 10])
    """

    def __init__(
        self, obs_dim: int, act_dim: int, ensemble_size: int = 3, hidden: int = 256, depth: int = 3,
        activation: str = "relu",
    ) -> None:  # fmt: skip
        super().__init__()
        if ensemble_size < 1:
            raise ValueError(f"ensemble_size must be at least 1, got {ensemble_size}")
        if obs_dim < 1 or act_dim < 0:
            raise ValueError(f"obs_dim must be >= 1 and act_dim >= 0, got {obs_dim} and {act_dim}")
        self.obs_dim, self.act_dim = obs_dim, act_dim
        self.members = nn.ModuleList(
            MLP(obs_dim + act_dim, 1, hidden=hidden, depth=depth, activation=activation) for _ in range(ensemble_size)
        )

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """Per-step rewards of every member, shape ``(ensemble, *obs.shape[:-1])``."""
        if obs.shape[-1] != self.obs_dim or act.shape[-1] != self.act_dim or obs.shape[:-1] != act.shape[:-1]:
            raise ValueError(
                f"obs (..., {self.obs_dim}) and act (..., {self.act_dim}) must share leading dims, got "
                f"{tuple(obs.shape)} and {tuple(act.shape)}"
            )
        x = torch.cat([obs, act.to(obs.dtype)], dim=-1)
        return torch.stack([member(x).squeeze(-1) for member in self.members])


def _ood_box(
    coeff: float, low: Sequence[float] | None, high: Sequence[float] | None, batch_size: int, width: int
) -> torch.Tensor:
    """Validate the OOD options; the ``(2, width)`` box ``[low; high]`` (empty when the regulariser is off)."""
    if isinstance(coeff, bool) or not isinstance(coeff, (int, float)) or not coeff >= 0:
        raise ValueError(f"ood_coeff must be a non-negative number, got {coeff!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"ood_batch_size must be a positive integer, got {batch_size!r}")
    if coeff == 0:
        if low is not None or high is not None:
            raise ValueError("ood_low / ood_high are given but ood_coeff is 0: set ood_coeff > 0 to use the box")
        return torch.zeros(2, 0)
    if low is None or high is None:
        raise ValueError(f"ood_coeff = {coeff} needs ood_low and ood_high (obs_dim + act_dim = {width} numbers each)")
    low_list, high_list = [float(v) for v in low], [float(v) for v in high]
    if len(low_list) != width or len(high_list) != width:
        raise ValueError(
            f"ood_low and ood_high must each hold obs_dim + act_dim = {width} numbers, got "
            f"{len(low_list)} and {len(high_list)}"
        )
    box = torch.tensor([low_list, high_list], dtype=torch.float32)
    if not bool(torch.isfinite(box).all()) or not bool((box[1] > box[0]).all()):
        raise ValueError(
            f"ood_low and ood_high must be finite, every ood_high entry above ood_low's, got {low_list}, {high_list}"
        )
    return box


def _default_optimizer(params: Iterable[Any]) -> torch.optim.Optimizer:
    return torch.optim.Adam(params, lr=3e-4)


class R4RewardModel(LightningModule):
    """Reward ensemble trained from ratings with R4's ranking MSE, or the RbRL / Bradley-Terry baselines.

    Training batches come from :class:`~lightning_icml26.data.rl.ratings.RatingDataModule` with the same
    ``loss``. Validation and test batches are held-out segments with true returns; the module logs Kendall's tau
    and Spearman's rho (scipy) between predicted and true returns as ``{val,test}_kendall_tau`` and
    ``{val,test}_spearman``.

    Args:
        obs_dim: observation width.
        act_dim: action width.
        loss: ``"rmse"`` (R4), ``"rbrl"`` or ``"bradley_terry"``.
        num_classes: number of declared rating classes (at least 2).
        ensemble_size: reward networks in the ensemble.
        hidden: hidden width of each network.
        depth: hidden layers of each network.
        regularization_strength: soft-rank ``eps`` of the ranking MSE; ``None`` takes the operator's default
            (1.0 for ``"pav"``, the paper; 0.1 for ``"ot"``).
        soft_rank: ``"pav"`` (the paper's permutahedron projection) or ``"ot"`` (the official optimal-transport
            variant); used by ``loss="rmse"`` only.
        rbrl_k: sharpness ``k`` of the RbRL logits (30 in the paper).
        l2_lambda: weight of the official code's penalty ``sum over parameter tensors of ||theta||_2`` (the
            Euclidean norm, not squared) added to the loss of any ``loss``; 0 disables it.
        ood_coeff: weight of the out-of-distribution regulariser (0 disables it; the official code uses 0.1).
        ood_low: lower corner of the state-action box the regulariser samples from, ``obs_dim + act_dim``
            numbers (observation first); required when ``ood_coeff > 0``.
        ood_high: upper corner of that box, same length, every entry above ``ood_low``'s.
        ood_batch_size: uniform points drawn per training step (1024 in the official code).
        optimizer: factory taking the parameters; default ``Adam(lr=3e-4)`` as in the paper.

    Example:
        >>> model = R4RewardModel(obs_dim=3, act_dim=1, num_classes=3, hidden=8, depth=1)
        >>> model.reward(torch.zeros(7, 3), torch.zeros(7, 1)).shape
        torch.Size([7])
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        loss: str = "rmse",
        num_classes: int = 5,
        ensemble_size: int = 3,
        hidden: int = 256,
        depth: int = 3,
        regularization_strength: float | None = None,
        rbrl_k: float = 30.0,
        l2_lambda: float = 0.0,
        soft_rank: str = "pav",
        ood_coeff: float = 0.0,
        ood_low: Sequence[float] | None = None,
        ood_high: Sequence[float] | None = None,
        ood_batch_size: int = 1024,
        optimizer: OptimizerFactory | None = None,
    ) -> None:
        super().__init__()
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
        check_ratings(torch.zeros(1, dtype=torch.long), num_classes)
        if regularization_strength is not None and not regularization_strength > 0:
            raise ValueError(f"regularization_strength must be positive or None, got {regularization_strength!r}")
        if soft_rank not in SOFT_RANK_METHODS:
            raise ValueError(f"soft_rank must be one of {SOFT_RANK_METHODS}, got {soft_rank!r}")
        box = _ood_box(ood_coeff, ood_low, ood_high, ood_batch_size, obs_dim + act_dim)
        if isinstance(l2_lambda, bool) or not isinstance(l2_lambda, (int, float)) or not l2_lambda >= 0:
            raise ValueError(f"l2_lambda must be a non-negative number, got {l2_lambda!r}")
        self.save_hyperparameters(ignore=["optimizer"])
        self.net = RewardEnsemble(obs_dim, act_dim, ensemble_size, hidden, depth)
        self.ood_box: torch.Tensor
        self.register_buffer("ood_box", box, persistent=False)
        self.optimizer_factory = optimizer or _default_optimizer
        self.reward_mean: torch.Tensor
        self.reward_std: torch.Tensor
        self.register_buffer("reward_mean", torch.zeros(()))
        self.register_buffer("reward_std", torch.ones(()))
        self._eval_pred: list[torch.Tensor] = []
        self._eval_true: list[torch.Tensor] = []

    # ----------------------------------------------------------------------------------------------- inference
    def segment_returns(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """Per-member predicted returns (undiscounted sums over the step axis ``-2``): ``(ensemble, ...)``."""
        return self.net(obs, act).sum(-1)

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """Raw ensemble-mean per-step reward, shape ``obs.shape[:-1]``."""
        return self.net(obs, act).mean(0)

    def reward(self, obs: torch.Tensor, act: torch.Tensor, normalize: bool = True) -> torch.Tensor:
        """Ensemble-mean per-step reward for the RL agent, normalised by the stored statistics by default."""
        with torch.no_grad():
            raw = self(obs, act)
        return (raw - self.reward_mean) / self.reward_std if normalize else raw

    @torch.no_grad()
    def fit_normalization(self, obs: torch.Tensor, act: torch.Tensor) -> None:
        """Set the normalisation to the mean and std of the predicted per-step rewards on ``obs``, ``act``."""
        raw = self(obs.to(self.device), act.to(self.device)).flatten()
        self.reward_mean.copy_(raw.mean())
        self.reward_std.copy_(raw.std().clamp_min(1e-6) if raw.numel() > 1 else torch.ones(()))

    # ------------------------------------------------------------------------------------------------ training
    def l2_penalty(self) -> torch.Tensor:
        """``sum over the reward networks' parameter tensors of ||theta||_2`` (the official code's penalty)."""
        return torch.stack([p.norm() for p in self.net.parameters()]).sum()

    def ood_penalty(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """``sum over members of mean r(uniform box points) - mean r(the batch's state-actions)``.

        The official ``regularize_ood`` term without its coefficient: the batch's per-step rewards are pushed up
        and those of ``ood_batch_size`` fresh uniform draws from the box pushed down.
        """
        keys = [("obs", "act")] if "obs" in batch else [("obs_a", "act_a"), ("obs_b", "act_b")]
        inside = torch.cat([self.net(batch[o], batch[a]).flatten(1) for o, a in keys], dim=1)  # (E, steps)
        low, high = self.ood_box[0], self.ood_box[1]
        draws = torch.rand(int(self.hparams["ood_batch_size"]), low.numel(), device=low.device, dtype=low.dtype)
        points = low + (high - low) * draws
        outside = self.net(points[:, : self.net.obs_dim], points[:, self.net.obs_dim :])  # (E, ood_batch_size)
        return (outside.mean(1) - inside.mean(1)).sum()

    def compute_loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """The configured loss summed over ensemble members, plus the enabled L2 and OOD terms."""
        loss = self._data_loss(batch)
        l2_lambda = float(self.hparams.get("l2_lambda", 0.0))
        if l2_lambda > 0:
            loss = loss + l2_lambda * self.l2_penalty()
        ood_coeff = float(self.hparams.get("ood_coeff", 0.0))
        if ood_coeff > 0:
            loss = loss + ood_coeff * self.ood_penalty(batch)
        return loss

    def _data_loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        loss = self.hparams["loss"]
        if loss == "rmse":
            obs, act, ratings = batch["obs"], batch["act"], batch["ratings"]  # (B, C, T, d), (B, C)
            check_ratings(ratings, self.hparams["num_classes"])
            returns = self.segment_returns(obs, act)  # (E, B, C)
            eps, method = self.hparams["regularization_strength"], self.hparams.get("soft_rank", "pav")
            zero = torch.zeros((), device=obs.device)
            return sum((ranking_mse_loss(r, ratings, eps, method) for r in returns), zero)
        if loss == "rbrl":
            returns = self.segment_returns(batch["obs"], batch["act"])  # (E, B)
            k, n = self.hparams["rbrl_k"], self.hparams["num_classes"]
            zero = torch.zeros((), device=returns.device)
            return sum((rbrl_loss(r, batch["ratings"], n, k) for r in returns), zero)
        returns_a = self.segment_returns(batch["obs_a"], batch["act_a"])
        returns_b = self.segment_returns(batch["obs_b"], batch["act_b"])
        pref = batch["preference"]
        return sum(
            (bradley_terry_loss(a, b, pref) for a, b in zip(returns_a, returns_b, strict=False)),
            torch.zeros((), device=pref.device),
        )

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        """Loss on one batch of rated items."""
        loss = self.compute_loss(batch)
        size = next(iter(batch.values())).shape[0]
        self.log("train_loss", loss, on_step=True, on_epoch=True, prog_bar=True, batch_size=size)
        return loss

    def on_train_end(self) -> None:
        """Refresh the reward normalisation on the rated segments of the data module, if it has them."""
        datamodule = getattr(self.trainer, "datamodule", None)
        rated = getattr(datamodule, "rated", None)
        if rated is not None:
            self.fit_normalization(rated.obs, rated.act)

    # -------------------------------------------------------------------------------------------- evaluation
    def _eval_step(self, batch: dict[str, torch.Tensor]) -> None:
        self._eval_pred.append(self.segment_returns(batch["obs"], batch["act"]).mean(0).detach().cpu())
        self._eval_true.append(batch["returns"].detach().cpu())

    def _eval_end(self, split: str) -> None:
        if not self._eval_pred:
            return
        pred = torch.cat(self._eval_pred).double().numpy()
        true = torch.cat(self._eval_true).double().numpy()
        self._eval_pred, self._eval_true = [], []
        tau = float(kendalltau(pred, true).statistic) if len(pred) > 1 else float("nan")
        rho = float(spearmanr(pred, true).statistic) if len(pred) > 1 else float("nan")
        self.log(f"{split}_kendall_tau", float(np.nan_to_num(tau)), prog_bar=True)
        self.log(f"{split}_spearman", float(np.nan_to_num(rho)))

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """Collect predicted and true returns of held-out segments."""
        self._eval_step(batch)

    def on_validation_epoch_end(self) -> None:
        """Log rank correlations with the true return."""
        self._eval_end("val")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """Collect predicted and true returns of held-out segments."""
        self._eval_step(batch)

    def on_test_epoch_end(self) -> None:
        """Log rank correlations with the true return."""
        self._eval_end("test")

    def configure_optimizers(self) -> torch.optim.Optimizer:
        """The optimizer from the factory."""
        return self.optimizer_factory(self.parameters())
