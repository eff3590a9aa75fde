"""`import lightning_icml26` is light and registers strategies idempotently."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ["transformers", "triton", "openmm", "gymnasium", "jax", "stable_baselines3", "sentence_transformers", "mujoco"]
SUBPACKAGES = [
    "lightning_icml26",
    "lightning_icml26.distributed",
    "lightning_icml26.ops",
    "lightning_icml26.optim",
    "lightning_icml26.metrics",
    "lightning_icml26.metrics.functional",
    "lightning_icml26.callbacks",
    "lightning_icml26.strategies",
    "lightning_icml26.modules",
    "lightning_icml26.algorithms",
    "lightning_icml26.algorithms.recourse",
    "lightning_icml26.data",
    "lightning_icml26.data.boltzmann",
    "lightning_icml26.data.rl",
    "lightning_icml26.tasks",
    "lightning_icml26.llm",
]


def _imported_after(modules: list[str]) -> set[str]:
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in modules)
        + f"print(','.join(sorted(h for h in {HEAVY!r} if h in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    return {name for name in out.stdout.strip().split(",") if name}


# lightning itself may import some of these (transformers, through its own optional integrations);
# the package must add nothing beyond what lightning and torchmetrics already load.
_BASELINE = ["lightning.pytorch", "torchmetrics"]


def test_import_package_leaves_heavy_dependencies_unimported() -> None:
    assert _imported_after([*_BASELINE, "lightning_icml26"]) == _imported_after(_BASELINE)


def test_import_every_subpackage_leaves_heavy_dependencies_unimported() -> None:
    assert _imported_after([*_BASELINE, *SUBPACKAGES]) == _imported_after(_BASELINE)


@pytest.mark.parametrize("module", SUBPACKAGES)
def test_public_names_are_listed_in_all(module: str) -> None:
    mod = __import__(module, fromlist=["__all__"])
    assert isinstance(mod.__all__, list)
    for name in mod.__all__:
        assert hasattr(mod, name), f"{module}.__all__ lists {name!r}, which does not exist"


@pytest.mark.parametrize(
    ("module", "baseline"),
    [
        ("lightning_icml26.metrics", "torchmetrics"),
        ("lightning_icml26.metrics.functional", "torchmetrics"),
        ("lightning_icml26.callbacks", "lightning.pytorch"),
    ],
)
def test_metrics_and_callbacks_import_nothing_beyond_torchmetrics_and_lightning(module: str, baseline: str) -> None:
    # Their import cost is torchmetrics' / Lightning's plus the package's own modules: no third-party package
    # (scikit-learn, pandas, networkx, sympy, transformers, ...) that the baseline did not already load.
    code = (
        "import sys\n"
        f"import {baseline}\n"
        "before = {name.split('.')[0] for name in sys.modules}\n"
        f"import {module}\n"
        "added = {name.split('.')[0] for name in sys.modules} - before - set(sys.stdlib_module_names)\n"
        "print(','.join(sorted(added - {'lightning_icml26'})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "", f"importing {module} after {baseline} also imports {out.stdout.strip()}"


def test_registration_is_idempotent_across_reimports() -> None:
    code = (
        "import importlib, lightning_icml26, lightning_icml26.strategies as s\n"
        "from lightning.pytorch.strategies import StrategyRegistry\n"
        "before = sorted(StrategyRegistry.available_strategies())\n"
        "importlib.reload(s); importlib.reload(lightning_icml26)\n"
        "assert sorted(StrategyRegistry.available_strategies()) == before\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
