"""The command line shared by the scripts that generate parts of the docs: write the files, or check them."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def write_or_check(
    description: str, script: str, build: Callable[[], Mapping[Path, str]], argv: list[str] | None
) -> int:
    """Write every generated file that differs from ``build()``; with ``--check`` only name them and return 1.

    Args:
        description: the script's one-line description (``--help``).
        script: the script's path from the repository root, named in the message of a failed check.
        build: returns the full new text of each generated file.
        argv: the command-line arguments (``None``: ``sys.argv[1:]``).

    Returns:
        The exit code: 0 when every file is written or already up to date, 1 when ``--check`` finds one stale.
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="exit 1 when a generated file is out of date")
    args = parser.parse_args(argv)
    stale = []
    for path, text in build().items():
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current == text:
            continue
        if args.check:
            stale.append(path.relative_to(REPO).as_posix())
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(REPO).as_posix()}")
    if stale:
        print(f"out of date: {', '.join(stale)}; run `python {script}`", file=sys.stderr)
        return 1
    return 0
