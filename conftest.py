"""Repository-level pytest settings: doctest collection skips modules whose optional dependency is absent.

``--doctest-modules`` imports every module under ``lightning_icml26/``; a Triton kernel module has to import
triton at its top (``@triton.jit`` decorates module-level functions), so it is left out when the ``kernels``
extra is not installed. Its tests (``tests/ops/test_isa_triton.py``) skip on their own.
"""

from __future__ import annotations

from lightning_icml26._optional import is_available

collect_ignore = [] if is_available("triton") else ["lightning_icml26/ops/attention/isa_triton.py"]
