"""Every benchmark results file the documentation names is in benchmarks/results/.

benchmarks/results/ keeps one canonical JSON per benchmark plus the variants listed in its MANIFEST.toml; the
per-seed and earlier files stay in git history. The rule, applied to README.md, benchmarks/README.md and
docs/**/*.md (docs/results.md included, which scripts/build_results.py writes):

1. A path ``benchmarks/results/<name>`` (any extension, ``*`` allowed as a glob) names a file that exists there
   (a glob: at least one file). Exception: a path written as a git object, ``<commit>:benchmarks/results/<name>``
   (how docs/results.md shows a command's input that is no longer in the tree), which must exist in that commit.
2. A bare ``<name>.json`` token (no directory before it) is read as a results file too, so it must exist in
   benchmarks/results/, except the run-output names in ``RUN_OUTPUTS`` (files a run writes into its run folder)
   and ``NOT_YET_HERE`` below.
3. A ``.json`` path under any other directory (``outputs/x.json``, ``/tmp/dir/x.json``, ``run_dir/x.json``) is
   where a command the reader runs writes its output, not a results file: not checked.

``PENDING_GPU`` lists the files the GPU scripts named in MANIFEST.toml write into benchmarks/results/ once run
on a GPU; pages cite them as "not run yet". Each must be named in the source of one of those scripts.
"""

from __future__ import annotations

import re
import subprocess
import sys

from tests.docs._blocks import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the `tomli` backport (in the `docs` extra)
    import tomli as tomllib

RESULTS = REPO / "benchmarks" / "results"
PAGES = sorted(
    [REPO / "README.md", REPO / "benchmarks" / "README.md", *(REPO / "docs").rglob("*.md")],
    key=lambda p: p.as_posix(),
)

# Names a run writes into its own run folder (see docs/cluster.md and the method pages), not benchmark records.
RUN_OUTPUTS = {
    "summary.json",  # every `icml26 run` folder: status, metrics, checkpoint
    "isa_edit.json",  # the `isa_edit_toy` recipe's run folder (docs/isa.md)
}
# Cited before the branch that adds it is merged (docs/irt-judge.md says it does not exist yet).
NOT_YET_HERE = {"irt_judge.json"}
# Written by a GPU script of MANIFEST.toml when it runs on a GPU; the pages say "not run yet".
PENDING_GPU = {"isa_latency_cuda.json", "itc_minatar_cuda.json", "upipe_memory_cuda.json"}

# `benchmarks/results/<name>`, optionally preceded by `<commit>:` (a git object path).
RESULTS_PATH = re.compile(r"(?<![\w/.-])(?:(?P<commit>[0-9a-f]{7,40}):)?benchmarks/results/(?P<name>[\w.*-]*\w)")
# A bare `<name>.json`: not preceded by a path character, so `outputs/x.json` and `dir/x.json` do not match.
BARE_JSON = re.compile(r"(?<![\w/.*:{},<>-])(?P<name>[\w*][\w.*-]*\.json)\b")


def _citations() -> list[tuple[str, int, str | None, str, bool]]:
    """(page, line, commit or None, name, is_path) for every citation on the pages."""
    out = []
    for page in PAGES:
        rel = page.relative_to(REPO).as_posix()
        for lineno, line in enumerate(page.read_text(encoding="utf-8").split("\n"), start=1):
            spans = []
            for m in RESULTS_PATH.finditer(line):
                out.append((rel, lineno, m.group("commit"), m.group("name"), True))
                spans.append(m.span())
            for m in BARE_JSON.finditer(line):
                if not any(a <= m.start() < b for a, b in spans):
                    out.append((rel, lineno, None, m.group("name"), False))
    return out


def _exists(name: str) -> bool:
    return any(RESULTS.glob(name)) if "*" in name else (RESULTS / name).is_file()


def _in_commit(commit: str, name: str) -> bool:
    proc = subprocess.run(
        ["git", "-C", str(REPO), "cat-file", "-e", f"{commit}:benchmarks/results/{name}"],
        capture_output=True,
        check=False,
    )
    return proc.returncode == 0


CITATIONS = _citations()


def test_the_pages_cite_results_files() -> None:
    # The scan finds what it is meant to find: the canonical files the pages quote, in both forms.
    names = {c[3] for c in CITATIONS}
    assert {"arm_kv_budget_1_8_3000steps_usage32_cost1.5_6seeds.json", "g_substrate_2400steps_5seeds.json"} <= names
    assert any(c[4] for c in CITATIONS)
    assert any(not c[4] for c in CITATIONS)


def test_every_cited_results_file_exists() -> None:
    missing = []
    for page, line, commit, name, is_path in CITATIONS:
        if commit is not None:
            continue  # a git object path: checked below
        if not is_path and name in RUN_OUTPUTS:
            continue
        if name in NOT_YET_HERE or name in PENDING_GPU:
            continue
        if not _exists(name):
            missing.append(f"{page}:{line}: {name}")
    assert not missing, "cited but not in benchmarks/results/ (restore it and list it in MANIFEST.toml, or cite "
    "the kept file):\n" + "\n".join(missing)


def test_every_history_citation_is_in_its_commit() -> None:
    # Outside a git checkout (an sdist) the commits cannot be read; the existence check above still holds.
    history = [c for c in CITATIONS if c[2] is not None]
    assert history, "docs/results.md shows the pooled commands' inputs as git object paths"
    if (REPO / ".git").exists():
        absent = [f"{p}:{n}: {commit}:{name}" for p, n, commit, name, _ in history if not _in_commit(commit, name)]
        assert not absent, absent


def test_the_exceptions_are_what_they_claim() -> None:
    # A run-output name must not shadow a real results file, and an exception that is no longer cited goes.
    cited = {c[3] for c in CITATIONS}
    for name in RUN_OUTPUTS | PENDING_GPU:
        assert not (RESULTS / name).exists(), f"{name} is in benchmarks/results/: drop it from the exceptions"
        assert name in cited, f"{name} is no longer cited: drop it from the exceptions"
    manifest = tomllib.loads((RESULTS / "MANIFEST.toml").read_text(encoding="utf-8"))
    scripts = [
        (REPO / meta["gpu_script"]).read_text(encoding="utf-8")
        for meta in manifest["methods"].values()
        if "gpu_script" in meta
    ]
    for name in PENDING_GPU:
        assert any(name in text for text in scripts), f"{name}: no GPU script of MANIFEST.toml writes it"
