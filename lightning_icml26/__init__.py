"""lightning-icml26: ICML 2026 methods as PyTorch Lightning plugins.

``import lightning_icml26`` is light: it imports neither Lightning nor torch nor any heavy optional
dependency. Sub-packages (``lightning_icml26.callbacks``, ``.metrics``, ...) load on first use, through an
``import`` statement or an attribute access (PEP 562 module ``__getattr__``); this is what lets the
``icml26 list`` command answer without importing Lightning.

The project's strategies (``"upipe"``, ``"ulysses"``, ``"ring_attention"``) are still registered with
Lightning's ``StrategyRegistry`` whatever the import order, before any ``Trainer`` can resolve a strategy
name: if ``lightning.pytorch`` is already imported, importing this package registers them at once;
otherwise a one-shot import hook on ``sys.meta_path`` registers them right after ``lightning.pytorch``
finishes importing (it runs ``lightning.pytorch``'s own loader, then imports
``lightning_icml26.strategies``, and removes itself). Registration is idempotent.

Example:
    >>> import lightning_icml26
    >>> isinstance(lightning_icml26.__version__, str)
    True
    >>> from lightning.pytorch.strategies import StrategyRegistry
    >>> "upipe" in StrategyRegistry
    True
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType

try:
    __version__ = version("lightning-icml26")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"

__all__ = ["__version__", "strategies"]

_STRATEGIES = f"{__name__}.strategies"
_LIGHTNING = "lightning.pytorch"


def __getattr__(name: str) -> ModuleType:
    """Import a sub-module on first attribute access (``lightning_icml26.metrics``)."""
    if not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _RegisterStrategiesAfterLightning(importlib.abc.MetaPathFinder):
    """Import hook: once ``lightning.pytorch`` has executed, import (and so register) the strategies."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != _LIGHTNING:
            return None
        sys.meta_path.remove(self)  # one shot; the finders below resolve the real module
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            importlib.import_module(_STRATEGIES)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]  # this module's own loader
        return spec


def _register_strategies_when_lightning_loads() -> None:
    if _LIGHTNING in sys.modules:
        importlib.import_module(_STRATEGIES)
    elif not any(isinstance(finder, _RegisterStrategiesAfterLightning) for finder in sys.meta_path):
        sys.meta_path.insert(0, _RegisterStrategiesAfterLightning())


_register_strategies_when_lightning_loads()


def __dir__() -> list[str]:
    return sorted([*globals(), "strategies"])


from lightning_icml26 import _moved  # noqa: E402  (old module paths of moved modules, one release)

_moved.install()
