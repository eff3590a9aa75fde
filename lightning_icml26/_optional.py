"""Lazy imports of optional heavy dependencies with an install hint.

Heavy packages (``transformers``, ``triton``, ``openmm``, ``gymnasium``, ...) are never imported
when ``lightning_icml26`` is imported; the piece that needs one calls :func:`require` at use time.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

__all__ = ["is_available", "require", "require_pyplot"]


def is_available(module: str) -> bool:
    """Tell whether ``module`` can be imported, without importing it.

    Args:
        module: a dotted module name such as ``"transformers"``.

    Returns:
        ``True`` when the module is installed.

    Example:
        >>> is_available("torch")
        True
        >>> is_available("surely_not_an_installed_module")
        False
    """
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(module: str, extra: str, purpose: str | None = None) -> ModuleType:
    """Import an optional dependency, or fail with the command that installs it.

    Args:
        module: the module to import, e.g. ``"transformers"``.
        extra: the ``lightning-icml26`` extra that provides it, e.g. ``"hf"``.
        purpose: what the caller needs it for, quoted in the error message.

    Returns:
        The imported module.

    Raises:
        ImportError: if the module is missing; the message names the extra to install.

    Example:
        >>> require("math", extra="core").sqrt(4.0)
        2.0
        >>> require("surely_not_an_installed_module", extra="demo")
        Traceback (most recent call last):
        ...
        ImportError: ... pip install 'lightning-icml26[demo]' ...
    """
    try:
        return importlib.import_module(module)
    except ImportError as error:
        need = f" for {purpose}" if purpose else ""
        raise ImportError(
            f"the optional dependency '{module}' is needed{need} but is not installed; "
            f"install it with: pip install 'lightning-icml26[{extra}]' ({error})"
        ) from None  # the message carries the original; a chain would let "root cause" reports drop the hint


def require_pyplot() -> ModuleType:
    """Import ``matplotlib.pyplot`` on the non-interactive Agg backend, or say how to install it.

    Matplotlib is not a core dependency: the plotting callbacks and helpers need the ``plots`` extra.

    Returns:
        The ``matplotlib.pyplot`` module.

    Raises:
        ImportError: if matplotlib is missing; the message is ``pip install 'lightning-icml26[plots]'``.

    Example:
        >>> plt = require_pyplot()
        >>> plt.get_backend().lower()
        'agg'
    """
    matplotlib = require("matplotlib", extra="plots", purpose="plotting")
    matplotlib.use("Agg")
    return require("matplotlib.pyplot", extra="plots", purpose="plotting")
