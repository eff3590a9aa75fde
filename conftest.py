"""Repository-level pytest settings for doctests.

- Doctest collection skips modules whose optional dependency is absent. ``--doctest-modules`` imports every
  module under ``lightning_icml26/``; a Triton kernel module has to import triton at its top (``@triton.jit``
  decorates module-level functions), so it is left out when the ``kernels`` extra is not installed. Its tests
  (``tests/ops/test_isa_triton.py``) skip on their own.
- Every doctest starts from the same seeded global RNGs (``random``, NumPy, torch), so an example that draws
  ``torch.randn`` without a generator gives the same result on every run instead of an occasional unlucky draw
  (one such doctest once failed in CI).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from _pytest.doctest import DoctestItem

from lightning_icml26._optional import is_available

collect_ignore = [] if is_available("triton") else ["lightning_icml26/ops/attention/isa/triton_kernels.py"]

DOCTEST_SEED = 0


@pytest.fixture(autouse=True)
def _seed_doctests(request: pytest.FixtureRequest) -> None:
    """Seed the global RNGs before each doctest; other tests are left as they are."""
    if isinstance(request.node, DoctestItem):
        random.seed(DOCTEST_SEED)
        np.random.seed(DOCTEST_SEED)
        torch.manual_seed(DOCTEST_SEED)
