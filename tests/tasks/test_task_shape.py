"""The shape every task runner keeps, checked on the syntax tree of lightning_icml26/tasks/*.py (nothing is run).

* No function (methods and nested functions included) runs past 60 lines, its docstring not counted.
* A runner (a module-level ``*_task`` function, or ``run_online``) takes one parameter, its settings object, whose
  annotation names a ``...Config`` class; no function takes more than 5 parameters (``self``/``cls`` not
  counted): settings travel in one object.
* Each module with a runner defines that ``...Config`` class as a frozen dataclass derived from ``TaskConfig``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TASKS = Path(__file__).resolve().parents[2] / "lightning_icml26" / "tasks"
MAX_LINES = 60
MAX_PARAMETERS = 5


def _modules() -> list[Path]:
    return sorted(TASKS.glob("*.py"))


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def code_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from ``def`` (decorators excluded) to the function's last line, less its docstring's lines."""
    total = (function.end_lineno or function.lineno) - function.lineno + 1
    first = function.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        total -= (first.end_lineno or first.lineno) - first.lineno + 1
    return total


def parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    """Every parameter but ``self``/``cls``, ``*args`` and ``**kwargs`` included."""
    args = function.args
    found = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    found += [a for a in (args.vararg, args.kwarg) if a is not None]
    return [a for a in found if a.arg not in ("self", "cls")]


def is_runner(function: ast.AST) -> bool:
    return isinstance(function, ast.FunctionDef) and (function.name.endswith("_task") or function.name == "run_online")


def test_the_scan_measures_what_it_claims() -> None:
    planted = ast.parse(
        'def f(a, b, *c, d=1, **e):\n    """Doc\n\n    more."""\n    x = 1\n    return x\n\n'
        "class K:\n    def g(self, config: KConfig):\n        return config\n"
    )
    f, g = _functions(planted)
    assert code_lines(f) == 3
    assert sorted(a.arg for a in parameters(f)) == ["a", "b", "c", "d", "e"]
    assert code_lines(g) == 2
    assert [a.arg for a in parameters(g)] == ["config"]


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.name)
def test_no_function_is_long_or_takes_many_parameters(path: Path) -> None:
    problems = []
    for function in _functions(_tree(path)):
        if code_lines(function) > MAX_LINES:
            problems.append(f"{function.name} (line {function.lineno}) runs {code_lines(function)} lines")
        if len(parameters(function)) > MAX_PARAMETERS:
            problems.append(f"{function.name} (line {function.lineno}) takes {len(parameters(function))} parameters")
    assert not problems, f"{path.name}: " + "; ".join(problems)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.name)
def test_runners_take_one_config(path: Path) -> None:
    tree = _tree(path)
    configs = {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.ClassDef) and any(ast.unparse(b) == "TaskConfig" for b in node.bases)
    }
    for node in configs.values():
        decorators = [ast.unparse(d) for d in node.decorator_list]
        assert "dataclass(frozen=True)" in decorators, f"{path.name}: {node.name} is not a frozen dataclass"
        assert node.name.endswith("Config"), f"{path.name}: {node.name} is not named <Task>Config"
    for function in tree.body:
        if not is_runner(function):
            continue
        assert isinstance(function, ast.FunctionDef)
        args = parameters(function)
        assert len(args) == 1, f"{path.name}: {function.name} takes {[a.arg for a in args]}, not one config"
        annotation = ast.unparse(args[0].annotation) if args[0].annotation is not None else ""
        assert annotation in configs, f"{path.name}: {function.name}'s parameter is a {annotation!r}, not a Config"
