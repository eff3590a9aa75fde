"""A small patch VQ tokenizer: images -> a grid of discrete tokens for :class:`TokenWorldModel`."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["VQTokenizer"]


class VQTokenizer(nn.Module):
    """Vector-quantised patch tokenizer (VQ-VAE style, straight-through estimator).

    Each non-overlapping ``patch x patch`` patch of a ``(C, H, W)`` image is encoded by a linear map to
    ``dim`` features and replaced by its nearest codebook vector (squared Euclidean distance); a linear
    decoder maps codes back to patches. The loss is reconstruction MSE plus the codebook and commitment
    terms of van den Oord et al. (2017). (The TWM base model of the ITC paper uses a nearest-neighbour
    tokenizer instead; this learned VQ is the project's optional alternative for image observations.)

    Args:
        channels: image channels.
        patch: patch side; image sides must be multiples of it.
        codebook_size: number of codes (the world model's vocabulary).
        dim: code dimension.
        beta: commitment weight.

    Example:
        >>> vq = VQTokenizer(channels=3, patch=2, codebook_size=8, dim=4)
        >>> tokens = vq.encode(torch.rand(5, 3, 4, 6))
        >>> tokens.shape, vq.decode(tokens).shape
        (torch.Size([5, 2, 3]), torch.Size([5, 3, 4, 6]))
    """

    def __init__(self, channels: int = 3, patch: int = 4, codebook_size: int = 64, dim: int = 16, beta: float = 0.25):
        super().__init__()
        for name, value in (("channels", channels), ("patch", patch), ("codebook_size", codebook_size), ("dim", dim)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        self.channels, self.patch, self.codebook_size, self.beta = channels, patch, codebook_size, beta
        features = channels * patch * patch
        self.encoder = nn.Sequential(nn.Linear(features, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.decoder = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, features))
        self.codebook = nn.Embedding(codebook_size, dim)
        nn.init.uniform_(self.codebook.weight, -1.0 / codebook_size, 1.0 / codebook_size)

    def _patches(self, images: torch.Tensor) -> torch.Tensor:
        if images.dim() != 4 or images.shape[1] != self.channels:
            raise ValueError(f"images must have shape (N, {self.channels}, H, W), got {tuple(images.shape)}")
        n, c, h, w = images.shape
        p = self.patch
        if h % p or w % p:
            raise ValueError(f"image sides must be multiples of patch={p}, got {(h, w)}")
        x = images.reshape(n, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5)
        return x.reshape(n, h // p, w // p, c * p * p)

    def _quantise(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        flat = z.reshape(-1, z.shape[-1])
        dist = (
            flat.pow(2).sum(-1, keepdim=True) - 2 * flat @ self.codebook.weight.T + self.codebook.weight.pow(2).sum(-1)
        )
        tokens = dist.argmin(-1).reshape(z.shape[:-1])
        return tokens, self.codebook(tokens)

    def encode(self, images: torch.Tensor) -> torch.Tensor:
        """``(N, C, H, W)`` images -> ``(N, H / patch, W / patch)`` int64 tokens."""
        return self._quantise(self.encoder(self._patches(images)))[0]

    def decode(self, tokens: torch.Tensor) -> torch.Tensor:
        """``(N, h, w)`` tokens -> ``(N, C, h * patch, w * patch)`` images."""
        n, h, w = tokens.shape
        p, c = self.patch, self.channels
        x = self.decoder(self.codebook(tokens)).reshape(n, h, w, c, p, p).permute(0, 3, 1, 4, 2, 5)
        return x.reshape(n, c, h * p, w * p)

    def loss(self, images: torch.Tensor) -> torch.Tensor:
        """Reconstruction + codebook + commitment loss on a batch of images (scalar)."""
        z = self.encoder(self._patches(images))
        _, codes = self._quantise(z)
        quantised = z + (codes - z).detach()  # straight-through
        n, h, w, _ = z.shape
        p, c = self.patch, self.channels
        recon = self.decoder(quantised).reshape(n, h, w, c, p, p).permute(0, 3, 1, 4, 2, 5).reshape(images.shape)
        return F.mse_loss(recon, images) + F.mse_loss(codes, z.detach()) + self.beta * F.mse_loss(z, codes.detach())
