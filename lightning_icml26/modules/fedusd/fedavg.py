"""FedAvg's client update (local SGD on real data) and the server's weighted parameter average."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule
from torch import Tensor, nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26.modules.fedusd._sampling import EpochSeededSampler

__all__ = ["FedAvgClient", "average_state_dicts"]


def average_state_dicts(states: Sequence[dict[str, Tensor]], weights: Sequence[float]) -> dict[str, Tensor]:
    """Weighted average of state dicts (floating entries averaged; integer entries taken from the first).

    Example:
        >>> a, b = {"w": torch.tensor([0.0])}, {"w": torch.tensor([3.0])}
        >>> average_state_dicts([a, b], [2, 1])["w"]
        tensor([1.])
    """
    if not states or len(states) != len(weights):
        raise ValueError(
            f"states and weights must be non-empty and of equal length, got {len(states)} and {len(weights)}"
        )
    total = float(sum(weights))
    if total <= 0:
        raise ValueError(f"weights must have a positive sum, got {list(weights)}")
    out = {}
    for key, first in states[0].items():
        if first.is_floating_point():
            out[key] = sum(s[key] * (w / total) for s, w in zip(states, weights, strict=True))
        else:
            out[key] = first.clone()
    return out  # type: ignore[return-value]


class FedAvgClient(LightningModule):
    """A client of FedAvg: a copy of the global model trained by SGD on the client's real data.

    Takes the same keyword arguments as :class:`SyntheticSetDistiller` where they apply (``teacher``,
    ``images``, ``labels``, ``num_classes``, ``seed``), so the round callback builds either from a factory.

    Args:
        teacher: the global model (copied).
        images: real images.
        labels: real labels.
        num_classes: classes.
        local_epochs: passes over the client's data per round.
        batch_size: local minibatch size.
        lr: local SGD learning rate.
        momentum: local SGD momentum.
        seed: seed of the minibatch order.
        **unused: other client keywords (``ipc``, ``resample``, ...), ignored.

    Example:
        >>> from lightning_icml26.modules.fedusd import ConvNet
        >>> client = FedAvgClient(ConvNet(1, 10, 8), torch.randn(8, 1, 8, 8), torch.arange(8) % 2, batch_size=4)
        >>> sorted(client.run())
        ['num_bytes', 'num_samples', 'state_dict']
    """

    def __init__(
        self,
        teacher: nn.Module,
        images: Tensor,
        labels: Tensor,
        num_classes: int = 10,
        local_epochs: int = 1,
        batch_size: int = 64,
        lr: float = 0.01,
        momentum: float = 0.9,
        seed: int = 0,
        **unused: Any,
    ) -> None:
        super().__init__()
        if local_epochs < 0 or batch_size < 1:
            raise ValueError(f"local_epochs must be >= 0 and batch_size >= 1, got {local_epochs} and {batch_size}")
        self.save_hyperparameters(ignore=["teacher", "images", "labels", "unused"])
        self.net = copy.deepcopy(teacher).requires_grad_(True).train()
        self.images, self.labels = images.detach(), labels.detach()
        self.generator = torch.Generator().manual_seed(seed)

    def training_step(self, batch: Sequence[Tensor], batch_idx: int) -> Tensor:
        """Cross-entropy of the local model on a real batch."""
        loss = F.cross_entropy(self.net(batch[0]), batch[1])
        if self._trainer is not None:
            self.log("local/loss", loss)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        """Local SGD."""
        return torch.optim.SGD(
            self.net.parameters(), lr=float(self.hparams["lr"]), momentum=float(self.hparams["momentum"])
        )

    def train_dataloader(self) -> DataLoader:
        """The client's data, shuffled by (seed, epoch)."""
        sampler = EpochSeededSampler(len(self.labels), int(self.hparams["seed"]))
        return DataLoader(
            TensorDataset(self.images, self.labels), batch_size=int(self.hparams["batch_size"]), sampler=sampler
        )

    def run(self, steps: int | None = None) -> dict[str, Any]:
        """``local_epochs`` passes of minibatch SGD (order from the generator); ``steps`` is ignored.

        Returns:
            ``{"state_dict", "num_samples", "num_bytes" (float32 parameters sent)}``.
        """
        optimizer = self.configure_optimizers()
        bs = int(self.hparams["batch_size"])
        for _ in range(int(self.hparams["local_epochs"])):
            order = torch.randperm(len(self.labels), generator=self.generator)
            for i, start in enumerate(range(0, len(order), bs)):
                idx = order[start : start + bs]
                loss = self.training_step((self.images[idx], self.labels[idx]), i)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        state = {k: v.detach().clone() for k, v in self.net.state_dict().items()}
        num_bytes = sum(p.numel() * 4 for p in self.net.parameters())
        return {"state_dict": state, "num_samples": len(self.labels), "num_bytes": num_bytes}
