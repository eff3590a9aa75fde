"""The PGS loop and the baselines, driven by a deterministic fake Generator and Tester."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import torch

from lightning_icml26.algorithms.pgs import (
    CodeProblem,
    DirectGeneration,
    LLMGenerator,
    LLMTester,
    PGSRefiner,
    ReflexionRefiner,
    Sandbox,
    SelfDebug,
    SelfEditRefiner,
    call_text,
)

pytest.importorskip("hypothesis")

BUGGY = (
    "def dedup(xs):\n    out = []\n    for x in xs:\n        if x not in out[-1:]:\n"
    "            out.append(x)\n    return out\n"
)
FIXED = BUGGY.replace("out[-1:]", "out")
PROBLEM = CodeProblem(
    name="dedup",
    entry_point="dedup",
    spec="Remove repeats, keeping first occurrences in order.",
    signature="def dedup(xs: list[int]) -> list[int]:",
    public_tests=(("([1, 1, 2],)", "[1, 2]"), ("([],)", "[]")),  # the bug (only adjacent repeats) passes both
)
NO_REPEATS = ("no_repeats", "def no_repeats(args, result):\n    assert len(set(result)) == len(result), 'repeats'")
UNSOUND = ("always_short", "def always_short(args, result):\n    assert len(result) < 2, 'too long'")
INPUTS = ["([5, 3, 5, 3, 5],)", "([1, 2, 1],)", "([7, 7],)", "([10, 20, 10],)", "([4],)", "([9, 8, 7, 9],)"]


class FakeGenerator:
    """Returns scripted programs; records every prompt; counts tokens as whitespace-separated words."""

    def __init__(self, programs: Sequence[str]) -> None:
        self.programs = list(programs)
        self.feedback: list[str] = []
        self.reflections = 0

    def generate(self, problem: CodeProblem) -> str:
        return self.programs[0]

    def refine(self, problem: CodeProblem, program: str, feedback: str) -> str:
        self.feedback.append(feedback)
        return self.programs[min(len(self.feedback), len(self.programs) - 1)]

    def reflect(self, problem: CodeProblem, program: str, feedback: str) -> str:
        self.reflections += 1
        return f"reflection {self.reflections}"

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(t.replace(",", " , ").split()) for t in texts]


class FakeTester:
    def __init__(self, properties: list[tuple[str, str]], inputs: list[str]) -> None:
        self._properties, self._inputs = properties, inputs
        self.asked: list[tuple[str, int]] = []

    def properties(self, problem: CodeProblem, n: int) -> list[tuple[str, str]]:
        self.asked.append(("properties", n))
        return list(self._properties)

    def inputs(self, problem: CodeProblem, n: int) -> list[str]:
        self.asked.append(("inputs", n))
        return list(self._inputs)


@pytest.fixture(scope="module")
def box() -> Sandbox:
    return Sandbox(case_seconds=1.0, wall_seconds=20)


def _in_process_failures(program: str, inputs: list[str]) -> list[str]:
    namespace: dict = {}
    exec(program, namespace)
    return [x for x in inputs if len(set(out := namespace["dedup"](*eval(x)))) != len(out)]


def test_pgs_feedback_is_the_min_token_counterexample_with_its_property(box: Sandbox) -> None:
    gen = FakeGenerator([BUGGY, FIXED])
    tester = FakeTester([NO_REPEATS, UNSOUND], INPUTS)
    out = PGSRefiner(gen, tester, box, num_properties=5, num_inputs=64, max_refinements=5).refine(PROBLEM)
    assert tester.asked == [("properties", 5), ("inputs", 64)]
    assert [n for n, _ in out.properties] == ["no_repeats"]  # the unsound one is filtered out
    assert out.passed
    assert not out.initially_passed
    assert out.refinements == 1
    assert out.program == FIXED
    failing = _in_process_failures(BUGGY, INPUTS)
    shortest = min(failing, key=lambda x: gen.count_tokens([x])[0])
    assert shortest == "([1, 2, 1],)"
    step = out.steps[0]
    assert step.counterexample is not None
    assert step.counterexample.input == shortest
    assert step.counterexample_tokens == gen.count_tokens([shortest])[0]
    assert step.failures == len(failing)
    (feedback,) = gen.feedback
    assert call_text("dedup", shortest) in feedback
    assert "It returned [1, 2, 1]." in feedback
    assert "`no_repeats`" in feedback
    assert NO_REPEATS[1] in feedback


def test_budget_is_respected_and_early_stop(box: Sandbox) -> None:
    never = FakeGenerator([BUGGY])
    out = PGSRefiner(never, FakeTester([NO_REPEATS], INPUTS), box, max_refinements=3).refine(PROBLEM)
    assert not out.passed
    assert out.refinements == 3
    assert len(never.feedback) == 3
    assert len(out.steps) == 4
    assert out.steps[-1].feedback == ""
    late = FakeGenerator([BUGGY, BUGGY, FIXED, BUGGY])
    out = PGSRefiner(late, FakeTester([NO_REPEATS], INPUTS), box, max_refinements=5).refine(PROBLEM)
    assert out.passed
    assert out.refinements == 2
    assert len(late.feedback) == 2
    one = PGSRefiner(FakeGenerator([BUGGY]), FakeTester([NO_REPEATS], INPUTS), box, max_refinements=1)
    assert one.refine(PROBLEM, program=FIXED).passed
    assert one.refine(PROBLEM, program=FIXED).refinements == 0


def test_hypothesis_and_random_minimisers(box: Sandbox) -> None:
    problem = CodeProblem(**{**PROBLEM.__dict__, "strategy": "st.tuples(st.lists(st.integers(0, 9)))"})
    gen = FakeGenerator([BUGGY, FIXED])
    out = PGSRefiner(gen, FakeTester([NO_REPEATS], INPUTS), box, minimiser="hypothesis").refine(problem)
    assert out.steps[0].counterexample is not None
    shrunk = out.steps[0].counterexample.input
    assert _in_process_failures(BUGGY, [shrunk]) == [shrunk]
    # no failing list is shorter: every list of length <= 2 over 0..9 passes
    short = [repr(([a, b],)) for a in range(10) for b in range(10)] + [repr(([a],)) for a in range(10)]
    assert _in_process_failures(BUGGY, short) == []
    assert len(eval(shrunk)[0]) == 3
    # a program that hangs on every input stops Hypothesis at the sandbox's limits: the fewest-token failure is used
    hangs = "def dedup(xs):\n    while True:\n        pass\n"
    tight = Sandbox(case_seconds=0.2, cpu_seconds=2, memory_mb=256, wall_seconds=8)
    gen = FakeGenerator([hangs, FIXED])
    out = PGSRefiner(gen, FakeTester([NO_REPEATS], INPUTS), tight, minimiser="hypothesis").refine(problem)
    assert out.passed
    case = out.steps[0].counterexample
    assert case is not None
    assert case.kind == "timeout"
    every_input = list(problem.public_inputs) + INPUTS
    assert case.input in every_input
    assert gen.count_tokens([case.input]) == [min(gen.count_tokens(every_input))]
    picks = set()
    for seed in range(6):
        gen = FakeGenerator([BUGGY, FIXED])
        out = PGSRefiner(gen, FakeTester([NO_REPEATS], INPUTS), box, minimiser="random", seed=seed).refine(PROBLEM)
        assert out.steps[0].counterexample is not None
        picks.add(out.steps[0].counterexample.input)
    assert picks <= set(_in_process_failures(BUGGY, INPUTS))
    assert len(picks) > 1


def test_public_test_baselines(box: Sandbox) -> None:
    wrong = "def dedup(xs):\n    return xs\n"
    gen = FakeGenerator([wrong, FIXED])
    out = SelfDebug(gen, box, max_refinements=5).refine(PROBLEM)
    assert out.passed
    assert out.refinements == 1
    assert gen.feedback == ["Your code fails on the input dedup([1, 1, 2]).\nIt returned [1, 1, 2].\n"
                            "The expected result is [1, 2]."]  # fmt: skip
    # the adjacent-only bug passes both public tests: public-test feedback never sees it
    blind = SelfDebug(FakeGenerator([BUGGY, FIXED]), box).refine(PROBLEM)
    assert blind.passed
    assert blind.refinements == 0
    assert blind.program == BUGGY
    direct = DirectGeneration(FakeGenerator([wrong, FIXED]), box).refine(PROBLEM)
    assert not direct.passed
    assert direct.refinements == 0
    gen = FakeGenerator([wrong, wrong, FIXED])
    out = ReflexionRefiner(gen, box, max_refinements=5).refine(PROBLEM)
    assert out.refinements == 2
    assert gen.reflections == 2
    assert "- reflection 1\n- reflection 2" in gen.feedback[1]
    gen = FakeGenerator([wrong, FIXED])
    SelfEditRefiner(gen, box).refine(PROBLEM)
    assert gen.feedback[0].splitlines()[1:] == [
        "# dedup([1, 1, 2]) -> [1, 1, 2] (expected [1, 2]) FAILED",
        "# dedup([]) -> [] (expected []) ok",
    ]


def test_bad_arguments(box: Sandbox) -> None:
    gen, tester = FakeGenerator([FIXED]), FakeTester([], [])
    with pytest.raises(ValueError, match="max_refinements"):
        PGSRefiner(gen, tester, box, max_refinements=0)
    with pytest.raises(ValueError, match="max_refinements"):
        SelfDebug(gen, box, max_refinements=0)
    with pytest.raises(ValueError, match="num_properties"):
        PGSRefiner(gen, tester, box, num_properties=0)
    with pytest.raises(ValueError, match="num_inputs"):
        PGSRefiner(gen, tester, box, num_inputs=0)
    with pytest.raises(ValueError, match="minimiser"):
        PGSRefiner(gen, tester, box, minimiser="smallest")
    with pytest.raises(TypeError, match="generator"):
        PGSRefiner(object(), tester, box)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tester"):
        PGSRefiner(gen, object(), box)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="problem"):
        SelfDebug(gen, box).refine("dedup")  # type: ignore[arg-type]


class ScriptedLM:
    """A LanguageModel answering from a list, recording prompts."""

    def __init__(self, answers: list[str], chat: bool = True) -> None:
        self.answers, self.prompts, self.chat = answers, [], chat

    def generate(self, prompts: Sequence[str], max_new_tokens: int = 32) -> list[str]:
        self.prompts += list(prompts)
        return [self.answers.pop(0) for _ in prompts]

    def logprobs(self, prompts: Sequence[str], continuations: Sequence[str]) -> list[torch.Tensor]:
        return [torch.zeros(len(c)) for c in continuations]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(t) for t in texts]

    def format_chat(self, messages: Sequence[dict]) -> str:
        if not self.chat:
            raise ValueError("no chat_template")
        return "|".join(m["content"] for m in messages) + "|assistant:"


def test_llm_roles_parse_answers() -> None:
    lm = ScriptedLM(
        [
            "Here:\n```python\ndef dedup(xs):\n    return list(dict.fromkeys(xs))\n```",
            "```python\ndef p_unique(args, result):\n    assert len(set(result)) == len(result)\n"
            "def p_bad(args, result) nope\n```",
            "1. ([1, 2, 1],)\n2. ([3, 3],)\n[4]\nnot an input\n([1, 2, 1],)",
        ]
    )
    gen, tester = LLMGenerator(lm), LLMTester(lm)
    assert gen.generate(PROBLEM) == "def dedup(xs):\n    return list(dict.fromkeys(xs))\n"
    assert "dedup([1, 1, 2]) == [1, 2]" in lm.prompts[0]
    assert lm.prompts[0].endswith("|assistant:")
    assert [n for n, _ in tester.properties(PROBLEM, 5)] == ["p_unique"]
    assert tester.inputs(PROBLEM, 10) == ["([1, 2, 1],)", "([3, 3],)", "([4],)"]
    with pytest.raises(ValueError, match="chat_template"):
        LLMGenerator(ScriptedLM([], chat=False))
    plain = ScriptedLM(["def dedup(xs): return xs"], chat=False)
    assert LLMGenerator(plain, use_chat=False).generate(PROBLEM) == "def dedup(xs): return xs"
    with pytest.raises(TypeError, match="LanguageModel"):
        LLMTester(object())  # type: ignore[arg-type]
