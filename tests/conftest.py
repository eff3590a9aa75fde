"""Test-wide settings: offline, headless, deterministic, few threads."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("MPLBACKEND", "Agg")

import pytest
import torch

# Without a GPU, Triton kernels (ISA's backend="triton") can only run under the interpreter, and TRITON_INTERPRET
# is read when triton.language is first imported: other imports (Lightning, torchmetrics) pull triton in during
# collection, so a test module setting it would be too late. Importing torch does not import triton.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

torch.set_num_threads(2)


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)
