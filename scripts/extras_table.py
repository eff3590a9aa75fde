"""Write the extras table of README.md and docs/development.md from pyproject.toml (the single source).

Usage::

    python scripts/extras_table.py            # rewrite the table between the extras markers of both files
    python scripts/extras_table.py --check    # exit 1 when either file's table differs from pyproject.toml
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from generated_files import write_or_check

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the `tomli` backport (in the `docs` extra)
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
FILES = (REPO / "README.md", REPO / "docs" / "development.md")
BEGIN, END = "<!-- extras:begin -->", "<!-- extras:end -->"
SELF = "lightning-icml26"


def _name(requirement: str) -> str:
    """`gymnasium[classic-control]>=1.0` -> `gymnasium[classic-control]`."""
    return re.split(r"[<>=!~;\s]", requirement.strip(), maxsplit=1)[0]


def extras() -> dict[str, list[str]]:
    """pyproject.toml's optional dependencies, in file order."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return dict(project["optional-dependencies"])


def _included(reqs: list[str]) -> list[str]:
    """The extras a composite extra pulls in through `lightning-icml26[...]`."""
    out: list[str] = []
    for req in reqs:
        dist = _name(req)
        if dist.startswith(f"{SELF}["):
            out += [e.strip() for e in dist[len(SELF) + 1 : -1].split(",")]
    return out


def describe(reqs: list[str], simple: list[str]) -> str:
    """One table cell: the packages an extra installs; a composite one names the extras it leaves out."""
    packages = [_name(r) for r in reqs if not _name(r).startswith(f"{SELF}[")]
    included = _included(reqs)
    if not included:
        return ", ".join(packages)
    unknown = [e for e in included if e not in simple]
    if unknown:
        raise ValueError(f"pyproject.toml: an extra includes {unknown}, which are not plain extras")
    missing = [e for e in simple if e not in included]
    head = "every extra but " + ", ".join(f"`{e}`" for e in missing) if missing else "every extra"
    return "; ".join([head, ", ".join(packages)] if packages else [head])


def table() -> str:
    """The Markdown table of every extra."""
    all_extras = extras()
    simple = [name for name, reqs in all_extras.items() if not _included(reqs)]
    rows = ["| Extra | Installs |", "|---|---|"]
    rows += [f"| `{name}` | {describe(reqs, simple)} |" for name, reqs in all_extras.items()]
    return "\n".join(rows)


def rewrite(text: str, path: Path) -> str:
    """The file's text with the table between the markers replaced."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{path.name}: the extras table must sit between {BEGIN!r} and {END!r}")
    return text[: start + len(BEGIN)] + "\n" + table() + "\n" + text[end:]


def tables() -> dict[Path, str]:
    """The new text of each file that holds an extras table."""
    return {path: rewrite(path.read_text(encoding="utf-8"), path) for path in FILES}


def main(argv: list[str] | None = None) -> int:
    """Write (or with --check, compare) the extras tables."""
    return write_or_check(__doc__.split("\n", 1)[0], "scripts/extras_table.py", tables, argv)


if __name__ == "__main__":
    sys.exit(main())
