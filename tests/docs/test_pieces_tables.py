"""Every method page's ``## Pieces`` table names imports that work.

Each method page (``docs/<method>.md``) has a ``## Pieces`` table whose rows carry a cell
`` `from lightning_icml26.<sub-package> import A, B` ``. The test parses every such cell and checks that each
listed name imports from the listed path, that the path is a public package (no module file, no private
``_name`` segment) and, where the package declares ``__all__``, that the name is in it.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
# Pages that are not method pages (they have no Pieces table).
NOT_METHOD_PAGES = {"index.md", "development.md", "results.md", "cluster.md", "api.md"}
IMPORT_RE = re.compile(r"`from (lightning_icml26(?:\.[A-Za-z_][A-Za-z0-9_]*)*) import ([A-Za-z0-9_, ]+)`")


def method_pages() -> list[Path]:
    """The method pages: every top-level ``docs/*.md`` that is not a general page."""
    return sorted(p for p in DOCS.glob("*.md") if p.name not in NOT_METHOD_PAGES)


def pieces_section(text: str) -> str:
    """The text of the ``## Pieces`` section (up to the next ``## `` heading), or ``""`` if absent."""
    match = re.search(r"^## Pieces\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    return match.group(1) if match else ""


def pieces_imports(text: str) -> list[tuple[str, str]]:
    """``(module, name)`` pairs named by the import cells of the Pieces table's rows."""
    pairs = []
    for line in pieces_section(text).splitlines():
        if not line.startswith("|"):
            continue
        for module, names in IMPORT_RE.findall(line):
            pairs.extend((module, name.strip()) for name in names.split(",") if name.strip())
    return pairs


def test_parser_reads_a_table() -> None:
    text = (
        "# X\n\n## Pieces\n\n| Piece | Import |\n|---|---|\n"
        "| a | `from lightning_icml26.metrics import A, B` |\n"
        "| b | `from lightning_icml26.ops import c` and `from lightning_icml26.optim import D` |\n\n"
        "## Next\n\n| `from lightning_icml26.data import Z` |\n"
    )
    assert pieces_imports(text) == [
        ("lightning_icml26.metrics", "A"),
        ("lightning_icml26.metrics", "B"),
        ("lightning_icml26.ops", "c"),
        ("lightning_icml26.optim", "D"),
    ]
    assert pieces_imports("# X\n\nno table\n") == []


def test_every_method_page_has_a_pieces_table() -> None:
    pages = method_pages()
    assert len(pages) >= 19, [p.name for p in pages]
    missing = [p.name for p in pages if not pieces_imports(p.read_text(encoding="utf-8"))]
    assert not missing, f"method pages without a Pieces table of imports: {missing}"


@pytest.mark.parametrize("page", method_pages(), ids=lambda p: p.stem)
def test_pieces_import(page: Path) -> None:
    failures = []
    for module_name, name in pieces_imports(page.read_text(encoding="utf-8")):
        if any(part.startswith("_") for part in module_name.split(".")):
            failures.append(f"{module_name}: a private path")
            continue
        try:
            module = importlib.import_module(module_name)
        except ImportError as err:
            failures.append(f"{module_name}: {err}")
            continue
        if Path(str(module.__file__)).name != "__init__.py":
            failures.append(f"{module_name}: a module file, not a public package")
        if not hasattr(module, name):
            failures.append(f"from {module_name} import {name}: no such name")
        elif hasattr(module, "__all__") and name not in module.__all__:
            failures.append(f"from {module_name} import {name}: not in {module_name}.__all__")
    assert not failures, "\n".join(failures)
