"""The seeded mutant suite: thirty classic functions, each with bugs injected by mutation operators.

Every problem carries a specification, a typed signature, two public tests (the scarce tests a user
writes), reference properties, a Hypothesis strategy for its inputs and a correct reference. A mutant is
the reference with one operator applied at one site of its syntax tree: relational operator replacement
(``<`` to ``<=``, ``==`` to ``!=``, ``in`` to ``not in``, ...), arithmetic operator replacement (``+``
to ``-``, ``*`` to ``+``, ``//`` to ``%``, ...), integer constant off-by-one (``c`` to ``c + 1`` and
``c - 1``) and boolean connector swap (``and`` to ``or``). A mutant may be equivalent to its reference
(no input tells them apart); :mod:`benchmarks` discard those by differential testing.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from lightning_icml26.algorithms.pgs import CodeProblem
from lightning_icml26.data.pgs._problems_a import PROBLEMS_A
from lightning_icml26.data.pgs._problems_b import PROBLEMS_B

__all__ = ["MUTATION_OPERATORS", "Mutant", "classic_problems", "mutants_of", "mutant_suite"]

MUTATION_OPERATORS = ("relational", "arithmetic", "constant", "boolean")
"""The mutation operators, in the order their sites are listed."""

_REL: dict[type, type] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
}  # fmt: skip
_ARITH: dict[type, type] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add, ast.FloorDiv: ast.Mod, ast.Mod: ast.FloorDiv,
}  # fmt: skip
_SYMBOL: dict[type, str] = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.In: "in",
    ast.NotIn: "not in", ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%",
    ast.And: "and", ast.Or: "or",
}  # fmt: skip


def _split_properties(source: str) -> tuple[tuple[str, str], ...]:
    tree = ast.parse(source)
    return tuple((fn.name, ast.unparse(fn)) for fn in tree.body if isinstance(fn, ast.FunctionDef))


def classic_problems() -> list[CodeProblem]:
    """The thirty problems of the suite, with canonical (``ast.unparse``) reference sources.

    Example:
        >>> problems = classic_problems()
        >>> len(problems), problems[0].name, problems[0].public_tests[0]
        (30, 'sort_list', ('([3, 1, 2],)', '[1, 2, 3]'))
    """
    out = []
    for name, spec, signature, reference, public, props, strategy in PROBLEMS_A + PROBLEMS_B:
        out.append(
            CodeProblem(
                name=name,
                entry_point=name,
                spec=spec,
                signature=signature,
                public_tests=tuple(public),
                reference=ast.unparse(ast.parse(reference)),
                properties=_split_properties(props),
                strategy=strategy,
            )
        )
    return out


@dataclass(frozen=True)
class Mutant:
    """One injected bug.

    Attributes:
        problem: the problem whose reference was mutated.
        operator: one of :data:`MUTATION_OPERATORS`.
        line: the mutated line of :attr:`source` (1-based).
        description: what changed, e.g. ``"line 4: < -> <="``.
        source: the buggy program.
    """

    problem: CodeProblem
    operator: str
    line: int
    description: str
    source: str

    @property
    def name(self) -> str:
        """``<problem>:<line>:<description of the change>``."""
        return f"{self.problem.name}:{self.description}"


def _sites(tree: ast.AST) -> Iterator[tuple[int, str, int, str]]:
    """``(node index in ast.walk order, operator, variant, text)`` of every mutation site."""
    for index, node in enumerate(ast.walk(tree)):
        if isinstance(node, ast.Compare):
            for k, op in enumerate(node.ops):
                if type(op) in _REL:
                    yield index, "relational", k, f"{_SYMBOL[type(op)]} -> {_SYMBOL[_REL[type(op)]]}"
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _ARITH:
            yield index, "arithmetic", 0, f"{_SYMBOL[type(node.op)]} -> {_SYMBOL[_ARITH[type(node.op)]]}"
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            yield index, "constant", 1, f"{node.value} -> {node.value + 1}"
            yield index, "constant", -1, f"{node.value} -> {node.value - 1}"
        elif isinstance(node, ast.BoolOp):
            other = ast.Or if isinstance(node.op, ast.And) else ast.And
            yield index, "boolean", 0, f"{_SYMBOL[type(node.op)]} -> {_SYMBOL[other]}"


def _apply(source: str, index: int, operator: str, variant: int) -> tuple[str, int]:
    tree = ast.parse(source)
    node = next(n for i, n in enumerate(ast.walk(tree)) if i == index)
    if operator == "relational":
        assert isinstance(node, ast.Compare)
        node.ops[variant] = _REL[type(node.ops[variant])]()
    elif operator == "arithmetic":
        assert isinstance(node, (ast.BinOp, ast.AugAssign))
        node.op = _ARITH[type(node.op)]()
    elif operator == "constant":
        assert isinstance(node, ast.Constant)
        assert isinstance(node.value, int)
        node.value = node.value + variant
    else:
        assert isinstance(node, ast.BoolOp)
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    return ast.unparse(tree), int(getattr(node, "lineno", 0))


def mutants_of(problem: CodeProblem) -> list[Mutant]:
    """Every single-site mutant of ``problem.reference``, in syntax-tree order.

    Raises:
        ValueError: if the problem has no reference.

    Example:
        >>> gcd = next(p for p in classic_problems() if p.name == "gcd")
        >>> [m.description for m in mutants_of(gcd)][:3]
        ['line 2: != -> ==', 'line 2: 0 -> 1', 'line 2: 0 -> -1']
    """
    if problem.reference is None:
        raise ValueError(f"problem {problem.name!r} has no reference to mutate (reference=None)")
    source = problem.reference
    out = []
    for index, operator, variant, text in _sites(ast.parse(source)):
        mutated, line = _apply(source, index, operator, variant)
        if mutated != source:
            out.append(Mutant(problem, operator, line, f"line {line}: {text}", mutated))
    return out


def mutant_suite(per_problem: int = 3, seed: int = 0, problems: Sequence[CodeProblem] | None = None) -> list[Mutant]:
    """A seeded sample of mutants: up to ``per_problem`` from each problem.

    Args:
        per_problem: mutants drawn from each problem (at least 1).
        seed: seed of the draw.
        problems: default :func:`classic_problems`.

    Returns:
        The mutants, problem by problem, each problem's in syntax-tree order.

    Raises:
        ValueError: if ``per_problem < 1``.

    Example:
        >>> suite = mutant_suite(per_problem=2, seed=0)
        >>> len(suite), suite == mutant_suite(per_problem=2, seed=0)
        (58, True)
    """
    if isinstance(per_problem, bool) or not isinstance(per_problem, int) or per_problem < 1:
        raise ValueError(f"per_problem must be a positive int, got {per_problem!r}")
    rng = random.Random(seed)
    out: list[Mutant] = []
    for problem in classic_problems() if problems is None else problems:
        candidates = mutants_of(problem)
        picked = sorted(rng.sample(range(len(candidates)), min(per_problem, len(candidates))))
        out += [candidates[i] for i in picked]
    return out
