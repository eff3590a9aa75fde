"""Print how many documentation blocks ran and how many are marked not run."""

from __future__ import annotations

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    reports = [
        rep
        for key in ("passed", "failed")
        for rep in terminalreporter.stats.get(key, [])
        if getattr(rep, "when", "") == "call" and "test_doc_blocks.py::test_block_" in rep.nodeid
    ]
    if not reports:
        return
    ran = [r for r in reports if "::test_block_runs[" in r.nodeid]
    marked = [r for r in reports if "::test_block_marked_not_run[" in r.nodeid]
    failed = [r for r in ran if r.failed]
    terminalreporter.write_sep("-", "documentation blocks")
    terminalreporter.write_line(
        f"```python blocks: {len(ran)} run as scripts ({len(failed)} failed), {len(marked)} marked '# not run here:'"
    )
    for r in marked:
        terminalreporter.write_line(f"  not run: {r.nodeid.split('[', 1)[1].rstrip(']')}")
