"""Skip markers for tests that need CUDA, Triton or an optional package."""

from __future__ import annotations

import importlib.util

import pytest
import torch

__all__ = ["requires_cuda", "requires_module", "requires_triton"]

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def requires_module(name: str) -> pytest.MarkDecorator:
    """Skip unless ``name`` is importable (for optional heavy dependencies)."""
    return pytest.mark.skipif(importlib.util.find_spec(name) is None, reason=f"needs the optional package {name}")


requires_triton = requires_module("triton")
