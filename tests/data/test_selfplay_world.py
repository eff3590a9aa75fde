"""Toy world answers against independent computation; the solver's practice and forgetting; the buffer."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order

from lightning_icml26.data.selfplay import TEMPLATES, ProblemBuffer, ToySolver, ToyWorld


def _independent_answer(q: str) -> str:
    body = q.split(" ? [")[0]
    if body.startswith("compute "):
        return str(eval(body.removeprefix("compute ")))  # our own generated arithmetic
    if body.startswith("remainder of "):
        a, b = map(int, re.findall(r"\d+", body))
        return str(a % b)
    edges = re.findall(r"([a-p])>([a-p])", body)
    if "in-degree" in body:
        return str(sum(v == body[-1] for _, v in edges))
    dst, src = re.search(r"is ([a-p]) reachable from ([a-p])", body).groups()
    idx = {c: i for i, c in enumerate("abcdefghijklmnop")}
    rows, cols = zip(*[(idx[u], idx[v]) for u, v in edges], strict=True)
    graph = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(16, 16))
    reached = breadth_first_order(graph, idx[src], directed=True, return_predecessors=False)
    return "yes" if idx[dst] in set(reached.tolist()) else "no"


def test_answers_match_independent_computation() -> None:
    world = ToyWorld(num_difficulties=4, num_variants=3)
    for t in range(len(TEMPLATES)):
        for d in range(4):
            for v in range(3):
                q = world.question(t, d, v)
                assert world.parse(q) == (t, d, v)
                assert world.answer(q) == _independent_answer(q), q
    assert len({world.question(t, d, v) for t in range(6) for d in range(4) for v in range(3)}) == 72
    emb = world.embed([world.question(2, 1, 0)])
    assert emb[0, 2] == 1
    assert emb[0, 6 + 1] == 1
    assert emb[0, :10].sum() == 2
    with pytest.raises(ValueError, match="not a problem"):
        world.parse("what is love ?")


def test_solver_practice_and_forgetting_closed_form() -> None:
    world = ToyWorld(num_difficulties=4, num_variants=2)
    solver = ToySolver(world, init_skill=2.0, gain=0.3, width=1.0, forget=0.1, floor=1.5)
    q = world.question(1, 2, 0)  # template 1, difficulty 3
    solver.train_on([q, q])
    s = 2.0 - 0.1 * 0.5
    close = math.exp(-((3 - s) ** 2) / 2)
    expected = s + 0.3 * close / 1 + 0.3 * close / 2  # the repeat counts once already
    assert float(solver.skill[1]) == pytest.approx(expected)
    assert float(solver.skill[0]) == pytest.approx(s)  # no practice: forgetting only
    solver.train_on([])
    assert float(solver.practice[1, 2, 0]) == pytest.approx(2 * 0.9)
    p = float(solver.solve_prob(torch.tensor([0]), torch.tensor([0]))[0])
    assert p == pytest.approx(1 / (1 + math.exp(-1.5 * (s - 0.1 * (s - 1.5) - 1))))
    answers = solver.answer([q] * 400, 4, torch.Generator().manual_seed(0))
    rate = np.mean([[a == world.answer(q) for a in row] for row in answers])
    assert rate == pytest.approx(float(solver.solve_prob(torch.tensor([1]), torch.tensor([2]))[0]), abs=0.04)


@pytest.mark.parametrize("policy", ["fifo", "reservoir"])
def test_buffer_resume_continues_exactly(policy: str) -> None:
    items = [f"q{i}" for i in range(50)]
    a = ProblemBuffer(10, policy, seed=3)
    a.add(items[:25])
    b = ProblemBuffer(10, policy, seed=99)
    b.load_state_dict(a.state_dict())
    a.add(items[25:])
    b.add(items[25:])
    assert a.items() == b.items()
    assert len(a) == 10
    assert a.num_added == 50
    if policy == "fifo":
        assert a.items() == items[-10:]


def test_reservoir_is_uniform() -> None:
    hits = np.zeros(20)
    for seed in range(400):
        buf = ProblemBuffer(5, "reservoir", seed=seed)
        buf.add([str(i) for i in range(20)])
        for x in buf.items():
            hits[int(x)] += 1
    # each item is kept with probability 5/20: 100 expected hits out of 400 runs, sd ~ 8.7
    assert np.all(np.abs(hits - 100) < 40)


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="policy"):
        ProblemBuffer(4, "lifo")
    with pytest.raises(ValueError, match="capacity"):
        ProblemBuffer(0)
    with pytest.raises(TypeError, match="strings"):
        ProblemBuffer(4).add([1])
    with pytest.raises(ValueError, match="num_variants"):
        ToyWorld(num_variants=0)
    with pytest.raises(ValueError, match="m="):
        ToySolver(ToyWorld(2, 2)).answer(["x"], 1, torch.Generator())
