"""docs/results.md and the README's status column are generated from benchmarks/results/ and kept in step."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

from tests.docs._blocks import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the `tomli` backport (in the `docs` extra)
    import tomli as tomllib

RESULTS = REPO / "benchmarks" / "results"
VOCABULARY = ("claim shown", "partly shown", "claim missed", "not measured")


def _manifest() -> dict:
    return tomllib.loads((RESULTS / "MANIFEST.toml").read_text(encoding="utf-8"))


def test_generated_files_are_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "build_results.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout


def test_every_results_file_is_in_the_manifest_and_back() -> None:
    manifest = _manifest()
    listed = {f["name"] for f in manifest["file"]} | {f["name"] for f in manifest.get("other", [])}
    present = {p.name for p in RESULTS.iterdir() if p.is_file()} - {"MANIFEST.toml"}
    assert present == listed, {"not listed": sorted(present - listed), "missing": sorted(listed - present)}


def test_one_canonical_set_per_method_and_roles_known() -> None:
    manifest = _manifest()
    for entry in manifest["file"]:
        assert entry["role"] in {"canonical", "diagnostic", "variant"}, entry
        assert entry["method"] in manifest["methods"], entry
        if entry["role"] == "variant":
            assert entry.get("why"), f"{entry['name']}: a variant says which page cites it and why"
    for slug, meta in manifest["methods"].items():
        assert (REPO / "docs" / f"{slug}.md").is_file(), slug
        if "gpu_script" in meta:
            assert (REPO / meta["gpu_script"]).is_file(), meta


def _readme_status_cells() -> dict[str, str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = readme.split("<!-- methods-table:begin -->")[1].split("<!-- methods-table:end -->")[0]
    cells = {}
    for line in table.strip().split("\n")[2:]:
        slug = re.search(r"\]\(docs/([\w-]+)\.md\)", line).group(1)
        cells[slug] = line.strip().strip("|").split("|")[-1].strip()
    return cells


def test_readme_status_counts_match_the_json() -> None:
    # Read the canonical JSON directly (not through the script) and compare with the README's cells.
    manifest = _manifest()
    cells = _readme_status_cells()
    assert set(cells) == set(manifest["methods"])
    for slug in manifest["methods"]:
        met = measured = 0
        for entry in manifest["file"]:
            if entry["method"] != slug or entry["role"] != "canonical":
                continue
            record = json.loads((RESULTS / entry["name"]).read_text(encoding="utf-8"))
            for target in record["figures"]["targets"].values():
                value = target["value"]
                if isinstance(value, (int, float)) and math.isfinite(value):
                    measured += 1
                    met += bool(target["met"])
        cell = cells[slug]
        assert cell.split(" (")[0] in VOCABULARY, cell
        if measured:
            assert f"({met}/{measured} met" in cell, (slug, cell)
            expected = "claim shown" if met == measured else "partly shown" if met else "claim missed"
            assert cell.startswith(expected), (slug, cell)
        else:
            assert cell.startswith("not measured"), (slug, cell)
