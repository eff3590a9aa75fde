"""The mutant suite, the property parser and soundness filter, input drawing and the minimisers."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from lightning_icml26.algorithms.pgs import (
    CaseResult,
    CodeProblem,
    Sandbox,
    draw_inputs,
    extract_properties,
    hypothesis_failure,
    min_token_failure,
    parse_property,
    random_failure,
    sound_properties,
)
from lightning_icml26.data.pgs import (
    MUTATION_OPERATORS,
    classic_problems,
    load_humaneval_jsonl,
    mutant_suite,
    mutants_of,
)
from lightning_icml26.llm import smollm2_cache_dir

pytest.importorskip("hypothesis")


@pytest.fixture(scope="module")
def box() -> Sandbox:
    return Sandbox(case_seconds=2.0, wall_seconds=60)


def _by_name(name: str) -> CodeProblem:
    return next(p for p in classic_problems() if p.name == name)


def test_references_pass_public_tests_and_properties(box: Sandbox) -> None:
    problems = classic_problems()
    assert len(problems) == 30
    assert len({p.name for p in problems}) == 30
    for p in problems:
        assert p.reference is not None
        assert len(p.properties) >= 2
        drawn = draw_inputs(p.strategy or "", 24, seed=3)
        inputs = p.public_inputs + drawn
        expected = p.public_expected + [None] * len(drawn)
        run = box.run(p.reference, p.entry_point, inputs, expected=expected, properties=p.properties)
        assert run.passed, (p.name, run.failures[:1])


def test_mutants_change_exactly_the_named_line() -> None:
    suite = mutant_suite(per_problem=3, seed=0)
    assert suite == mutant_suite(per_problem=3, seed=0)
    assert suite != mutant_suite(per_problem=3, seed=1)
    assert {m.operator for m in suite} == set(MUTATION_OPERATORS)
    assert len(suite) >= 80
    for m in suite:
        ref, mut = (m.problem.reference or "").splitlines(), m.source.splitlines()
        assert len(ref) == len(mut)
        changed = [i + 1 for i, (a, b) in enumerate(zip(ref, mut, strict=True)) if a != b]
        assert changed == [m.line], m.name
        before, after = m.description.split(": ", 1)[1].split(" -> ")
        assert before in ref[m.line - 1]
        assert after in mut[m.line - 1]
    all_gcd = mutants_of(_by_name("gcd"))
    assert len({m.source for m in all_gcd}) == len(all_gcd)
    with pytest.raises(ValueError, match="per_problem"):
        mutant_suite(per_problem=0)


def test_soundness_filter_drops_a_property_a_public_test_violates(box: Sandbox) -> None:
    problem = _by_name("sort_list")
    unsound = parse_property("def keeps_input(args, result):\n    assert result == args[0]")
    crashing = parse_property("def first_is_one(args, result):\n    assert result[0] == 1")
    candidates = [*problem.properties, unsound, crashing]
    kept = sound_properties(box, problem, candidates)
    # independent reference: evaluate each property in this process on the public (input, expected) pairs
    ast_pairs = [(eval(i), eval(o)) for i, o in problem.public_tests]
    reference = []
    for name, source in candidates:
        namespace: dict = {}
        exec(source, namespace)
        try:
            ok = all(namespace[name](a, r) is not False for a, r in ast_pairs)
        except Exception:
            ok = False
        if ok:
            reference.append(name)
    assert [n for n, _ in kept] == reference == ["non_decreasing", "same_items"]


def test_parse_and_extract_properties() -> None:
    with pytest.raises(ValueError, match="does not compile"):
        parse_property("def p(args, result)\n    return True")
    with pytest.raises(ValueError, match="must define a function"):
        parse_property("def p(x):\n    return True")
    with pytest.raises(TypeError, match="property source"):
        parse_property(3)  # type: ignore[arg-type]
    answer = (
        "Here are properties:\n```python\nimport math\n"
        "def p1(args, result):\n    assert result >= 0\n"
        "def helper(x):\n    return x\n```\n```python\ndef broken(args, result) oops\n```\n"
        "```python\ndef p2(args, result):\n    return math.isqrt(result) >= 0\n```"
    )
    got = extract_properties(answer)
    assert [n for n, _ in got] == ["p1", "p2"]
    assert got[0][1].startswith("import math\n")
    assert extract_properties(answer, limit=1) == got[:1]


def test_draw_inputs_is_seeded_and_distinct() -> None:
    a = draw_inputs("st.tuples(st.lists(st.integers(-5, 5), max_size=4))", 30, seed=7)
    assert a == draw_inputs("st.tuples(st.lists(st.integers(-5, 5), max_size=4))", 30, seed=7)
    assert len(a) == len(set(a)) > 10
    assert all(isinstance(eval(x), tuple) for x in a)
    with pytest.raises(ValueError, match="n must"):
        draw_inputs("st.tuples(st.integers())", 0)


@pytest.mark.skipif(not (smollm2_cache_dir() / "tokenizer.json").is_file(), reason="needs the SmolLM2 tokenizer")
def test_min_token_selection_under_the_smollm2_tokenizer() -> None:
    transformers = pytest.importorskip("transformers")
    tok = transformers.AutoTokenizer.from_pretrained(str(smollm2_cache_dir()))

    def count(texts: list[str]) -> list[int]:
        return [len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts]

    inputs = ["(1000000,)", "('xqzj',)", "('zzzzzz',)", "([10, 20],)"]
    failures = [CaseResult(x, "wrong_answer") for x in inputs]
    chosen = min_token_failure(failures, count)
    brute = min(inputs, key=lambda x: len(tok.encode(x, add_special_tokens=False)))
    assert chosen.input == brute == "('zzzzzz',)"
    assert min(inputs, key=len) != brute  # fewest tokens is not fewest characters here
    with pytest.raises(ValueError, match="failures"):
        min_token_failure([], count)
    picks = {random_failure(failures, random.Random(s)).input for s in range(40)}
    assert picks == set(inputs)


def test_hypothesis_shrinking_finds_a_small_failing_input(box: Sandbox) -> None:
    problem = _by_name("max_element")
    mutant = next(m for m in mutants_of(problem) if m.description.endswith("> -> >="))  # equivalent: ties only
    assert hypothesis_failure(box, mutant.source, problem, problem.properties) is None
    buggy = (
        "def max_element(xs):\n    best = xs[0]\n    for x in xs[1:]:\n"
        "        if x > best and x % 2 == 0:\n            best = x\n    return best"
    )
    found = hypothesis_failure(box, buggy, problem, problem.properties)
    assert found is not None
    assert found.kind == "property_violation"
    assert eval(found.input) == ([0, 1],)  # the simplest list with a larger odd item
    assert box.run(problem.reference or "", "max_element", [found.input], properties=problem.properties).passed


def test_humaneval_loader(tmp_path: Path) -> None:
    rows = [
        {
            "task_id": "Demo/0",
            "prompt": "def add(a: int, b: int) -> int:\n    '''Add a and b.'''\n",
            "entry_point": "add",
            "canonical_solution": "    return a + b\n",
            "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(0, 0) == 0\n"
            "    assert abs(candidate(2, 2) - 4) < 1\n    assert candidate(5, -5) == 0\n",
        },
        {"task_id": "Demo/1", "prompt": "def f(s):\n    pass\n", "entry_point": "f", "test": "x ="},
    ]
    path = tmp_path / "demo.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    first, second = load_humaneval_jsonl(path, max_public=2)
    assert first.public_tests == (("(1, 2)", "3"), ("(0, 0)", "0"))
    assert first.signature == "def add(a: int, b: int) -> int:"
    assert len(load_humaneval_jsonl(path, max_public=None)[0].public_tests) == 3
    assert Sandbox().run(first.reference or "", "add", first.public_inputs, expected=first.public_expected).passed
    assert second.public_tests == ()
    assert second.reference is None
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "x", "prompt": "p"}\n')
    with pytest.raises(ValueError, match="entry_point"):
        load_humaneval_jsonl(bad)
    bad.write_text("not json\n")
    with pytest.raises(ValueError, match="not JSON"):
        load_humaneval_jsonl(bad)
    with pytest.raises(FileNotFoundError, match="path"):
        load_humaneval_jsonl(tmp_path / "missing.jsonl")
