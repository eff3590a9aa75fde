"""README.md: under 15,000 characters, short table cells, links that resolve inside the repository, and extras
tables (README.md, docs/development.md) that agree with pyproject.toml."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.docs._blocks import REPO, markdown_files

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the `tomli` backport (in the `docs` extra)
    import tomli as tomllib

README = REPO / "README.md"
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
CELL_LIMIT = 100


def _text(path=README) -> str:
    return path.read_text(encoding="utf-8")


def test_readme_is_short() -> None:
    assert len(_text()) < 15_000


def test_every_table_cell_is_short() -> None:
    long = []
    for line in _text().split("\n"):
        if line.startswith("|") and not set(line) <= set("|-: "):
            long += [c.strip() for c in line.strip().strip("|").split("|") if len(c.strip()) > CELL_LIMIT]
    assert not long, long


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_links_resolve_inside_the_repository(path) -> None:
    # Web addresses (a paper, a library's documentation) are fine; a relative link must name a file of the
    # repository, never a path beside it (no `../shared/...`).
    for target in LINK.findall(_text(path)):
        if target.startswith(("https://", "http://", "mailto:")):
            continue
        file = target.split("#")[0]
        if not file:
            continue
        resolved = (path.parent / file).resolve()
        assert resolved.is_relative_to(REPO), f"{path.name}: {target} leaves the repository"
        assert resolved.exists(), f"{path.name}: {target} does not exist"


def test_readme_names_no_path_outside_the_repository() -> None:
    text = _text()
    assert "../" not in text
    assert "shared/" not in text


def test_readme_import_paths_import() -> None:
    readme = _text()
    table = readme.split("<!-- methods-table:begin -->")[1].split("<!-- methods-table:end -->")[0]
    paths = sorted(set(re.findall(r"`(lightning_icml26(?:\.\w+)*)`", table)))
    assert paths
    code = f"import importlib\nfor p in {paths!r}:\n    importlib.import_module(p)\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_extras_tables_match_pyproject() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "extras_table.py"), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    # Independently of the script: every extra of pyproject.toml has exactly one row in each table.
    extras = tomllib.loads(_text(REPO / "pyproject.toml"))["project"]["optional-dependencies"]
    for path in (README, REPO / "docs" / "development.md"):
        rows = re.findall(r"^\| `([\w-]+)` \|", _text(path).split("<!-- extras:begin -->")[1].split("<!--")[0], re.M)
        assert sorted(rows) == sorted(extras), path.name
