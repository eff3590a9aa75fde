"""Old import paths of moved modules, kept for one release: importing one warns and returns the new module.

Each key is a module path that moved in 0.2 (one name per method, ``ops/attention/`` split into its three
families); importing it emits a ``DeprecationWarning`` that names the new path and returns the new module itself,
so ``isinstance`` checks and monkeypatching see one object. Installed by ``import lightning_icml26``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any

MOVED_MODULES: dict[str, str] = {
    "lightning_icml26.ops.attention.dense": "lightning_icml26.ops.attention.context_parallel.dense",
    "lightning_icml26.ops.attention.ulysses": "lightning_icml26.ops.attention.context_parallel.ulysses",
    "lightning_icml26.ops.attention.ring": "lightning_icml26.ops.attention.context_parallel.ring",
    "lightning_icml26.ops.attention.upipe": "lightning_icml26.ops.attention.context_parallel.upipe",
    "lightning_icml26.ops.attention.upipe_fused": "lightning_icml26.ops.attention.context_parallel.upipe_fused",
    "lightning_icml26.ops.attention.hf_fused": "lightning_icml26.ops.attention.context_parallel.upipe_hf",
    "lightning_icml26.ops.attention.module": "lightning_icml26.ops.attention.context_parallel.module",
    "lightning_icml26.ops.attention.routing": "lightning_icml26.ops.attention.context_parallel.routing",
    "lightning_icml26.ops.attention.memory": "lightning_icml26.ops.attention.context_parallel.memory",
    "lightning_icml26.ops.attention.isa_module": "lightning_icml26.ops.attention.isa.module",
    "lightning_icml26.ops.attention.isa_triton": "lightning_icml26.ops.attention.isa.triton_kernels",
    "lightning_icml26.ops.attention.block_sparse": "lightning_icml26.ops.attention.isa.block_sparse",
    "lightning_icml26.ops.attention.arm": "lightning_icml26.ops.attention.kv_memory.arm",
    "lightning_icml26.ops.attention.arm_memory": "lightning_icml26.ops.attention.kv_memory.arm_memory",
    "lightning_icml26.ops.attention.gsa": "lightning_icml26.ops.attention.kv_memory.gsa",
    "lightning_icml26.ops.attention.kv_eviction": "lightning_icml26.ops.attention.kv_memory.eviction",
    "lightning_icml26.ops.attention.kv_kinds": "lightning_icml26.ops.attention.kv_memory.kinds",
    "lightning_icml26.ops.attention.decode_check": "lightning_icml26.ops.attention.kv_memory.decode_check",
    "lightning_icml26.callbacks.swap_attention": "lightning_icml26.callbacks.isa",
    "lightning_icml26.metrics.attention_approx": "lightning_icml26.metrics.isa",
    "lightning_icml26.metrics.functional.attention_approx": "lightning_icml26.metrics.functional.isa",
    "lightning_icml26.data.video_qkv": "lightning_icml26.data.isa_video_qkv",
    "lightning_icml26.data.moving_shapes": "lightning_icml26.data.isa_moving_shapes",
    "lightning_icml26.callbacks.gumbel_temperature": "lightning_icml26.callbacks.arm_gumbel_temperature",
    "lightning_icml26.callbacks.read_cost": "lightning_icml26.callbacks.arm_read_cost",
    "lightning_icml26.callbacks.usage_penalty": "lightning_icml26.callbacks.arm_usage_penalty",
    "lightning_icml26.data.recall": "lightning_icml26.data.arm_recall",
    "lightning_icml26.ops.hierarchical_contrastive": "lightning_icml26.ops.valueflow_contrastive",
    "lightning_icml26.algorithms.anchor_intensity": "lightning_icml26.algorithms.valueflow_intensity",
    "lightning_icml26.algorithms.anchor_judge": "lightning_icml26.algorithms.valueflow_judge",
    "lightning_icml26.metrics.anchor_intensity": "lightning_icml26.metrics.valueflow",
    "lightning_icml26.metrics.functional.anchor_intensity": "lightning_icml26.metrics.functional.valueflow",
    "lightning_icml26.algorithms.imagination": "lightning_icml26.algorithms.itc_imagination",
    "lightning_icml26.metrics.consistency": "lightning_icml26.metrics.itc",
    "lightning_icml26.metrics.functional.consistency": "lightning_icml26.metrics.functional.itc",
    "lightning_icml26.data.boltzmann.reweighting": "lightning_icml26.algorithms.boltzmann_reweighting",
    "lightning_icml26.algorithms.causal.simulator": "lightning_icml26.data.pbscm_simulator",
}


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        warnings.warn(
            f"{module.__name__} moved to {self.new}; the old path will be removed in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        # the import system returns whatever sys.modules holds under the old name once this returns
        sys.modules[module.__name__] = importlib.import_module(self.new)


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED_MODULES.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


def install() -> None:
    """Let the old module paths of :data:`MOVED_MODULES` import (with a ``DeprecationWarning``); idempotent.

    Example:
        >>> import sys, warnings
        >>> install()
        >>> _ = sys.modules.pop("lightning_icml26.callbacks.swap_attention", None)  # imported earlier: warn again
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     import lightning_icml26.callbacks.swap_attention as old
        >>> import lightning_icml26.callbacks.isa as new
        >>> old is new, "lightning_icml26.callbacks.isa" in str(caught[-1].message)
        (True, True)
    """
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())


# public names that left a package's namespace: package -> {name: the module that holds it now}
MOVED_NAMES: dict[str, dict[str, str]] = {
    "lightning_icml26.algorithms": {"PBSCMSimulator": "lightning_icml26.data"},
    "lightning_icml26.algorithms.causal": {
        "PBSCMSimulator": "lightning_icml26.data",
        "graph_code": "lightning_icml26.data",
        "random_pbscm_graph": "lightning_icml26.data",
    },
}


def moved_attribute(package: str, name: str) -> Any:
    """The module ``__getattr__`` of a package whose public name moved: warn, then return it from its new home.

    Raises:
        AttributeError: if ``name`` did not move out of ``package`` (the usual missing-attribute error).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     cls = moved_attribute("lightning_icml26.algorithms.causal", "PBSCMSimulator")
        >>> cls.__module__, "lightning_icml26.data" in str(caught[-1].message)
        ('lightning_icml26.data.pbscm_simulator', True)
    """
    new = MOVED_NAMES.get(package, {}).get(name)
    if new is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    warnings.warn(
        f"{package}.{name} moved to {new}.{name}; the old path will be removed in the next release",
        DeprecationWarning,
        stacklevel=3,
    )
    return getattr(importlib.import_module(new), name)
