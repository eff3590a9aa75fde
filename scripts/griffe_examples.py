"""A griffe extension for the documentation site: read a Google-style ``Example:`` section as ``Examples:``.

The package's docstrings head their doctests ``Example:`` (singular). griffe's Google parser knows only the plural as
an examples section and renders the singular as an admonition of raw Markdown, where ``>>>`` lines and their output
(``[1.0, 0.5]``, ``x["key"]``) are read as text and links. With this extension they render as code.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_SINGULAR = re.compile(r"^(\s*)Example:[ \t]*$", re.M)


class ExampleSections(griffe.Extension):
    """Rename ``Example:`` section headers to ``Examples:`` in every loaded docstring."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite the docstring of each object as it is loaded."""
        if obj.docstring is not None:
            obj.docstring.value = _SINGULAR.sub(r"\1Examples:", obj.docstring.value)
