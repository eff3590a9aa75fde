"""The import-linter contract in pyproject.toml holds for the package, and it catches a forbidden import."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter")

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lightning_icml26"
LINT = (
    "import sys\n"
    "from importlinter.cli import lint_imports\n"
    "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, no_logo=True))\n"
)


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``lint-imports`` with ``cwd`` first on the path, so the package found there is the one analysed."""
    return subprocess.run([sys.executable, "-c", LINT], cwd=cwd, capture_output=True, text=True, timeout=300)


def _copy_project(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(PACKAGE, tmp_path / "lightning_icml26", ignore=shutil.ignore_patterns("__pycache__", "recipes"))
    return tmp_path


def _verdicts(stdout: str) -> dict[str, str]:
    """Contract name -> ``"KEPT"`` / ``"BROKEN"`` from lint-imports' report (names may wrap over lines)."""
    report = " ".join(stdout.split("Contracts", 1)[-1].split())
    report = report.split("dependencies. ", 1)[-1]
    return {name.strip(" -"): verdict for name, verdict in re.findall(r"(.+?) (KEPT|BROKEN)", report)}


def _plant(path: Path, line: str) -> None:
    """Insert ``line`` after the ``from __future__`` import of a module (a real top-level import)."""
    text = path.read_text()
    anchor = "from __future__ import annotations\n"
    assert anchor in text, f"{path} has no __future__ import to anchor the planted line"
    path.write_text(text.replace(anchor, anchor + line + "\n", 1))


def test_package_keeps_its_layer_contracts() -> None:
    out = _lint_imports(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    verdicts = _verdicts(out.stdout)
    assert len(verdicts) == 6, verdicts
    assert set(verdicts.values()) == {"KEPT"}, verdicts


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("ops/sinkhorn.py", "import lightning.pytorch", "distributed, ops, llm, algorithms, metrics and optim never"),
        ("llm/protocol.py", "import lightning_icml26.algorithms", "Layers"),
        ("_checks.py", "import lightning_icml26.distributed", "Layers"),
        ("ops/attention/isa/module.py", "import lightning_icml26.ops.attention.kv_memory.gsa", "ops/attention's three"),
        ("metrics/sparsity.py", "from lightning_icml26.modules import MLP", "metrics never import modules"),
        ("distributed/group.py", "import lightning_icml26.strategies", "Layers"),
        ("data/spirals.py", "from lightning_icml26.tasks import fair_frontier_task", "Only the CLI imports"),
    ],
)
def test_a_planted_forbidden_import_breaks_the_contract(tmp_path: Path, module: str, line: str, contract: str) -> None:
    project = _copy_project(tmp_path)
    clean = _lint_imports(project)
    assert clean.returncode == 0, clean.stdout + clean.stderr  # the copy itself is clean
    _plant(project / "lightning_icml26" / module, line)
    out = _lint_imports(project)
    assert out.returncode == 1, out.stdout + out.stderr
    broken = [name for name, verdict in _verdicts(out.stdout).items() if verdict == "BROKEN"]
    assert any(name.startswith(contract) for name in broken), (broken, out.stdout)
