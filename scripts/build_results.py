"""Write docs/results.md and README.md's status column from benchmarks/results/ (the JSON and MANIFEST.toml only).

Usage::

    python scripts/build_results.py            # rewrite docs/results.md and the README's status cells
    python scripts/build_results.py --check    # exit 1 (and name the file) when either is out of date

Nothing here is typed by hand: every value, goal, verdict, command and date comes from a JSON record
(``figures.targets``: ``{name: {"value": x, "target": "<= 0.35", "met": bool}}``); what a record does not
say is printed as "not recorded". A method's status is computed from its canonical files (MANIFEST.toml):

- ``claim shown``: every measured target met;
- ``partly shown``: some measured targets met, some missed;
- ``claim missed``: no measured target met;
- ``not measured``: no canonical JSON, or no target with a value;
- ``GPU run pending`` is added when the method has a GPU script and none of its canonical files was measured
  with CUDA.
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generated_files import write_or_check

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the `tomli` backport (in the `docs` extra)
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
MANIFEST = RESULTS / "MANIFEST.toml"
RESULTS_MD = REPO / "docs" / "results.md"
README = REPO / "README.md"
BEGIN, END = "<!-- methods-table:begin -->", "<!-- methods-table:end -->"
PERF_BEGIN, PERF_END = "<!-- performance:begin -->", "<!-- performance:end -->"
OVERHEAD = "overhead.json"  # the [[other]] record whose targets make README.md's performance line
VERDICTS = ("claim shown", "partly shown", "claim missed", "not measured")
GPU_PENDING = "GPU run pending"
ROLES = ("canonical", "diagnostic", "variant")
CLAIMS = {"paper": "paper (in miniature)", "ours": "ours"}
UNKNOWN = "not recorded"
# The commit whose tree still holds the per-seed and earlier files that benchmarks/results/ was cut down from: a
# command's input that is no longer in the tree is printed as `HISTORY:benchmarks/results/<name>` (a `git show`
# path), so docs/results.md never names a results file that is not there.
HISTORY = "e54e68d"


@dataclass
class Target:
    """One target of a record."""

    name: str
    value: float | None
    goal: str
    met: bool
    claim: str

    @property
    def measured(self) -> bool:
        """Whether the record holds a finite value for it."""
        return self.value is not None and math.isfinite(self.value)


@dataclass
class Record:
    """One file of benchmarks/results/ with its manifest entry."""

    name: str
    method: str
    role: str
    claim: str
    why: str
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def is_json(self) -> bool:
        """Whether the file is a JSON record (the manifest may list a Markdown table too)."""
        return self.name.endswith(".json")

    @property
    def command(self) -> str:
        """The command that wrote it, as recorded; a script path is shown as the ``python -m`` call that ran it.

        ``python -m benchmarks.NAME`` records ``sys.argv[0]`` as ``benchmarks/NAME.py``, which cannot be run as a
        path (the scripts import ``benchmarks._common``).
        """
        cmd = self.data.get("command")
        if not cmd:
            return UNKNOWN
        if cmd.startswith("python"):
            return cmd
        script, _, rest = cmd.partition(" ")
        if script.startswith("benchmarks/") and script.endswith(".py"):
            module = script.removesuffix(".py").replace("/", ".")
            return f"python -m {module} {rest}".rstrip()
        return f"python {cmd}"

    @property
    def date(self) -> str:
        """When it was written, as recorded."""
        return str(self.data.get("time") or UNKNOWN)

    @property
    def cuda(self) -> bool:
        """Whether the record says it was measured with CUDA."""
        machine = self.data.get("machine") or {}
        text = json.dumps(machine).lower()
        return "cuda" in text or "nvidia" in text or ("torch" in machine and "+cpu" not in str(machine["torch"]))

    def targets(self) -> list[Target]:
        """The record's targets in file order, each with whose claim it tests."""
        raw = (self.data.get("figures") or {}).get("targets") or {}
        out = []
        for name, t in raw.items():
            value = t.get("value")
            value = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
            claim = t.get("claim") or (
                "paper" if name.startswith("paper_") else "ours" if name.startswith("diag_") else self.claim
            )
            out.append(Target(name, value, str(t.get("target", UNKNOWN)), bool(t.get("met")), claim))
        return out


