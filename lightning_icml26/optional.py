"""Optional dependencies: check for one, or import it with an install hint naming the extra that provides it.

The public face of the helpers every piece of the package uses for its heavy optional packages (``transformers``,
``triton``, ``openmm``, ``gymnasium``, ...), for scripts and benchmarks built on the package.

Example:
    >>> from lightning_icml26.optional import is_available, require
    >>> is_available("math"), require("math", extra="none").sqrt(4.0)
    (True, 2.0)
"""

from __future__ import annotations

from lightning_icml26._optional import is_available, require, require_pyplot

__all__ = ["is_available", "require", "require_pyplot"]
