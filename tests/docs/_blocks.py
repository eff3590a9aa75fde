"""Find the fenced code blocks of the repository's Markdown files (README.md and docs/**/*.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NOT_RUN = "# not run here:"
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)$")


@dataclass(frozen=True)
class Block:
    """One fenced block: the file it is in (relative to the repository), its first line number, language, code."""

    path: str
    line: int
    language: str
    code: str

    @property
    def test_id(self) -> str:
        """``docs/isa.md:L42``."""
        return f"{self.path}:L{self.line}"

    @property
    def not_run_reason(self) -> str | None:
        """The reason after ``# not run here:`` when the block's first line says so, else None."""
        first = self.code.lstrip("\n").split("\n", 1)[0].strip()
        if first.lower().startswith(NOT_RUN):
            return first[len(NOT_RUN) :].strip()
        return None


def markdown_files() -> list[Path]:
    """README.md and every Markdown file under docs/, sorted."""
    files = [REPO / "README.md"]
    files += sorted((REPO / "docs").rglob("*.md"))
    return [f for f in files if f.is_file()]


def blocks(path: Path) -> list[Block]:
    """Every fenced block of one Markdown file (nested fences of another length stay inside)."""
    out: list[Block] = []
    lines = path.read_text(encoding="utf-8").split("\n")
    rel = path.relative_to(REPO).as_posix()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, indent = m["fence"], len(m["indent"])
        language = m["info"].strip().split(" ")[0].lower() if m["info"].strip() else ""
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines):
            close = lines[i].strip()
            if close.startswith(fence[0] * len(fence)) and set(close) == {fence[0]}:
                break
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        out.append(Block(rel, start + 1, language, "\n".join(body) + "\n"))
        i += 1
    return out


def python_blocks() -> list[Block]:
    """The ```python blocks of README.md and docs/**/*.md, in file order."""
    return [b for f in markdown_files() for b in blocks(f) if b.language in {"python", "py"}]
