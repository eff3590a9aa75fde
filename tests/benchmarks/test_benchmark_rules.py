"""The rules every script under benchmarks/ keeps, checked on its syntax tree (nothing is run).

A benchmark is argument parsing, calls to the package's public API, a table and its JSON: it never edits
``sys.path`` (scripts run as ``python -m benchmarks.NAME``) and never imports a private name of ``lightning_icml26``.
Nor does it train on its own: no ``nn.Module``, ``LightningModule`` or ``Callback`` subclass, no ``.backward()``, no
optimizer ``.step()``, no ``.zero_grad()`` and no ``torch.autograd.grad`` (:func:`training_code`); training goes
through the recipes (``lightning_icml26.cli.run_recipe``) or the task runners. The whole folder stays under
:data:`LINE_BUDGET` lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").rglob("*.py") if p.name != "__init__.py")
LINE_BUDGET = 4_500
_TRAINING_BASES = {
    "nn.Module",
    "torch.nn.Module",
    "Module",
    "LightningModule",
    "L.LightningModule",
    "pl.LightningModule",
    "Callback",
    "L.Callback",
    "pl.Callback",
}


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
    """Module/callback subclasses, ``.backward()``, optimizer ``.step()``/``.zero_grad()`` and ``autograd.grad``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                if _dotted(base) in _TRAINING_BASES:
                    found.append((node.lineno, f"class {node.name}({_dotted(base)})"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = _dotted(node.func.value).lower()
            optimizer_call = node.func.attr in {"step", "zero_grad"} and any(k in owner for k in ("opt", "optim"))
            if node.func.attr == "backward" or optimizer_call or _dotted(node.func).endswith("autograd.grad"):
                found.append((node.lineno, f"{_dotted(node.func)}()"))
    return sorted(found)


def test_the_scan_finds_what_it_looks_for() -> None:
    planted = ast.parse(
        "import sys\nsys.path.insert(0, 'x')\nsys.path = []\n"
        "from lightning_icml26.tasks.fair_frontier import _fit\nfrom lightning_icml26.ops.attention import _kernels\n"
        "import lightning_icml26._optional\nfrom lightning_icml26.ops import soft_rank\n"
        "class M(nn.Module): pass\nloss.backward()\nopt.step()\nenv.step(0)\n"
        "class C(Callback): pass\noptimizer.zero_grad()\ntorch.autograd.grad(y, x)\nscheduler.step()\n"
    )
    assert sys_path_edits(planted) == [2, 3]
    assert [line for line, _ in private_imports(planted)] == [4, 5, 6]
    assert [text for _, text in training_code(planted)] == [
        "class M(nn.Module)",
        "loss.backward()",
        "opt.step()",
        "class C(Callback)",
        "optimizer.zero_grad()",
        "torch.autograd.grad()",
    ]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_sys_path_edits(script: Path) -> None:
    assert sys_path_edits(_tree(script)) == [], f"{script.name} edits sys.path; run it as python -m benchmarks.NAME"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_imports_from_the_package(script: Path) -> None:
    assert private_imports(_tree(script)) == [], f"{script.name} imports private names of lightning_icml26"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_training_of_its_own(script: Path) -> None:
    found = training_code(_tree(script))
    assert found == [], f"{script.name} trains on its own ({found}); run a recipe or a task runner instead"


def test_the_folder_stays_within_its_line_budget() -> None:
    lines = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines()) for p in SCRIPTS}
    total = sum(lines.values())
    largest = sorted(lines.items(), key=lambda item: -item[1])[:5]
    assert total < LINE_BUDGET, f"benchmarks/ has {total} lines (budget {LINE_BUDGET}); largest: {largest}"


def report() -> str:
    """The scripts that still train on their own, one line per place (``python -m tests.benchmarks....``)."""
    lines = []
    for script in SCRIPTS:
        for line, text in training_code(_tree(script)):
            lines.append(f"{script.relative_to(ROOT)}:{line}: {text}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report())
