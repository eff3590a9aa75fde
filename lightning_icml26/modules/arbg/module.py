"""ArBG: an autoregressive Boltzmann generator over binned Cartesian coordinates, as a LightningModule."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import lightning.pytorch as pl
import torch
from torch import Tensor, nn

from lightning_icml26._optional import require
from lightning_icml26.data.boltzmann.sampler import (
    autoregressive_sample,
    check_sampling_args,
    sequence_log_prob,
)
from lightning_icml26.modules.arbg.tokenizer import CoordinateTokenizer

__all__ = ["ArBG", "augment", "random_rotations"]

OptimizerFactory = Callable[[Iterable[nn.Parameter]], torch.optim.Optimizer]
SchedulerFactory = Callable[[torch.optim.Optimizer], Any]


def random_rotations(
    n: int, dim: int, dtype: torch.dtype = torch.float64, generator: torch.Generator | None = None
) -> Tensor:
    """``n`` Haar-random rotation matrices in SO(dim) (QR of a Gaussian with sign fix, determinant +1).

    Example:
        >>> r = random_rotations(4, 3)
        >>> bool(torch.allclose(torch.linalg.det(r), torch.ones(4, dtype=torch.float64)))
        True
    """
    g = torch.randn(n, dim, dim, dtype=dtype, generator=generator)
    q, r = torch.linalg.qr(g)
    q = q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1)).unsqueeze(-2)
    flip = torch.linalg.det(q) < 0
    q[flip, :, 0] = -q[flip, :, 0]
    return q


def augment(x: Tensor, rotate: bool, com_std: float, generator: torch.Generator | None = None) -> Tensor:
    """Centre conformations, optionally rotate them randomly and add Gaussian centre-of-mass noise.

    Args:
        x: ``(N, n_atoms, dim)``.
        rotate: apply a random SO(dim) rotation per conformation.
        com_std: standard deviation of the added centre of mass (0 disables it).
        generator: optional generator.

    Example:
        >>> y = augment(torch.randn(5, 4, 2, dtype=torch.float64), rotate=True, com_std=0.0)
        >>> bool(y.mean(dim=1).abs().max() < 1e-12)
        True
    """
    x = x - x.mean(dim=1, keepdim=True)
    if rotate:
        rot = random_rotations(x.shape[0], x.shape[2], dtype=x.dtype, generator=generator).to(x.device)
        x = torch.einsum("nad,nkd->nak", x, rot)
    if com_std > 0:
        x = x + com_std * torch.randn(x.shape[0], 1, x.shape[2], dtype=x.dtype, generator=generator).to(x.device)
    return x


class ArBG(pl.LightningModule):
    """Autoregressive Boltzmann generator (Rehman et al., ICML 2026) over uniformly binned coordinates.

    A conformation ``x`` (``n_atoms x dim``) is centred, given a random rotation and a Gaussian centre of mass of
    std ``scale / sqrt(n_atoms)`` (training augmentation), divided by ``scale``, flattened atom-major and
    binned (:class:`CoordinateTokenizer`). A causal transformer (a ``transformers`` Llama model, imported lazily:
    RMSNorm, SwiGLU, rotary positions) reads the embedding of the previous bin plus a coordinate-axis, an
    atom-index and an atom-type embedding and predicts the next bin. :meth:`sample` and :meth:`log_prob` share
    :func:`masked_log_softmax`, so ``log_prob`` of a drawn sample under the same ``temperature``, ``top_k`` and
    ``top_p`` equals the sampler's own log-probability, and the returned density includes the bin width and the
    scale (``-d log(delta * scale)``), a proper density over Cartesian coordinates.

    ``dequantization="empirical"`` draws the position inside each bin from the within-bin offsets of the training
    data instead of uniformly (see :class:`CoordinateTokenizer`); the offset histogram is fitted in :meth:`setup`
    from the data module's training positions, or by calling :meth:`fit_dequantization`, and its log density is
    part of :meth:`log_prob` and of the sampler's log density. With the default ``"uniform"`` the model is
    exactly the uniform-dequantisation ArBG.

    ``value_embedding=True`` adds a learned linear map of each previous bin's centre (in units of ``scale``; 0 for
    the start token) to that bin's embedding, so the network sees the ordinal value of the previous coordinates and
    not only a categorical bin id. This is a project option, not in the authors' code: on DW-4 with a CPU-sized
    budget, the categorical input alone did not learn any dependence between coordinates (validation NLL equal to
    the product of per-coordinate marginals), while the value input did (see ``docs/arbg.md``). With the default
    ``False`` the model and its state dict are exactly as without it.

    Deviations: a dedicated start token (index ``num_bins``) instead of reusing bin 0; rotary instead of
    sinusoidal positions (Llama); uniform bins of width ``(hi - lo) / B`` for both binning and dequantisation.

    Args:
        n_atoms: atoms per conformation.
        dim: spatial dimension (2 or 3).
        atom_types: one type id per atom (``None``: all atoms share type 0).
        num_bins: bins per coordinate.
        coord_range: binning range in units of ``scale``.
        scale: coordinate standard deviation; ``None`` fits it on the data module's training positions in
            :meth:`setup` (``trainer.datamodule.train_positions()``).
        hidden_size: transformer width.
        num_layers: transformer layers.
        num_heads: attention heads.
        intermediate_size: SwiGLU width (default ``4 * hidden_size``).
        dropout: attention dropout.
        rotate: random-rotation augmentation during training.
        com_noise: centre-of-mass noise augmentation during training.
        label_smoothing: cross-entropy label smoothing.
        dequantization: ``"uniform"`` (default) or ``"empirical"`` within-bin dequantisation.
        offset_resolution: sub-bins of the empirical within-bin offset histogram.
        offset_prior: pseudo-count per sub-bin of that histogram.
        value_embedding: also embed the previous bin's centre value linearly (see above).
        out_of_range: what the training, validation and test steps do with a conformation that has a coordinate
            outside the binning range after augmentation: ``"raise"`` (default, :class:`ValueError`) or
            ``"drop"`` it from the batch (the paper's +-3 sigma box on alanine dipeptide leaves a few out);
            :meth:`log_prob` raises in both cases (the density is zero there).
        optimizer: optimizer factory (Hydra ``_partial_: true``); default AdamW(lr=5e-4, weight_decay=0.01).
        lr_scheduler: optional scheduler factory, stepped per epoch.

    Example:
        >>> model = ArBG(n_atoms=2, dim=1, num_bins=8, coord_range=(-2.0, 2.0), scale=1.0, hidden_size=16,
        ...              num_layers=1, num_heads=2)
        >>> x, log_q = model.sample_with_log_prob(4, temperature=1.0)
        >>> tuple(x.shape), bool(torch.allclose(model.log_prob(x), log_q, atol=1e-4))
        ((4, 2, 1), True)
    """

    axis_ids: Tensor
    atom_ids: Tensor
    type_ids: Tensor

    def __init__(
        self,
        n_atoms: int,
        dim: int = 3,
        atom_types: Sequence[int] | None = None,
        num_bins: int = 1024,
        coord_range: tuple[float, float] = (-3.0, 3.0),
        scale: float | None = None,
        hidden_size: int = 64,
        num_layers: int = 2,
        num_heads: int = 4,
        intermediate_size: int | None = None,
        dropout: float = 0.0,
        rotate: bool = True,
        com_noise: bool = True,
        label_smoothing: float = 0.0,
        dequantization: str = "uniform",
        offset_resolution: int = 16,
        offset_prior: float = 1.0,
        value_embedding: bool = False,
        out_of_range: str = "raise",
        optimizer: OptimizerFactory | None = None,
        lr_scheduler: SchedulerFactory | None = None,
    ) -> None:
        super().__init__()
        if n_atoms < 1 or dim < 1:
            raise ValueError(f"n_atoms and dim must be >= 1, got n_atoms={n_atoms}, dim={dim}")
        types = [0] * n_atoms if atom_types is None else [int(t) for t in atom_types]
        if len(types) != n_atoms or min(types) < 0:
            raise ValueError(f"atom_types must be {n_atoms} non-negative ints (one per atom), got {atom_types!r}")
        if hidden_size % num_heads:
            raise ValueError(f"hidden_size={hidden_size} must be divisible by num_heads={num_heads}")
        if not isinstance(value_embedding, bool):
            raise TypeError(f"value_embedding must be a bool, got {value_embedding!r}")
        if out_of_range not in ("raise", "drop"):
            raise ValueError(f"out_of_range must be 'raise' or 'drop', got {out_of_range!r}")
        self.out_of_range = out_of_range
        self.save_hyperparameters(ignore=["optimizer", "lr_scheduler"])
        self.n_atoms, self.dim, self.length = int(n_atoms), int(dim), int(n_atoms * dim)
        self.rotate, self.com_noise, self.label_smoothing = rotate, com_noise, label_smoothing
        self.optimizer_factory, self.scheduler_factory = optimizer, lr_scheduler
        self.tokenizer = CoordinateTokenizer(
            num_bins,
            (float(coord_range[0]), float(coord_range[1])),
            1.0 if scale is None else float(scale),
            dequantization=dequantization,
            offset_resolution=offset_resolution,
            offset_prior=offset_prior,
        )
        self._scale_fitted = scale is not None
        self._offsets_fitted = dequantization == "uniform"
        self.num_bins = num_bins
        self.start_token = num_bins

        transformers = require("transformers", extra="hf", purpose="the ArBG causal transformer")
        config = transformers.LlamaConfig(
            vocab_size=num_bins + 1,
            hidden_size=hidden_size,
            intermediate_size=intermediate_size or 4 * hidden_size,
            num_hidden_layers=num_layers,
            num_attention_heads=num_heads,
            num_key_value_heads=num_heads,
            max_position_embeddings=max(self.length, 8),
            attention_dropout=dropout,
            tie_word_embeddings=False,
        )
        self.config = config
        self.transformer = transformers.LlamaModel(config)
        self.axis_embedding = nn.Embedding(dim, hidden_size)
        self.atom_embedding = nn.Embedding(n_atoms, hidden_size)
        self.type_embedding = nn.Embedding(max(types) + 1, hidden_size)
        self.head = nn.Linear(hidden_size, num_bins)
        self.value_embedding = nn.Linear(1, hidden_size) if value_embedding else None
        position = torch.arange(self.length)
        self.register_buffer("axis_ids", position % dim, persistent=False)
        self.register_buffer("atom_ids", position // dim, persistent=False)
        self.register_buffer("type_ids", torch.tensor(types)[position // dim], persistent=False)

    # ------------------------------------------------------------------ network
    def _embed(self, tokens: Tensor, start: int) -> Tensor:
        """Input embeddings for positions ``start .. start + L - 1`` given the previous tokens ``(N, L)``."""
        pos = slice(start, start + tokens.shape[1])
        extra = self.axis_embedding(self.axis_ids[pos]) + self.atom_embedding(self.atom_ids[pos])
        extra = extra + self.type_embedding(self.type_ids[pos])
        if self.value_embedding is not None:
            centre = self.tokenizer.centres(tokens.clamp(max=self.num_bins - 1), extra.dtype)
            centre = torch.where(tokens == self.start_token, torch.zeros_like(centre), centre)
            extra = extra + self.value_embedding(centre.unsqueeze(-1))
        return self.transformer.embed_tokens(tokens) + extra

    def logits(self, tokens: Tensor) -> Tensor:
        """Next-bin logits ``(N, d, B)`` with teacher forcing on ``tokens`` ``(N, d)``.

        Example:
            >>> m = ArBG(n_atoms=1, dim=2, num_bins=4, scale=1.0, hidden_size=8, num_layers=1, num_heads=2)
            >>> tuple(m.logits(torch.zeros(3, 2, dtype=torch.long)).shape)
            (3, 2, 4)
        """
        previous = torch.cat([torch.full_like(tokens[:, :1], self.start_token), tokens[:, :-1]], dim=1)
        hidden = self.transformer(inputs_embeds=self._embed(previous, 0)).last_hidden_state
        return self.head(hidden)

    def token_log_prob(
        self, tokens: Tensor, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
    ) -> Tensor:
        """Sum of masked log-probabilities of token sequences ``(N, d)`` (no bin-width term)."""
        check_sampling_args(temperature, top_k, top_p, self.num_bins)
        return sequence_log_prob(self.logits(tokens), tokens, temperature, top_k, top_p)

    # ------------------------------------------------------------------ public sampling API
    def log_prob(
        self,
        x: Tensor,
        temperature: float = 1.0,
        top_k: int | None = None,
        top_p: float | None = None,
        batch_size: int = 1024,
    ) -> Tensor:
        """Log density of conformations ``x`` (``(N, n_atoms, dim)``, physical units) under the sampler.

        Uses exactly the masks of :meth:`sample` with the same settings; includes ``-d log(delta * scale)``.

        Raises:
            ValueError: on a bad temperature / top-k / top-p or coordinates outside the binning range.
        """
        check_sampling_args(temperature, top_k, top_p, self.num_bins)
        tokens = self.tokenizer.encode(x.reshape(x.shape[0], -1))
        with torch.no_grad():
            out = [
                self.token_log_prob(chunk.to(self.device), temperature, top_k, top_p).double().cpu()
                for chunk in tokens.split(batch_size)
            ]
        offsets = self.tokenizer.offset_log_density(x.reshape(x.shape[0], -1)).cpu()
        return torch.cat(out) + offsets - self.tokenizer.log_volume(self.length)

    @torch.no_grad()
    def sample_tokens(
        self,
        num_samples: int,
        temperature: float = 1.0,
        top_k: int | None = None,
        top_p: float | None = None,
        generator: torch.Generator | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Draw token sequences with a KV cache; returns ``(tokens (N, d), token log-probabilities (N,))``."""
        check_sampling_args(temperature, top_k, top_p, self.num_bins)
        transformers = require("transformers", extra="hf")
        was_training = self.training
        self.eval()
        cache = transformers.DynamicCache(config=self.config)

        def step(previous: Tensor | None, j: int) -> Tensor:
            if previous is None:
                previous = torch.full((num_samples,), self.start_token, dtype=torch.long, device=self.device)
            emb = self._embed(previous[:, None], j)
            out = self.transformer(inputs_embeds=emb, cache=cache, use_cache=True)
            return self.head(out.last_hidden_state[:, -1])

        try:
            tokens, log_p = autoregressive_sample(step, num_samples, self.length, temperature, top_k, top_p, generator)
        finally:
            self.train(was_training)
        return tokens, log_p

    @torch.no_grad()
    def sample_with_log_prob(
        self,
        num_samples: int,
        temperature: float = 1.0,
        top_k: int | None = None,
        top_p: float | None = None,
        batch_size: int = 1024,
        generator: torch.Generator | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Draw ``num_samples`` conformations (float64, physical units) and their exact log densities.

        Raises:
            ValueError: if ``num_samples < 1`` or on bad sampling settings (``temperature <= 0`` ...).
        """
        if num_samples < 1:
            raise ValueError(f"num_samples must be >= 1, got {num_samples}")
        check_sampling_args(temperature, top_k, top_p, self.num_bins)
        xs, lps = [], []
        for start in range(0, num_samples, batch_size):
            n = min(batch_size, num_samples - start)
            tokens, log_p = self.sample_tokens(n, temperature, top_k, top_p, generator)
            flat = self.tokenizer.decode(tokens.cpu(), generator=generator)
            xs.append(flat.reshape(n, self.n_atoms, self.dim))
            lps.append(log_p.double().cpu() + self.tokenizer.offset_log_density(flat).cpu())
        return torch.cat(xs), torch.cat(lps) - self.tokenizer.log_volume(self.length)

    def sample(
        self, num_samples: int, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
    ) -> Tensor:
        """Draw ``num_samples`` conformations ``(N, n_atoms, dim)`` (float64)."""
        return self.sample_with_log_prob(num_samples, temperature, top_k, top_p)[0]

    def in_range(self, x: Tensor) -> Tensor:
        """Boolean mask ``(N,)`` of conformations ``(N, n_atoms, dim)`` whose coordinates all lie in the binning range.

        The conformations are taken as given (centre them first, as the model's steps do); only these have a
        non-zero density under the model.

        Example:
            >>> m = ArBG(n_atoms=2, dim=1, num_bins=4, coord_range=(-1.0, 1.0), scale=1.0, hidden_size=8,
            ...          num_layers=1, num_heads=2)
            >>> m.in_range(torch.tensor([[[0.5], [-0.5]], [[1.5], [-1.5]]])).tolist()
            [True, False]
        """
        u = x.reshape(x.shape[0], -1).double() / float(self.tokenizer.scale)
        return ((u >= self.tokenizer.lo) & (u < self.tokenizer.hi) & torch.isfinite(u)).all(dim=1)

    @property
    def com_std(self) -> float:
        """Standard deviation of the centre of mass the model was trained with (physical units)."""
        return float(self.tokenizer.scale) / math.sqrt(self.n_atoms) if self.com_noise else 0.0

    def fit_dequantization(self, x: Tensor, generator: torch.Generator | None = None) -> None:
        """Fit the empirical within-bin offset histogram on training conformations ``x`` ``(N, n_atoms, dim)``.

        The conformations go through the training augmentation first (centring, rotation, centre-of-mass noise
        as configured), so the offsets are those of the sequences the model is trained on.

        Raises:
            ValueError: if the model uses ``dequantization="uniform"`` or ``x`` falls outside the binning range.

        Example:
            >>> m = ArBG(n_atoms=2, dim=1, num_bins=4, coord_range=(-3.0, 3.0), scale=1.0, hidden_size=8,
            ...          num_layers=1, num_heads=2, dequantization="empirical")
            >>> g = torch.Generator().manual_seed(0)
            >>> m.fit_dequantization(torch.randn(50, 2, 1, generator=g) * 0.5, generator=g)
            >>> int(m.tokenizer.offset_counts.sum())
            100
        """
        x = x.reshape(x.shape[0], self.n_atoms, self.dim).double()
        self.tokenizer.fit_offsets(augment(x, rotate=self.rotate, com_std=self.com_std, generator=generator))
        self._offsets_fitted = True

    # ------------------------------------------------------------------ Lightning hooks
    def setup(self, stage: str) -> None:
        """Fit ``scale`` (when not given) and the empirical offsets (when used) on the data module's positions."""
        if self._scale_fitted and self._offsets_fitted:
            return
        dm = getattr(self.trainer, "datamodule", None) if self._trainer is not None else None
        if dm is None or not hasattr(dm, "train_positions"):
            raise ValueError(
                "scale=None or dequantization='empirical' needs a data module with train_positions() "
                "(BoltzmannDataModule); pass scale=<float> and call fit_dequantization(x)"
            )
        if not self._scale_fitted:
            self.tokenizer.fit_scale(dm.train_positions())
            self._scale_fitted = True
        if not self._offsets_fitted:
            self.fit_dequantization(dm.train_positions())

    def _loss(self, batch: Any, train: bool) -> Tensor:
        x = batch[0] if isinstance(batch, (tuple, list)) else batch
        x = x.reshape(x.shape[0], self.n_atoms, self.dim).double()
        x = augment(x, rotate=self.rotate and train, com_std=self.com_std if train else 0.0)
        if self.out_of_range == "drop":
            x = x[self.in_range(x)]
            if x.shape[0] == 0:
                raise ValueError(
                    "every conformation of the batch lies outside the binning range "
                    f"coord_range=({self.tokenizer.lo}, {self.tokenizer.hi}); widen coord_range"
                )
        tokens = self.tokenizer.encode(x).to(self.device)
        logits = self.logits(tokens)
        return nn.functional.cross_entropy(
            logits.reshape(-1, self.num_bins), tokens.reshape(-1), label_smoothing=self.label_smoothing
        )

    def training_step(self, batch: Any, batch_idx: int) -> Tensor:
        """Mean token cross-entropy on an augmented batch."""
        loss = self._loss(batch, train=True)
        self.log(
            "train_loss", loss, prog_bar=True, batch_size=len(batch[0]) if isinstance(batch, (list, tuple)) else None
        )
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> Tensor:
        """Token cross-entropy on centred validation conformations."""
        loss = self._loss(batch, train=False)
        self.log("val_nll", loss, prog_bar=True)
        return loss

    def test_step(self, batch: Any, batch_idx: int) -> Tensor:
        """Token cross-entropy on centred test conformations."""
        loss = self._loss(batch, train=False)
        self.log("test_nll", loss)
        return loss

    def configure_optimizers(self) -> Any:
        """AdamW (or the given factory) and an optional per-epoch scheduler."""
        if self.optimizer_factory is None:
            optimizer: torch.optim.Optimizer = torch.optim.AdamW(self.parameters(), lr=5e-4, weight_decay=0.01)
        else:
            optimizer = self.optimizer_factory(self.parameters())
        if self.scheduler_factory is None:
            return optimizer
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": self.scheduler_factory(optimizer)}}
