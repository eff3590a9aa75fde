"""lightning-icml26: ICML 2026 methods as PyTorch Lightning plugins.

Importing the package registers the project's strategies with Lightning's ``StrategyRegistry``
(idempotently) and imports no heavy optional dependency: ``transformers``, ``triton``, ``openmm``,
``gymnasium`` and the like load only when the piece that needs them is used.

Example:
    >>> import lightning_icml26
    >>> isinstance(lightning_icml26.__version__, str)
    True
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from lightning_icml26 import strategies as strategies  # registers strategies on import

try:
    __version__ = version("lightning-icml26")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"

__all__ = ["__version__", "strategies"]
