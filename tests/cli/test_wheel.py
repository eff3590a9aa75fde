"""The built wheel in a fresh virtual environment, used from outside the repository.

Two installs: the user's plain one (``pip install`` of torch, then of the wheel with its core dependencies and
no extra), and one that borrows this environment's packages to try README "When things go wrong".
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
# The torch that `make test` installs first (the Makefile exports TORCH_SPEC); by default this environment's.
TORCH_SPEC = os.environ.get("TORCH_SPEC") or f"torch=={torch.__version__.split('+')[0]}"
SUBPACKAGES = ["algorithms", "callbacks", "data", "distributed", "llm", "metrics", "metrics.functional", "modules",
               "ops", "optim", "strategies", "tasks"]  # fmt: skip


def _run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _outside_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ICML26_DEBUG")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wheel_dir = tmp_path_factory.mktemp("wheel")
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheel_dir),
                  str(ROOT)], cwd=wheel_dir)  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    return next(wheel_dir.glob("lightning_icml26-*.whl"))


def test_wheel_holds_the_package_and_its_recipes_only(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"lightning_icml26", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"}
    assert "lightning_icml26/recipes/quickstart.yaml" in names
    assert "lightning_icml26/py.typed" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith((".ckpt", ".pt", ".npz", ".json", ".csv"))]
    assert wheel.stat().st_size < 5_000_000  # about 0.8 MB: sources and recipes


_IMPORT_PUBLIC_NAMES = """
import importlib, json, sys
failed, names = {}, 0
for sub in sys.argv[1:]:
    module = importlib.import_module(f"lightning_icml26.{sub}")
    for name in module.__all__:
        names += 1
        try:
            getattr(module, name)
        except ImportError as error:  # a name whose extra is missing must say which one
            if "pip install 'lightning-icml26[" not in str(error):
                failed[f"{sub}.{name}"] = str(error)
print(json.dumps({"failed": failed, "names": names, "file": importlib.import_module("lightning_icml26").__file__}))
"""


@pytest.mark.slow
def test_plain_pip_install_of_the_wheel_runs_outside_the_repository(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    try:
        assert _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path).returncode == 0
        python, icml26 = str(venv / "bin" / "python"), str(venv / "bin" / "icml26")
        env = _outside_env()
        torch_installed = _run([python, "-m", "pip", "install", "-q", TORCH_SPEC], tmp_path, env)
        assert torch_installed.returncode == 0, torch_installed.stderr[-2000:]
        installed = _run([python, "-m", "pip", "install", "-q", str(wheel)], tmp_path, env)  # no extra
        assert installed.returncode == 0, installed.stderr[-2000:]
        work = tmp_path / "outside"
        work.mkdir()
        for absent in ("sklearn", "pandas", "matplotlib", "transformers", "gymnasium", "triton"):
            probe = _run([python, "-c", f"import {absent}"], work, env)
            assert probe.returncode != 0, f"{absent} is installed by the plain install"
        imported = _run([python, "-c", _IMPORT_PUBLIC_NAMES, *SUBPACKAGES], work, env)
        assert imported.returncode == 0, imported.stderr[-3000:]
        report = json.loads(imported.stdout.strip().splitlines()[-1])
        assert report["file"].startswith(str(venv)), report["file"]
        assert report["failed"] == {}
        assert report["names"] > 300
        listed = _run([icml26, "list"], work, env)
        assert listed.returncode == 0, listed.stderr[-2000:]
        assert "quickstart" in listed.stdout
        run_dir = work / "run"
        ran = _run([icml26, "run", "quickstart", "trainer=smoke", f"run_dir={run_dir}"], work, env)
        assert ran.returncode == 0, ran.stderr[-3000:]
        assert json.loads((run_dir / "summary.json").read_text())["status"] == "finished"
        assert "pip install 'lightning-icml26[plots]'" in ran.stderr  # the one line saying why there is no PNG
    finally:
        shutil.rmtree(venv, ignore_errors=True)  # about 1 GB with torch


@pytest.mark.slow
def test_wheel_in_a_fresh_venv_errors_debug_and_resume(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path).returncode == 0
    python = venv / "bin" / "python"
    # The dependencies come from this environment (no downloads): a .pth file adds its site-packages after
    # the fresh environment's own, where the wheel is installed.
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=tmp_path)
    (Path(site.stdout.strip()) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = _run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed", str(wheel)], cwd=tmp_path
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    icml26 = str(venv / "bin" / "icml26")
    work = tmp_path / "outside"
    work.mkdir()
    env = _outside_env()
    located = _run([str(python), "-c", "import lightning_icml26; print(lightning_icml26.__file__)"], work, env)
    assert str(venv) in located.stdout, located.stdout + located.stderr

    # A bad value: one error line with the reason, exit 2.
    bad = _run([icml26, "run", "quickstart", "trainer.max_epochs=-5", "--dry-run"], work, env)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1].startswith("error: cannot build 'trainer': MisconfigurationException")
    # A run-time failure: one line; with ICML26_DEBUG=1 the traceback too.
    small = ["data.num_train=128", "data.num_val=64", "data.num_test=64", "trainer.enable_progress_bar=false"]
    failed = _run([icml26, "run", "quickstart", "ckpt_path=/nonexistent.ckpt", *small], work, env)
    assert failed.returncode == 1
    assert "Traceback" not in failed.stderr
    debug_env = {**env, "ICML26_DEBUG": "1"}
    debug = _run([icml26, "run", "quickstart", "ckpt_path=/nonexistent.ckpt", *small], work, debug_env)
    assert "Traceback (most recent call last)" in debug.stderr
    # A run, then its resume in the same folder: the history is appended.
    run_dir = work / "run"
    first = _run([icml26, "run", "quickstart", "trainer.max_epochs=1", f"run_dir={run_dir}", *small], work, env)
    assert first.returncode == 0, first.stderr[-2000:]
    resumed = _run([icml26, "resume", str(run_dir), "trainer.max_epochs=2"], work, env)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "finished"
    rows = (run_dir / "logs" / "metrics.csv").read_text().splitlines()
    column = rows[0].split(",").index("epoch")
    epochs = {row.split(",")[column] for row in rows[1:]}
    assert {"0", "1"} <= epochs  # the first run's epoch kept, the resumed epoch appended
    assert (run_dir / "metrics.png").is_file()
