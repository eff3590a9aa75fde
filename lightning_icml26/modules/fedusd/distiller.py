"""``SyntheticSetDistiller``: one client's synthetic images, learned by matching real features."""

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
from lightning_icml26.modules.fedusd.augment import siamese_augment
from lightning_icml26.modules.fedusd.convnet import perturbed_copy, reinitialised_copy
from lightning_icml26.modules.fedusd.formation import pack_quadrants, unpack_quadrants
from lightning_icml26.ops import hob_projection_loss, hob_w1_loss, mean_matching_loss, var_w1_loss

__all__ = ["LOSSES", "SyntheticSetDistiller"]

LOSSES = ("hob_w1", "hob_projection", "dm", "fedaf")


class SyntheticSetDistiller(LightningModule):
    """Learns ``ipc`` synthetic images per class of one client so that their features match the real ones.

    Each step draws a frozen network from the global model (a copy moved along a random Gaussian direction
    of norm ``perturb_radius``, or, with ``resample="reinit"``, a freshly initialised copy, as in the first
    round), applies one shared random augmentation to the real and synthetic batches, embeds both with the
    network's ``embed`` and sums a per-class matching loss over the client's classes:

    * ``"hob_w1"`` (FedUSD, default): ``hob_weight * hob_w1_loss + var_weight * var_w1_loss``;
    * ``"hob_projection"``: ``hob_weight * hob_projection_loss(k) + var_weight * var_w1_loss``;
    * ``"dm"``: squared distance of the mean features (distribution matching);
    * ``"fedaf"``: DM plus ``lgkm_weight`` times the KL divergence from the aggregated class soft labels
      ``global_soft_labels`` (rows: classes) to the global model's mean softened prediction on the synthetic
      images of that class (local-global knowledge matching; skipped when no soft labels are given).

    The only parameters are the synthetic images; the optimizer is SGD on the pixels.

    With ``multi_formation=True`` (the reference code's default, its ``--aug`` flag) every stored image
    packs four half-resolution images in its quadrants (initialised from four random real images of the
    class shrunk by two); the loss, and the server, see the ``4 * ipc`` quadrants upsampled back to full
    size, while the client sends the ``ipc`` packed images, i.e. the same bytes.

    Args:
        teacher: the global model (a module with ``embed``); it is copied, never changed.
        images: the client's real images ``(n, C, H, W)``.
        labels: their labels ``(n,)``.
        num_classes: number of classes overall.
        ipc: synthetic images per class.
        classes: the classes to distil (``None``: every class with at least ``ipc`` real images).
        loss: one of ``LOSSES``.
        init: ``"real"`` (random real images of the class) or ``"noise"`` (Gaussian, rescaled to the real
            images' largest magnitude).
        resample: ``"perturb"`` or ``"reinit"``.
        perturb_radius: norm of the weight perturbation.
        hob_weight: weight of the HOB term.
        var_weight: weight of the variance term.
        k: directions of the projection loss.
        real_batch: real images per class and step.
        augment: apply the siamese augmentation.
        lr: SGD learning rate on the pixels.
        momentum: SGD momentum.
        global_soft_labels: ``(num_classes, num_classes)`` aggregated soft labels (FedAF only).
        lgkm_weight: weight of the knowledge-matching term (FedAF only).
        temperature: softmax temperature of the knowledge-matching term.
        seed: seed of every random draw (initial images, networks, augmentations, real batches).
        multi_formation: store four half-resolution images per synthetic image (see above).

    Example:
        >>> from lightning_icml26.modules.fedusd import ConvNet
        >>> x, y = torch.randn(20, 1, 8, 8), torch.arange(2).repeat(10)
        >>> d = SyntheticSetDistiller(ConvNet(1, 10, 8), x, y, ipc=2, real_batch=4)
        >>> out = d.run(steps=2)
        >>> out["images"].shape, out["targets"].shape, out["num_bytes"]
        (torch.Size([4, 1, 8, 8]), torch.Size([4, 10]), 1024)
    """

    synthetic_labels: Tensor

    def __init__(
        self,
        teacher: nn.Module,
        images: Tensor,
        labels: Tensor,
        num_classes: int = 10,
        ipc: int = 10,
        classes: Sequence[int] | None = None,
        loss: str = "hob_w1",
        init: str = "real",
        resample: str = "perturb",
        perturb_radius: float = 5.0,
        hob_weight: float = 0.01,
        var_weight: float = 0.01,
        k: int = 1,
        real_batch: int = 256,
        augment: bool = True,
        lr: float = 1.0,
        momentum: float = 0.5,
        global_soft_labels: Tensor | None = None,
        lgkm_weight: float = 0.8,
        temperature: float = 2.0,
        seed: int = 0,
        multi_formation: bool = False,
    ) -> None:
        super().__init__()
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
        if init not in ("real", "noise"):
            raise ValueError(f"init must be 'real' or 'noise', got {init!r}")
        if resample not in ("perturb", "reinit"):
            raise ValueError(f"resample must be 'perturb' or 'reinit', got {resample!r}")
        if not isinstance(ipc, int) or ipc < (2 if loss in ("hob_w1", "hob_projection") else 1):
            raise ValueError(f"ipc must be an integer >= 2 for the HOB/variance losses (>= 1 otherwise), got {ipc!r}")
        if images.ndim != 4 or labels.shape != images.shape[:1]:
            raise ValueError(
                f"images must be (n, C, H, W) and labels (n,), got {tuple(images.shape)} and {tuple(labels.shape)}"
            )
        if not hasattr(teacher, "embed"):
            raise TypeError(f"teacher must have an embed(x) method (e.g. ConvNet), got {type(teacher).__name__}")
        if multi_formation and (images.shape[-1] % 2 or images.shape[-2] % 2):
            raise ValueError(f"multi_formation needs an even image height and width, got {tuple(images.shape[-2:])}")
        if real_batch < 2:
            raise ValueError(f"real_batch must be >= 2, got {real_batch}")
        counts = torch.bincount(labels, minlength=num_classes)
        chosen = [c for c in range(num_classes) if counts[c] >= ipc] if classes is None else list(classes)
        if not chosen:
            raise ValueError(
                f"the client has no class to distil: class counts {counts.tolist()}, ipc={ipc} (a class needs at "
                "least ipc real images)"
            )
        for c in chosen:
            if not 0 <= c < num_classes:
                raise ValueError(f"classes must lie in [0, {num_classes}), got {c}")
            if init == "real" and counts[c] < ipc:
                raise ValueError(f"ipc={ipc} exceeds the client's {int(counts[c])} real images of class {c}")
        if k < 1 or (loss == "hob_projection" and k > ipc):
            raise ValueError(f"k must be in [1, ipc={ipc}], got {k}")
        self.save_hyperparameters(ignore=["teacher", "images", "labels", "global_soft_labels"])
        self.teacher: nn.Module = copy.deepcopy(teacher).requires_grad_(False).eval()
        self.real_images, self.real_labels = images.detach(), labels.detach()
        self.classes = chosen
        self.global_soft_labels = global_soft_labels
        self.generator = torch.Generator().manual_seed(seed)
        self.register_buffer("synthetic_labels", torch.tensor(chosen, dtype=torch.long).repeat_interleave(ipc))
        self.synthetic = nn.Parameter(self._initial_images(init))

    def _initial_images(self, init: str) -> Tensor:
        ipc = int(self.hparams["ipc"])
        if init == "noise":
            noise = torch.randn((len(self.classes) * ipc, *self.real_images.shape[1:]), generator=self.generator)
            return noise / noise.abs().max() * self.real_images.abs().max()
        draws = 4 if self.hparams["multi_formation"] else 1
        batches = []
        for _ in range(draws):
            picks = []
            for c in self.classes:
                idx = torch.nonzero(self.real_labels == c).flatten()
                picks.append(idx[torch.randperm(len(idx), generator=self.generator)[:ipc]])
            batches.append(self.real_images[torch.cat(picks)].clone())
        return pack_quadrants(*batches) if draws == 4 else batches[0]

    def decoded(self) -> tuple[Tensor, Tensor]:
        """The training images the synthetic set stands for and their labels (quadrants unpacked if packed)."""
        if self.hparams["multi_formation"]:
            return unpack_quadrants(self.synthetic)[0], self.synthetic_labels.repeat(4)
        return self.synthetic, self.synthetic_labels

    def _network(self) -> nn.Module:
        if self.hparams["resample"] == "reinit":
            return reinitialised_copy(self.teacher, self.generator)
        return perturbed_copy(self.teacher, float(self.hparams["perturb_radius"]), self.generator)

    def sample_real_batch(self) -> tuple[Tensor, Tensor]:
        """``real_batch`` real images per distilled class (all of them when fewer), drawn from the generator."""
        xs, ys = [], []
        for c in self.classes:
            idx = torch.nonzero(self.real_labels == c).flatten()
            idx = idx[torch.randperm(len(idx), generator=self.generator)[: int(self.hparams["real_batch"])]]
            xs.append(self.real_images[idx])
            ys.append(self.real_labels[idx])
        return torch.cat(xs), torch.cat(ys)

    def matching_loss(self, real: Tensor, real_labels: Tensor) -> Tensor:
        """The summed per-class matching loss of the current synthetic images against a real batch."""
        hp: Any = self.hparams
        net: Any = self._network().to(self.synthetic.device)
        real = real.to(self.synthetic.device)
        syn, syn_labels = self.decoded()
        if hp.augment:
            real, syn = siamese_augment(real, syn, generator=self.generator)
        f_real, f_syn = net.embed(real), net.embed(syn)
        total = syn.new_zeros(())
        for c in self.classes:
            fr = f_real[real_labels.to(f_real.device) == c]
            fs = f_syn[syn_labels == c]
            if len(fr) < 2:
                continue
            if hp.loss == "hob_w1":
                total = total + hp.hob_weight * hob_w1_loss(fs, fr) + hp.var_weight * var_w1_loss(fs, fr)
            elif hp.loss == "hob_projection":
                k = min(hp.k, len(fr))
                total = total + hp.hob_weight * hob_projection_loss(fs, fr, k) + hp.var_weight * var_w1_loss(fs, fr)
            else:
                total = total + mean_matching_loss(fs, fr)
        if hp.loss == "fedaf" and self.global_soft_labels is not None:
            log_probs = F.log_softmax(self.teacher(self.decoded()[0]) / hp.temperature, dim=1)
            for c in self.classes:
                target = self.global_soft_labels[c].to(log_probs)
                mean_probs = log_probs[syn_labels == c].exp().mean(0)
                total = total + hp.lgkm_weight * F.kl_div(mean_probs.clamp_min(1e-12).log(), target, reduction="sum")
        return total

    def training_step(self, batch: Sequence[Tensor], batch_idx: int) -> Tensor:
        """The matching loss on a real batch ``(images, labels)``."""
        loss = self.matching_loss(batch[0], batch[1])
        if self._trainer is not None:
            self.log("distill/loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        """SGD on the synthetic pixels."""
        return torch.optim.SGD([self.synthetic], lr=float(self.hparams["lr"]), momentum=float(self.hparams["momentum"]))

    def train_dataloader(self) -> DataLoader:
        """The client's real images, shuffled by (seed, epoch) (for use with a Trainer)."""
        data = TensorDataset(self.real_images, self.real_labels)
        sampler = EpochSeededSampler(len(data), int(self.hparams["seed"]))
        return DataLoader(data, batch_size=int(self.hparams["real_batch"]) * len(self.classes), sampler=sampler)

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Keep the generator's state, so that a resumed run draws what an uninterrupted one would."""
        checkpoint["distiller_generator"] = self.generator.get_state()

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Restore the generator's state."""
        if "distiller_generator" in checkpoint:
            self.generator.set_state(checkpoint["distiller_generator"])

    def run(self, steps: int) -> dict[str, Any]:
        """Optimise for ``steps`` steps without a Trainer (the federated simulation's client update).

        Returns:
            ``{"images", "targets" (one-hot), "num_bytes" (float32 images sent), "loss" (last)}``; with
            ``multi_formation`` the images are the unpacked quadrants, the bytes those of the packed set.
        """
        if steps < 0:
            raise ValueError(f"steps must be non-negative, got {steps}")
        optimizer = self.configure_optimizers()
        loss = torch.zeros(())
        for step in range(steps):
            x, y = self.sample_real_batch()
            loss = self.training_step((x, y), step)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            images, labels = (t.detach().clone() for t in self.decoded())
        targets = F.one_hot(labels, int(self.hparams["num_classes"])).float()
        sent = self.synthetic.numel() * 4  # float32 pixels of the stored (packed) images
        return {"images": images, "targets": targets, "num_bytes": sent, "loss": float(loss.detach())}
