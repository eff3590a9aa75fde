"""GraphExactMatch and EdgeMicroF1 against direct computations, and 2-rank DDP against one process."""

from __future__ import annotations

import random
import string

import pytest
import torch

from lightning_icml26.metrics import EdgeMicroF1, GraphExactMatch
from lightning_icml26.metrics.functional import edge_micro_f1, extract_facts, graph_exact_match
from tests._support.distributed import run_on_ranks


def _answers(seed: int, n: int = 30) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    words = ["Yes", "no", "3", "0, 2", "none", "Yes.", "YES!", "0 2"]
    return [rng.choice(words) for _ in range(n)], [rng.choice(words) for _ in range(n)]


def _facts(seed: int, n: int = 12) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    pool = [f'({u}: "a, (b)", -, {v})' if u % 3 == 0 else f"({u}, on, {v})" for u in range(5) for v in range(5)]
    return (
        ["\n".join(rng.sample(pool, rng.randint(0, 4))) for _ in range(n)],
        ["\n".join(rng.sample(pool, rng.randint(0, 4))) for _ in range(n)],
    )


def _direct_exact(preds: list[str], target: list[str]) -> float:
    def norm(text: str) -> str:
        return " ".join("".join(c for c in text.lower() if c not in string.punctuation).split())

    return sum(norm(p) == norm(t) for p, t in zip(preds, target, strict=True)) / len(preds)


def _direct_f1(preds: list[str], target: list[str]) -> float:
    tp = fp = fn = 0
    for p, t in zip(preds, target, strict=True):
        got = {line for line in p.splitlines() if line}
        want = {line for line in t.splitlines() if line}
        tp, fp, fn = tp + len(got & want), fp + len(got - want), fn + len(want - got)
    return 2 * tp / (2 * tp + fp + fn)


def test_exact_match_against_direct_computation() -> None:
    preds, target = _answers(0)
    metric = GraphExactMatch()
    metric.update(preds[:10], target[:10])
    metric.update(preds[10:], target[10:])
    assert float(metric.compute()) == pytest.approx(_direct_exact(preds, target))
    assert float(graph_exact_match(preds, target)) == pytest.approx(_direct_exact(preds, target))
    assert float(graph_exact_match(["Yes!"], ["yes"])) == 1.0
    assert float(graph_exact_match(["0 , 2"], ["0, 3"])) == 0.0


def test_edge_f1_against_direct_computation() -> None:
    preds, target = _facts(1)
    metric = EdgeMicroF1()
    metric.update(preds[:5], target[:5])
    metric.update(preds[5:], target[5:])
    assert float(metric.compute()) == pytest.approx(_direct_f1(preds, target))
    assert float(edge_micro_f1(preds, target)) == pytest.approx(_direct_f1(preds, target))
    assert extract_facts('junk (0: "a, (b)", -, 1) more') == {'(0: "a, (b)", -, 1)'}


def test_errors() -> None:
    with pytest.raises(ValueError, match="same length"):
        graph_exact_match(["a"], ["a", "b"])
    with pytest.raises(TypeError, match="preds must be a sequence of strings"):
        EdgeMicroF1().update("(0, -, 1)", ["(0, -, 1)"])


def _ddp(rank: int, world: int, preds: list[str], target: list[str], facts: tuple) -> list[float]:
    em, f1 = GraphExactMatch(), EdgeMicroF1()
    em.update(preds[rank::world], target[rank::world])
    f1.update(facts[0][rank::world], facts[1][rank::world])
    return [float(em.compute()), float(f1.compute())]


@pytest.mark.distributed
def test_two_rank_ddp_equals_one_process() -> None:
    preds, target = _answers(2, n=17)
    facts = _facts(3, n=9)
    expected = [float(graph_exact_match(preds, target)), float(edge_micro_f1(*facts))]
    for out in run_on_ranks(_ddp, 2, preds, target, facts):
        assert out == pytest.approx(expected, rel=1e-6)
    assert torch.isfinite(torch.tensor(expected)).all()
