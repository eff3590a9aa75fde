"""Problems in HumanEval's JSONL format, read from a file the user provides (nothing is downloaded).

Each line is an object with ``task_id``, ``prompt`` (signature and docstring), ``entry_point``,
``canonical_solution`` and ``test`` (a ``check(candidate)`` function of asserts). The public tests are
the asserts of the form ``assert candidate(<literals>) == <literal>``; other asserts are skipped.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from lightning_icml26.algorithms.pgs import CodeProblem

__all__ = ["load_humaneval_jsonl"]

_FIELDS = ("task_id", "prompt", "entry_point")


def _literal_tests(test_source: str) -> list[tuple[str, str]]:
    try:
        tree = ast.parse(test_source)
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare)):
            continue
        cmp = node.test
        if len(cmp.ops) != 1 or not isinstance(cmp.ops[0], ast.Eq):
            continue
        call = cmp.left
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "candidate"):
            continue
        if call.keywords:
            continue
        try:
            args = tuple(ast.literal_eval(a) for a in call.args)
            expected = ast.literal_eval(cmp.comparators[0])
        except ValueError:
            continue
        out.append((repr(args), repr(expected)))
    return out


def _signature(prompt: str, entry_point: str) -> str:
    for line in prompt.splitlines():
        if line.lstrip().startswith(f"def {entry_point}("):
            return line.strip()
    return f"def {entry_point}(...):"


def load_humaneval_jsonl(path: str | Path, max_public: int | None = 3) -> list[CodeProblem]:
    r"""Read HumanEval-format problems.

    Args:
        path: a ``.jsonl`` file (one problem per line).
        max_public: keep at most this many literal asserts as public tests (``None``: all).

    Returns:
        One :class:`~lightning_icml26.algorithms.pgs.CodeProblem` per line; ``spec`` is the prompt,
        ``reference`` the prompt plus the canonical solution when given.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: if a line is not JSON or lacks ``task_id``, ``prompt`` or ``entry_point``.

    Example:
        >>> import json, tempfile, os
        >>> row = {"task_id": "T/0", "prompt": "def inc(n):\n    '''Add one.'''\n", "entry_point": "inc",
        ...        "canonical_solution": "    return n + 1\n",
        ...        "test": "def check(candidate):\n    assert candidate(1) == 2\n"}
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = os.path.join(d, "p.jsonl")
        ...     _ = open(path, "w").write(json.dumps(row) + "\n")
        ...     problem = load_humaneval_jsonl(path)[0]
        >>> problem.name, problem.signature, problem.public_tests
        ('T/0', 'def inc(n):', (('(1,)', '2'),))
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path must be an existing HumanEval-format .jsonl file, got {str(path)!r}")
    problems = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"line {number} of {str(path)!r} is not JSON: {exc}") from None
        missing = [f for f in _FIELDS if not isinstance(row.get(f), str)]
        if missing:
            raise ValueError(f"line {number} of {str(path)!r} lacks the string fields {missing}")
        tests = _literal_tests(row.get("test", ""))
        if max_public is not None:
            tests = tests[:max_public]
        solution = row.get("canonical_solution")
        problems.append(
            CodeProblem(
                name=row["task_id"],
                entry_point=row["entry_point"],
                spec=row["prompt"],
                signature=_signature(row["prompt"], row["entry_point"]),
                public_tests=tuple(tests),
                reference=row["prompt"] + solution if isinstance(solution, str) else None,
            )
        )
    return problems