def load_manifest() -> tuple[dict[str, dict[str, str]], list[Record]]:
    """The manifest's methods and its files (with their JSON loaded), checked for consistency.

    Files under `[[other]]` (records of no one method) come back with method and role ``"other"``.
    """
    manifest = tomllib.loads(MANIFEST.read_text(encoding="utf-8"))
    methods: dict[str, dict[str, str]] = manifest["methods"]
    records = []
    for entry in manifest.get("other", []):
        rec = Record(entry["name"], "other", "other", "ours", entry.get("why", ""))
        path = RESULTS / rec.name
        if not path.is_file():
            raise ValueError(f"MANIFEST.toml lists {rec.name!r}, which is not in benchmarks/results/")
        if rec.is_json:
            rec.data = json.loads(path.read_text(encoding="utf-8"), parse_constant=lambda c: float(c))
        records.append(rec)
    for entry in manifest["file"]:
        rec = Record(entry["name"], entry["method"], entry["role"], entry.get("claim", ""), entry.get("why", ""))
        if rec.method not in methods:
            raise ValueError(f"MANIFEST.toml: file {rec.name!r} names method {rec.method!r}, not in [methods]")
        if rec.role not in ROLES:
            raise ValueError(f"MANIFEST.toml: file {rec.name!r} has role {rec.role!r}; allowed: {ROLES}")
        if rec.claim not in CLAIMS:
            raise ValueError(f"MANIFEST.toml: file {rec.name!r} has claim {rec.claim!r}; allowed: {tuple(CLAIMS)}")
        path = RESULTS / rec.name
        if not path.is_file():
            raise ValueError(f"MANIFEST.toml lists {rec.name!r}, which is not in benchmarks/results/")
        if rec.is_json:
            rec.data = json.loads(path.read_text(encoding="utf-8"), parse_constant=lambda c: float(c))
        records.append(rec)
    return methods, records


def unlisted_files(records: list[Record]) -> list[str]:
    """Files in benchmarks/results/ that the manifest does not list."""
    listed = {r.name for r in records} | {MANIFEST.name}
    return sorted(p.name for p in RESULTS.iterdir() if p.is_file() and p.name not in listed)


def status(method: str, methods: dict[str, dict[str, str]], records: list[Record]) -> tuple[str, str]:
    """(verdict, detail) of one method from its canonical records."""
    canonical = [r for r in records if r.method == method and r.role == "canonical" and r.is_json]
    targets = [t for r in canonical for t in r.targets()]
    measured = [t for t in targets if t.measured]
    met = sum(t.met for t in measured)
    if not measured:
        verdict = "not measured"
    elif met == len(measured):
        verdict = "claim shown"
    elif met:
        verdict = "partly shown"
    else:
        verdict = "claim missed"
    detail = f"{met}/{len(measured)} targets met" if measured else "no canonical JSON"
    if len(targets) > len(measured):
        detail += f", {len(targets) - len(measured)} without a value"
    if methods[method].get("gpu_script") and not any(r.cuda for r in canonical):
        detail += f"; {GPU_PENDING}"
    return verdict, detail


def _short(detail: str) -> str:
    """The README's form of a status detail: `(3/6 met, 1 no value) · GPU run pending`."""
    counts, _, rest = detail.partition("; ")
    counts = counts.replace(" targets met", " met").replace(" without a value", " no value")
    return f"({counts})" + (f" · {rest}" if rest else "")


