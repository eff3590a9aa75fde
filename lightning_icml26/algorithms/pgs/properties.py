"""Property checks: parsing them from text, and the soundness filter on the public tests.

A property is Python source defining ``name(args, result)`` that fails by raising (an ``assert``) or by
returning ``False``; ``args`` is the argument tuple of the call and ``result`` its return value.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from lightning_icml26.algorithms.pgs.problem import CodeProblem
from lightning_icml26.algorithms.pgs.sandbox import Sandbox

__all__ = ["extract_properties", "parse_property", "sound_properties"]

_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)
_TOP = re.compile(r"(?m)^(?=def |import |from |@)")


def _functions(nodes: list[ast.stmt]) -> list[ast.FunctionDef]:
    return [n for n in nodes if isinstance(n, ast.FunctionDef) and len(n.args.args) == 2]


def parse_property(source: str, name: str | None = None) -> tuple[str, str]:
    r"""Check that ``source`` compiles and defines a two-argument property function.

    Args:
        source: Python source (imports and helpers allowed).
        name: the function to use; default the first top-level function with two parameters.

    Returns:
        ``(name, source)`` as the sandbox takes it.

    Raises:
        ValueError: if the source does not compile or defines no such function.

    Example:
        >>> parse_property("def ok(args, result):\n    assert result >= 0")[0]
        'ok'
        >>> parse_property("def bad(args, result) assert 1")
        Traceback (most recent call last):
        ...
        ValueError: property source does not compile: ...
    """
    if not isinstance(source, str):
        raise TypeError(f"property source must be a str, got {type(source).__name__}: {source!r}")
    try:
        tree = ast.parse(source)
        compile(tree, "<property>", "exec")
    except SyntaxError as exc:
        raise ValueError(f"property source does not compile: {exc.msg} (line {exc.lineno}) in {source!r}") from None
    found = [f.name for f in _functions(tree.body)]
    if name is None and found:
        name = found[0]
    if name is None or name not in found:
        raise ValueError(
            f"property source must define a function {name or '<name>'}(args, result), found {found} in {source!r}"
        )
    return name, source


def extract_properties(text: str, limit: int | None = None) -> list[tuple[str, str]]:
    r"""Every compilable two-argument function in a model's answer, one property each.

    Code fences are read when present (else the whole text). Imports at the top level of a block are
    kept with every function of that block; top-level chunks that do not compile are skipped silently (the
    model's answer is not user input).

    Args:
        text: the model's answer.
        limit: keep at most this many.

    Returns:
        ``(name, source)`` pairs with unique names.

    Example:
        >>> answer = "```python\nimport math\ndef p1(args, result):\n    assert result >= 0\n```"
        >>> [name for name, _ in extract_properties(answer)]
        ['p1']
    """
    blocks = _FENCE.findall(text) or [text]
    out: list[tuple[str, str]] = []
    for block in blocks:
        # parse top-level chunks one by one, so one broken function does not hide the others
        nodes: list[ast.stmt] = []
        for chunk in _TOP.split(block):
            try:
                nodes += ast.parse(chunk).body
            except SyntaxError:
                continue
        header = "\n".join(ast.unparse(n) for n in nodes if isinstance(n, (ast.Import, ast.ImportFrom)))
        for fn in _functions(nodes):
            if fn.name in {n for n, _ in out}:
                continue
            source = (header + "\n" if header else "") + ast.unparse(fn)
            out.append((fn.name, source))
    return out[:limit] if limit is not None else out


def sound_properties(
    sandbox: Sandbox, problem: CodeProblem, properties: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    r"""The properties that hold on every public test's ``(input, expected output)`` pair.

    Each property is evaluated (in the sandbox) on the public inputs with the expected outputs as
    results; one that fails, raises or times out on any of them is dropped.

    Args:
        sandbox: where the checks run.
        problem: supplies the public tests.
        properties: ``(name, source)`` candidates.

    Returns:
        The sound subset, in the given order.

    Example:
        >>> p = CodeProblem("inc", "inc", "Add one.", "def inc(n: int) -> int:", (("(1,)", "2"), ("(4,)", "5")))
        >>> props = [parse_property("def grows(args, result):\n    assert result > args[0]"),
        ...          parse_property("def even(args, result):\n    assert result % 2 == 0")]
        >>> [n for n, _ in sound_properties(Sandbox(), p, props)]
        ['grows']
    """
    if not problem.public_tests:
        return list(properties)
    pairs = ", ".join(f"({i}, {o})" for i, o in problem.public_tests)
    table = (
        f"_PAIRS = [{pairs}]\n\n"
        "def _expected(*args):\n    for a, e in _PAIRS:\n        if a == args:\n            return e\n"
    )
    kept = []
    for prop in properties:
        run = sandbox.run(table, "_expected", problem.public_inputs, properties=[prop])
        if run.passed:
            kept.append(prop)
    return kept
