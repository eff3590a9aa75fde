"""``FedRoundCallback``: rounds of a single-process federated simulation driven by a Trainer's epochs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from lightning.pytorch import Callback, LightningModule, Trainer
from torch import Tensor

__all__ = ["FedRoundCallback"]


class FedRoundCallback(Callback):
    """One training epoch of the server is one federated round; this callback runs the clients' side.

    At the start of every epoch it draws the participating clients, builds each client's update object from
    the ``client`` factory (``client(teacher=server.net, images=..., labels=..., num_classes=..., seed=...,
    resample=..., global_soft_labels=...)``, e.g. a partial of
    :class:`~lightning_icml26.modules.fedusd.SyntheticSetDistiller` or of
    :class:`~lightning_icml26.modules.fedusd.FedAvgClient`) and calls its ``run(distill_steps)``:

    * updates with ``"images"`` / ``"targets"`` (synthetic data) are concatenated into this round's set; the
      sets of the last ``window`` rounds become the server's pool (``server.set_pool``);
    * updates with ``"state_dict"`` (FedAvg) are averaged, weighted by ``"num_samples"``, into ``server.net``.

    The first round resamples freshly initialised networks (``resample="reinit"``), later ones perturb the
    global model. With ``global_knowledge`` (FedAF) each participating client first sends its per-class mean
    softened predictions of the global model (from the second round on), and the count-weighted average is
    handed to every client as ``global_soft_labels``. Bytes each client sends per round (float32 payloads)
    are logged as ``fed/bytes_per_client`` (their mean) and ``fed/bytes_max_per_client`` and kept in :attr:`history`.

    The round counter, the window of synthetic sets, the history and the generator's state are the
    callback's checkpointed state, so a run resumed from an epoch-end checkpoint continues the rounds
    exactly. The data module must provide ``client_data(k)``, ``num_clients`` and ``num_classes``
    (:class:`~lightning_icml26.data.DirichletPartitionDataModule`).

    Args:
        client: factory of a client update object (see above).
        distill_steps: steps each client runs per round (ignored by FedAvg clients).
        window: rounds of synthetic sets kept in the server's pool.
        participation: fraction of clients drawn per round (at least one).
        global_knowledge: exchange class soft labels (FedAF's knowledge matching).
        temperature: softmax temperature of the soft labels.
        seed: seed of client draws and of the per-client seeds.

    Example:
        >>> from functools import partial
        >>> from lightning_icml26.modules.fedusd import SyntheticSetDistiller
        >>> cb = FedRoundCallback(partial(SyntheticSetDistiller, ipc=2), distill_steps=5)
        >>> cb.state_dict()["round"]
        0
    """

    def __init__(
        self,
        client: Callable[..., Any],
        distill_steps: int = 1000,
        window: int = 3,
        participation: float = 1.0,
        global_knowledge: bool = False,
        temperature: float = 2.0,
        seed: int = 0,
    ) -> None:
        if not callable(client):
            raise TypeError(f"client must be a callable factory of client updates, got {type(client).__name__}")
        if distill_steps < 0:
            raise ValueError(f"distill_steps must be non-negative, got {distill_steps}")
        if window < 1:
            raise ValueError(f"window must be a positive integer, got {window}")
        if not 0 < participation <= 1:
            raise ValueError(f"participation must be in (0, 1], got {participation}")
        self.client = client
        self.distill_steps = distill_steps
        self.window = window
        self.participation = participation
        self.global_knowledge = global_knowledge
        self.temperature = temperature
        self.round = 0
        self.sets: list[tuple[Tensor, Tensor]] = []
        self.history: list[dict[str, Any]] = []
        self.generator = torch.Generator().manual_seed(seed)

    def _participants(self, num_clients: int) -> list[int]:
        count = max(1, round(self.participation * num_clients))
        return sorted(torch.randperm(num_clients, generator=self.generator)[:count].tolist())

    def _global_soft_labels(self, dm: Any, server: Any, clients: list[int]) -> Tensor | None:
        if not self.global_knowledge or self.round == 0:
            return None
        sums, totals = None, None
        for k in clients:
            x, y = dm.client_data(k)
            probs, counts = server.class_soft_labels(x, y, self.temperature)
            sums = probs * counts[:, None] if sums is None else sums + probs * counts[:, None]
            totals = counts if totals is None else totals + counts
        if sums is None or totals is None:
            return None
        return sums / totals.clamp_min(1)[:, None]

    def on_train_epoch_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        """Run one round: client updates, then the server's pool or averaged weights."""
        dm: Any = getattr(trainer, "datamodule", None)
        if dm is None or not hasattr(dm, "client_data"):
            raise TypeError("FedRoundCallback needs a data module with client_data(k) (DirichletPartitionDataModule)")
        server: Any = pl_module
        clients = self._participants(int(dm.num_clients))
        soft = self._global_soft_labels(dm, server, clients)
        extra = 0 if soft is None else soft.numel() * 4
        updates = []
        for k in clients:
            x, y = dm.client_data(k)
            seed = int(torch.randint(0, 2**62, (1,), generator=self.generator))
            maker = self.client(
                teacher=server.net,
                images=x,
                labels=y,
                num_classes=int(dm.num_classes),
                seed=seed,
                resample="reinit" if self.round == 0 else "perturb",
                global_soft_labels=soft,
            )
            updates.append(maker.run(self.distill_steps))
        if "state_dict" in updates[0]:
            merged = _average([u["state_dict"] for u in updates], [float(u["num_samples"]) for u in updates])
            server.net.load_state_dict(merged)
        else:
            images = torch.cat([u["images"] for u in updates])
            targets = torch.cat([u["targets"] for u in updates])
            self.sets = [*self.sets, (images, targets)][-self.window :]
            server.set_pool(torch.cat([s[0] for s in self.sets]), torch.cat([s[1] for s in self.sets]))
        sent = [int(u["num_bytes"]) + extra for u in updates]
        self.history.append({"round": self.round, "clients": clients, "bytes": sent})
        pl_module.log("fed/bytes_per_client", float(sum(sent)) / len(sent), on_epoch=True)
        pl_module.log("fed/bytes_max_per_client", float(max(sent)), on_epoch=True)
        pl_module.log("fed/round", float(self.round), on_epoch=True)
        self.round += 1

    def state_dict(self) -> dict[str, Any]:
        """Round counter, window of synthetic sets, history and generator state."""
        return {
            "round": self.round,
            "sets": [(x.clone(), t.clone()) for x, t in self.sets],
            "history": list(self.history),
            "generator": self.generator.get_state(),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the state (missing keys keep their defaults)."""
        self.round = int(state_dict.get("round", 0))
        self.sets = [(x, t) for x, t in state_dict.get("sets", [])]
        self.history = list(state_dict.get("history", []))
        if "generator" in state_dict:
            self.generator.set_state(state_dict["generator"])


def _average(states: list[dict[str, Tensor]], weights: list[float]) -> dict[str, Tensor]:
    total = sum(weights)
    out: dict[str, Tensor] = {}
    for key, first in states[0].items():
        if first.is_floating_point():
            out[key] = torch.stack([s[key] * (w / total) for s, w in zip(states, weights, strict=True)]).sum(0)
        else:
            out[key] = first.clone()
    return out
