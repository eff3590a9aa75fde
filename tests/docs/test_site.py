"""The documentation site builds with `mkdocs build --strict` (no broken link, no missing reference, no docstring
warning), offline, and its API reference covers every name of each public package's `__all__`."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys

import pytest

from tests.docs._blocks import REPO

pytest.importorskip("mkdocs", reason="the `docs` extra is not installed: pip install -e '.[docs]'")

SUBPACKAGES = (
    "strategies",
    "optim",
    "callbacks",
    "modules",
    "metrics",
    "metrics.functional",
    "ops",
    "data",
    "algorithms",
    "tasks",
    "acceptance",
    "llm",
    "distributed",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-5000:]
    return out


@pytest.mark.slow
def test_strict_build_passes(site) -> None:
    assert (site / "index.html").is_file()
    assert (site / "results.html").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("sub", SUBPACKAGES)
def test_api_reference_covers_all(site, sub: str) -> None:
    # Every name of the package's __all__ has a rendered entry (an anchor ending in the name) on its page or,
    # when another package documents it, a link to that page.
    module = f"lightning_icml26.{sub}"
    html = (site / "api" / f"{module}.html").read_text(encoding="utf-8")
    names = importlib.import_module(module).__all__
    missing = [n for n in names if not re.search(rf'(id|href)="[^"]*[.#]{re.escape(n)}"', html)]
    assert not missing, missing
