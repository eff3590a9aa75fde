"""The rules every script under benchmarks/ keeps, checked on its syntax tree (nothing is run).

A benchmark is argument parsing, calls to the package's public API, a table and its JSON: it never edits
``sys.path`` (scripts run as ``python -m benchmarks.NAME``) and never imports a private name of ``lightning_icml26``.
The training-side rules (no ``nn.Module`` subclass, no ``.backward()``, no optimizer ``.step()``) are listed by
:func:`training_code`; scripts not yet ported to the recipes still break them (see the module's report).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").rglob("*.py") if p.name != "__init__.py")


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def sys_path_edits(tree: ast.Module) -> list[int]:
    """Lines that change ``sys.path`` (a call on it, an assignment to it, or ``site.addsitedir``)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name.startswith("sys.path.") or name == "site.addsitedir":
                lines.append(node.lineno)
        elif isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_dotted(t) == "sys.path" or _dotted(t).startswith("sys.path[") for t in targets):
                lines.append(node.lineno)
    return sorted(lines)


def private_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """``lightning_icml26`` imports that go through a private module or take a private name."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "lightning_icml26":
            if any(part.startswith("_") for part in node.module.split(".")):
                found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "lightning_icml26" and any(p.startswith("_") for p in parts):
                    found.append((node.lineno, alias.name))
    return found


def training_code(tree: ast.Module) -> list[tuple[int, str]]:
    """``nn.Module`` subclasses, ``.backward()`` calls and optimizer ``.step()`` calls (``opt``/``optim``...)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                if _dotted(base) in {"nn.Module", "torch.nn.Module", "Module", "LightningModule", "L.LightningModule"}:
                    found.append((node.lineno, f"class {node.name}({_dotted(base)})"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = _dotted(node.func.value).lower()
            if node.func.attr == "backward" or node.func.attr == "step" and any(k in owner for k in ("opt", "optim")):
                found.append((node.lineno, f"{_dotted(node.func)}()"))
    return found


def test_the_scan_finds_what_it_looks_for() -> None:
    planted = ast.parse(
        "import sys\nsys.path.insert(0, 'x')\nsys.path = []\n"
        "from lightning_icml26.tasks.fair_frontier import _fit\nfrom lightning_icml26.ops.attention import _kernels\n"
        "import lightning_icml26._optional\nfrom lightning_icml26.ops import soft_rank\n"
        "class M(nn.Module): pass\nloss.backward()\nopt.step()\nenv.step(0)\n"
    )
    assert sys_path_edits(planted) == [2, 3]
    assert [line for line, _ in private_imports(planted)] == [4, 5, 6]
    assert [text for _, text in training_code(planted)] == ["class M(nn.Module)", "loss.backward()", "opt.step()"]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_sys_path_edits(script: Path) -> None:
    assert sys_path_edits(_tree(script)) == [], f"{script.name} edits sys.path; run it as python -m benchmarks.NAME"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_imports_from_the_package(script: Path) -> None:
    assert private_imports(_tree(script)) == [], f"{script.name} imports private names of lightning_icml26"


def report() -> str:
    """The scripts that still train on their own, one line per place (``python -m tests.benchmarks....``)."""
    lines = []
    for script in SCRIPTS:
        for line, text in training_code(_tree(script)):
            lines.append(f"{script.relative_to(ROOT)}:{line}: {text}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report())
