"""`icml26 list` imports neither Lightning nor torch; the strategies still register in any import order."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_list_imports_no_heavy_package() -> None:
    proc = _python(
        "import sys\n"
        "from lightning_icml26.cli import main\n"
        "assert main(['list']) == 0\n"
        "print('heavy:', sorted(m for m in ('lightning', 'torch', 'transformers') if m in sys.modules))\n"
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == "heavy: []"
    assert any(line.startswith("quickstart ") for line in lines)


@pytest.mark.parametrize(
    "imports",
    [
        "import lightning_icml26\nimport lightning.pytorch as pl\n",
        "import lightning.pytorch as pl\nimport lightning_icml26\n",
        "from lightning_icml26.callbacks import MetricsPlot\nimport lightning.pytorch as pl\n",
    ],
)
def test_strategies_register_whatever_the_import_order(imports: str) -> None:
    proc = _python(
        imports + "trainer = pl.Trainer(strategy='ulysses', accelerator='cpu', devices=1, logger=False)\n"
        "print(type(trainer.strategy).__name__)\n"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "UPipeStrategy"
