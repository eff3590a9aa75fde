"""LightningDataModules and loaders for the data the recipes use (generated or shipped in packages)."""

from __future__ import annotations

from lightning_icml26.data.spirals import SpiralsDataModule, make_spirals

__all__ = ["SpiralsDataModule", "make_spirals"]
