"""A plain install: torch and the core dependencies of pyproject.toml, no extra.

The environment is built from this one without copying or downloading anything: a fresh virtual environment
sees, through a ``.pth`` file, a folder of links to the core dependencies' files only (the closure of
``[project].dependencies``: their modules and their metadata), and to this checkout's package. scikit-learn,
pandas, matplotlib, transformers, gymnasium, triton, ... are then as absent as after ``pip install
lightning-icml26``. tests/cli/test_wheel.py checks the same from the built wheel installed by pip.
"""

from __future__ import annotations

import contextlib
import importlib.metadata as md
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]

# Modules that exist to hold one extra's code and import it at the top; their parent package loads them on
# first access through `_optional.require`, which names the extra (checked below for every `__all__` name).
NEEDS_EXTRA = {
    "lightning_icml26.ops.attention.isa.triton_kernels": "triton",
    "lightning_icml26.data.rl.envs": "gymnasium",
    "lightning_icml26.tasks.r4_online": "gymnasium",
    "lightning_icml26.tasks.r4_alignment": "gymnasium",
}
HINT = "pip install 'lightning-icml26["


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def core_distributions() -> set[str]:
    """The installed distributions that `pip install lightning-icml26` brings: the dependency closure."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    seen: set[tuple[str, str]] = set()
    stack = [(text, "") for text in project["dependencies"]]
    while stack:
        text, extra = stack.pop()
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = _name(requirement.name)
        for wanted in sorted(requirement.extras) or [""]:
            if (name, wanted) in seen:
                continue
            seen.add((name, wanted))
            with contextlib.suppress(md.PackageNotFoundError):  # an optional dependency this environment lacks
                stack.extend((sub, wanted) for sub in md.requires(name) or [])
    return {name for name, _ in seen}


@pytest.fixture(scope="module")
def plain_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plain")
    site = root / "site"
    site.mkdir()
    for name in sorted(core_distributions()):
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        base = Path(str(dist.locate_file("")))
        for top in sorted({Path(str(f)).parts[0] for f in dist.files or []}):
            source = base / top
            if top == ".." or top.endswith(".pth") or not source.exists() or (site / top).exists():
                continue
            (site / top).symlink_to(source)
    (site / "lightning_icml26").symlink_to(ROOT / "lightning_icml26")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True, timeout=120)
    python = root / "venv" / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    (Path(purelib) / "plain.pth").write_text(f"{site}\n")
    return python


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ICML26_DEBUG")}


_IMPORT_EVERYTHING = """
import importlib, json, pkgutil, sys
import lightning_icml26
failed, names = {}, 0
for info in pkgutil.walk_packages(lightning_icml26.__path__, "lightning_icml26.", onerror=lambda n: None):
    try:
        module = importlib.import_module(info.name)
    except Exception as error:
        failed[info.name] = f"{type(error).__name__}: {error}"
        continue
    for name in getattr(module, "__all__", []):
        names += 1
        try:
            getattr(module, name)
        except Exception as error:
            failed[f"{info.name}.{name}"] = f"{type(error).__name__}: {error}"
print(json.dumps({"failed": failed, "names": names, "file": lightning_icml26.__file__,
                  "sklearn": importlib.util.find_spec("sklearn") is not None}))
"""


def test_every_module_and_public_name_imports_in_a_plain_install(plain_python: Path, tmp_path: Path) -> None:
    out = subprocess.run(
        [plain_python, "-c", _IMPORT_EVERYTHING], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["file"].startswith(str(plain_python.parents[2])), report["file"]  # the linked checkout
    assert report["sklearn"] is False  # the environment really lacks the extras
    assert report["names"] > 300
    wrong = {}
    for where, error in report["failed"].items():
        if where in NEEDS_EXTRA:
            if error != f"ModuleNotFoundError: No module named '{NEEDS_EXTRA[where]}'":
                wrong[where] = error
        elif not (error.startswith("ImportError: ") and HINT in error):  # a public name that needs an extra
            wrong[where] = error
    assert wrong == {}, "\n".join(f"{k}: {v}" for k, v in wrong.items())


@pytest.mark.slow
def test_icml26_list_and_quickstart_run_in_a_plain_install(plain_python: Path, tmp_path: Path) -> None:
    cli = [str(plain_python), "-m", "lightning_icml26.cli"]
    listed = subprocess.run([*cli, "list"], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert "quickstart" in [line.split()[0] for line in listed.stdout.splitlines() if line.strip()]
    run_dir = tmp_path / "run"
    ran = subprocess.run(
        [*cli, "run", "quickstart", "trainer=smoke", f"run_dir={run_dir}"],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "finished"
    assert (run_dir / "logs" / "metrics.csv").is_file()
    # Without matplotlib the curves are not drawn, and one line says so and how to get them.
    assert not (run_dir / "metrics.png").exists()
    notes = [line for line in ran.stderr.splitlines() if "matplotlib is not installed" in line]
    assert len(notes) == 1, ran.stderr[-3000:]
    assert "pip install 'lightning-icml26[plots]'" in notes[0]


def _extra_requirements(extra: str) -> set[str]:
    """The distributions that `pip install 'lightning-icml26[<extra>]'` asks for, nested extras expanded."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    seen, todo, names = set(), [extra], set()
    while todo:
        current = todo.pop()
        seen.add(current)
        for text in extras[current]:
            requirement = Requirement(text)
            if _name(requirement.name) == "lightning-icml26":
                todo.extend(e for e in requirement.extras if e not in seen)
            else:
                names.add(_name(requirement.name))
    return names


def test_the_test_extra_installs_triton_and_what_the_optional_pieces_need() -> None:
    # `make test` installs '.[test]': the ISA Triton kernel's tests (TRITON_INTERPRET=1) run instead of skipping,
    # and the scikit-learn novelty detectors are tested.
    assert {"triton", "scikit-learn"} <= _extra_requirements("test")
    assert _extra_requirements("novelty") == {"scikit-learn"}
    assert _extra_requirements("kernels") == {"triton"}
