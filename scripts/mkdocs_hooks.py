"""MkDocs hooks: the site's navigation and its API reference, both derived from the tree at build time.

- The API reference has one page per public package of `lightning_icml26` (the sub-packages and their public
  sub-packages that define `__all__`); each page documents every name of that `__all__` with mkdocstrings. The
  names are read from the source (`ast`, no import), so a renamed or moved module changes the reference without
  an edit here.
- The navigation lists the hand-written pages of docs/ (home, results, development, then every other page) and
  the generated reference pages.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "lightning_icml26"
SUBPACKAGES = (
    "strategies",
    "optim",
    "callbacks",
    "modules",
    "metrics",
    "ops",
    "data",
    "algorithms",
    "tasks",
    "acceptance",
    "llm",
    "distributed",
)
FIRST_PAGES = ("index.md", "results.md", "development.md")


if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def dunder_all(init: Path) -> list[str] | None:
    """The literal `__all__` of a package's `__init__.py`, or None when it has none."""
    tree = ast.parse(init.read_text(encoding="utf-8"))
    for node in tree.body:
        if not isinstance(node, ast.Assign | ast.AnnAssign):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
            try:
                return [str(v) for v in ast.literal_eval(node.value)]
            except ValueError:  # built from other lists (`[*a, *b]`): ask the module itself
                module = ".".join(init.parent.relative_to(REPO).parts)
                return [str(v) for v in importlib.import_module(module).__all__]
    return None


def public_packages() -> dict[str, list[str]]:
    """Every public package under the listed sub-packages that defines `__all__`, with its names."""
    found: dict[str, list[str]] = {}
    # An object re-exported by several packages is documented once, on the page of the most specific package
    # that exports it; the other pages link to it.
    for sub in SUBPACKAGES:
        root = REPO / PACKAGE / sub
        for init in sorted(root.rglob("__init__.py")):
            rel = init.parent.relative_to(REPO)
            if any(part.startswith("_") for part in rel.parts):
                continue
            names = dunder_all(init)
            if names:
                found[".".join(rel.parts)] = names
    return found


def identifier(module: str, name: str) -> str:
    """What mkdocstrings should collect for `module.name`.

    A class or function is documented where it is defined (`obj.__module__`), which also covers names a package
    provides lazily through a module `__getattr__` (invisible to static analysis); anything else through the
    package's own name.
    """
    obj = getattr(importlib.import_module(module), name)
    if (inspect.isclass(obj) or inspect.isfunction(obj)) and obj.__module__.startswith(PACKAGE + "."):
        return f"{obj.__module__}.{obj.__qualname__}"
    return f"{module}.{name}"


def primary_pages(packages: dict[str, list[str]]) -> dict[str, str]:
    """Identifier -> the package whose page documents it (the deepest package exporting it)."""
    primary: dict[str, str] = {}
    for module in sorted(packages, key=lambda m: (-m.count("."), m)):
        for name in packages[module]:
            primary.setdefault(identifier(module, name), module)
    return primary


def api_page(module: str, names: list[str], primary: dict[str, str]) -> str:
    """The Markdown of one reference page."""
    lines = [
        f"# `{module}`",
        "",
        f"::: {module}",
        "    options:",
        "      show_root_heading: false",
        "      members: false",
        "",
    ]
    elsewhere = []
    for name in names:
        ident = identifier(module, name)
        if primary[ident] == module:
            lines += [f"::: {ident}", ""]
        else:
            elsewhere.append(f"- [`{name}`][{ident}] (documented in `{primary[ident]}`)")
    if elsewhere:
        lines += ["## Also exported here", "", *elsewhere, ""]
    return "\n".join(lines)


def _title(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem


def on_config(config: Any) -> Any:
    """Build the navigation: the hand-written pages, then the API reference."""
    docs = Path(config["docs_dir"])
    pages = sorted(p.relative_to(docs).as_posix() for p in docs.rglob("*.md") if p.parts[len(docs.parts)] != "api")
    first = [p for p in FIRST_PAGES if p in pages]
    methods = [p for p in pages if p not in first]
    nav: list[Any] = [{_title(docs / p): p} for p in first]
    nav.append({"Methods and guides": [{_title(docs / p): p} for p in methods]})
    nav.append({"API reference": [{m: f"api/{m}.md"} for m in public_packages()]})
    config["nav"] = nav
    return config


def on_files(files: Files, config: Any) -> Files:
    """Add the generated reference pages."""
    packages = public_packages()
    primary = primary_pages(packages)
    for module, names in packages.items():
        files.append(File.generated(config, f"api/{module}.md", content=api_page(module, names, primary)))
    return files
