"""Moved modules and names: the old import paths still work for one release, warn, and give the same objects."""

from __future__ import annotations

import importlib
import re
import sys
import types
import warnings
from pathlib import Path

import pytest

import lightning_icml26
from lightning_icml26._moved import MOVED_MODULES, MOVED_NAMES

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(("old", "new"), sorted(MOVED_MODULES.items()))
def test_old_module_path_warns_and_is_the_new_module(old: str, new: str) -> None:
    if new.endswith(".triton_kernels"):
        pytest.importorskip("triton")
    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    messages = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    assert any(old in m and new in m for m in messages), messages


def test_old_module_path_with_from_import() -> None:
    sys.modules.pop("lightning_icml26.ops.attention.kv_eviction", None)
    with pytest.warns(DeprecationWarning, match="kv_memory.eviction"):
        from lightning_icml26.ops.attention.kv_eviction import EvictionAttention
    from lightning_icml26.ops.attention import EvictionAttention as public

    assert EvictionAttention is public


@pytest.mark.parametrize(
    ("package", "name"), [(p, n) for p, names in sorted(MOVED_NAMES.items()) for n in sorted(names)]
)
def test_moved_name_warns_and_is_the_same_object(package: str, name: str) -> None:
    module = importlib.import_module(package)
    with pytest.warns(DeprecationWarning, match=MOVED_NAMES[package][name].replace(".", r"\.")):
        old = getattr(module, name)
    assert old is getattr(importlib.import_module(MOVED_NAMES[package][name]), name)


def test_unknown_names_still_raise_attribute_error() -> None:
    import lightning_icml26.algorithms.causal as causal

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        causal.nope  # noqa: B018


def test_the_repository_uses_the_new_paths() -> None:
    old = sorted(MOVED_MODULES, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w.])(" + "|".join(re.escape(o) for o in old) + r")(?![\w.])")
    slashes = re.compile(r"(?<![\w/])(" + "|".join(re.escape(o.replace(".", "/")) + r"\.py" for o in old) + r")")
    skip = {ROOT / "lightning_icml26" / "_moved.py", Path(__file__).resolve()}
    offenders = []
    paths = [ROOT / "README.md", ROOT / "conftest.py"]
    for folder in ("lightning_icml26", "tests", "benchmarks", "docs"):
        paths += sorted((ROOT / folder).rglob("*"))
    for path in paths:
        if path.suffix not in {".py", ".md", ".yaml"} or path in skip or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        offenders += [f"{path.relative_to(ROOT)}: {hit}" for hit in [*pattern.findall(text), *slashes.findall(text)]]
    assert not offenders, "old module paths still used:\n" + "\n".join(offenders)


def test_moved_modules_are_public_paths_that_exist_no_more() -> None:
    package_root = Path(lightning_icml26.__file__).parent
    for old in MOVED_MODULES:
        relative = Path(*old.split(".")[1:])
        assert not (package_root / relative).with_suffix(".py").exists(), old
        assert not (package_root / relative).is_dir(), old


def test_the_old_video_qkv_module_path_leaves_the_function_in_place() -> None:
    import lightning_icml26.data as data

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        importlib.import_module("lightning_icml26.data.video_qkv")  # the old path of isa_video_qkv
    assert callable(data.video_qkv)
    assert not isinstance(data.video_qkv, types.ModuleType)
    from lightning_icml26.data import video_qkv

    assert video_qkv is data.isa_video_qkv.video_qkv