def _fmt(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "no value"
    if value == 0 or 1e-3 <= abs(value) < 1e5:
        return f"{value:.4g}"
    return f"{value:.3e}"


def _in_tree_or_history(command: str) -> str:
    """The command with every `benchmarks/results/<name>` that is not in the tree prefixed by `HISTORY:`."""

    def sub(m: re.Match[str]) -> str:
        return m.group(0) if (RESULTS / m.group(1)).is_file() else f"{HISTORY}:{m.group(0)}"

    return re.sub(r"(?<![\w:/.-])benchmarks/results/([\w.-]+)", sub, command)


def _code(text: str) -> str:
    return "`" + text.replace("`", "'") + "`"


def results_markdown(methods: dict[str, dict[str, str]], records: list[Record]) -> str:
    """The text of docs/results.md."""
    lines = [
        "# Results",
        "",
        "<!-- Generated by `python scripts/build_results.py` from benchmarks/results/; do not edit by hand. -->",
        "",
        "Every figure below is read from the JSON records in `benchmarks/results/` (listed, with their role, in",
        "`benchmarks/results/MANIFEST.toml`) by `python scripts/build_results.py`, which also writes the status",
        "column of the README's methods table; a test fails when this page or that column differs from what the",
        "script writes now.",
        "",
        f"A command's input that is no longer in the tree is shown as `{HISTORY}:benchmarks/results/<name>`: the",
        f"file as it stands in commit {HISTORY}, readable with `git show {HISTORY}:benchmarks/results/<name>`.",
        "",
        "A method's status comes from its **canonical** files only: `claim shown` (every measured target met),",
        "`partly shown` (some met), `claim missed` (none met), `not measured` (no canonical record, or no target",
        f"with a value); `{GPU_PENDING}` is added where the method has a GPU script and no canonical record was",
        "measured with CUDA. **Diagnostic** files hold a diagnostic script's figures and **variant** files a",
        "setting a method page cites; neither sets a status.",
        "",
        "Whose claim: *paper (in miniature)*: the target restates the paper's claim at this benchmark's size;",
        "*ours*: our own hypothesis or diagnosis. Values without a finite number are shown as *no value*.",
        "",
        "## Status",
        "",
        "| Method | Status | Detail | Canonical files |",
        "|---|---|---|---|",
    ]
    for slug, meta in methods.items():
        verdict, detail = status(slug, methods, records)
        files = ", ".join(_code(r.name) for r in records if r.method == slug and r.role == "canonical") or "none"
        lines.append(f"| [{meta['title']}]({slug}.md) | {verdict} | {detail} | {files} |")
    sections = [(meta["title"], [r for r in records if r.method == slug]) for slug, meta in methods.items()]
    other = [r for r in records if r.method == "other"]
    if other:
        sections.append(("Other records (of the package, no one method)", other))
    for title, recs in sections:
        lines += ["", f"## {title}", ""]
        if not recs:
            lines.append("No benchmark record in `benchmarks/results/`.")
            continue
        for rec in recs:
            lines += [f"### {rec.name}", ""]
            lines.append(f"- role: {rec.role}" + (f" ({rec.why})" if rec.why else ""))
            if not rec.is_json:
                lines += ["- a Markdown table, not a JSON record: no targets.", ""]
                continue
            lines.append(f"- command: {_code(_in_tree_or_history(rec.command))}")
            lines.append(f"- date: {rec.date}")
            torch = (rec.data.get("machine") or {}).get("torch")
            lines.append(f"- torch: {torch or UNKNOWN}")
            targets = rec.targets()
            if not targets:
                lines += ["- targets: none recorded (the record holds figures only).", ""]
                continue
            lines += ["", "| Target | Value | Goal | Met | Whose claim |", "|---|---|---|---|---|"]
            for t in targets:
                met = ("yes" if t.met else "no") if t.measured else "not measured"
                lines.append(f"| `{t.name}` | {_fmt(t.value)} | `{t.goal}` | {met} | {CLAIMS.get(t.claim, UNKNOWN)} |")
            lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def readme_with_status(readme: str, methods: dict[str, dict[str, str]], records: list[Record]) -> str:
    """README.md with the last cell of each methods-table row (between the markers) rewritten."""
    start, end = readme.find(BEGIN), readme.find(END)
    if start < 0 or end < start:
        raise ValueError(f"README.md: the methods table must sit between {BEGIN!r} and {END!r}")
    table = readme[start + len(BEGIN) : end]
    out = []
    seen = set()
    for line in table.split("\n"):
        m = re.search(r"\]\(docs/([\w-]+)\.md\)", line)
        if line.startswith("|") and m and m.group(1) in methods:
            slug = m.group(1)
            seen.add(slug)
            verdict, detail = status(slug, methods, records)
            cells = line.rstrip().rstrip("|").split("|")
            cell = f" {verdict} {_short(detail)} "
            line = "|".join([*cells[:-1], cell]) + "|"
        out.append(line)
    missing = set(methods) - seen
    if missing:
        raise ValueError(f"README.md: no methods-table row links docs/<method>.md for {sorted(missing)}")
    return readme[: start + len(BEGIN)] + "\n".join(out) + readme[end:]


def readme_with_performance(readme: str, records: list[Record]) -> str:
    """README.md with its performance line (between the performance markers) written from ``overhead.json``."""
    start, end = readme.find(PERF_BEGIN), readme.find(PERF_END)
    if start < 0 or end < start:
        raise ValueError(f"README.md: the performance line must sit between {PERF_BEGIN!r} and {PERF_END!r}")
    record = next((r for r in records if r.name == OVERHEAD), None)
    if record is None:
        raise ValueError(f"MANIFEST.toml lists no {OVERHEAD}, which README.md's performance line is made from")
    targets = record.targets()
    met = sum(t.met for t in targets)
    rows = "; ".join(f"`{t.name}` {_fmt(t.value)} (goal {t.goal})" for t in targets)
    line = (
        f"Cost of each piece against its plain alternative, as a ratio (`{OVERHEAD}`, {record.date}, "
        f"{met} of {len(targets)} targets met): {rows}."
    )
    return readme[: start + len(PERF_BEGIN)] + "\n" + line + "\n" + readme[end:]


def build() -> dict[Path, str]:
    """What the two generated files should hold now."""
    methods, records = load_manifest()
    extra = unlisted_files(records)
    if extra:
        raise ValueError(f"benchmarks/results/ holds files that MANIFEST.toml does not list: {extra}")
    return {
        RESULTS_MD: results_markdown(methods, records),
        README: readme_with_performance(
            readme_with_status(README.read_text(encoding="utf-8"), methods, records), records
        ),
    }


def main(argv: list[str] | None = None) -> int:
    """Write (or with --check, compare) docs/results.md and README.md's status column."""
    return write_or_check(__doc__.split("\n", 1)[0], "scripts/build_results.py", build, argv)


if __name__ == "__main__":
    sys.exit(main())
