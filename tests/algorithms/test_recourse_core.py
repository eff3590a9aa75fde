"""ASR-ICL core: projection properties (Hypothesis), budget exactness, the importance update, errors, determinism."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightning_icml26.algorithms.recourse import (
    ASRICL,
    RACOS,
    ActionabilitySpec,
    BudgetExhausted,
    CountingOracle,
    FullZO,
    SearchState,
    StopSearch,
    subspace_racos,
    update_importance,
)


def _random_spec(rng: np.random.Generator, d: int) -> ActionabilitySpec:
    lower = rng.uniform(-2, 0, d)
    upper = lower + rng.uniform(0.5, 3, d)
    grids: list[tuple[float, ...] | None] = []
    for j in range(d):
        if rng.random() < 0.4:
            grids.append(tuple(np.sort(rng.choice(np.linspace(lower[j], upper[j], 7), size=4, replace=False))))
        else:
            grids.append(None)
    return ActionabilitySpec(
        tuple(lower), tuple(upper), tuple(rng.random(d) < 0.7), tuple(rng.integers(-1, 2, d)), tuple(grids)
    )


def _valid_row(spec: ActionabilitySpec, rng: np.random.Generator) -> np.ndarray:
    x = rng.uniform(spec.lower, spec.upper)
    for j, grid in enumerate(spec.grids):
        if grid is not None:
            x[j] = rng.choice(grid)
    return x


_UNIT = st.floats(0.0, 1.0, allow_nan=False)


@st.composite
def _spec_row_and_proposals(draw: st.DrawFn) -> tuple[ActionabilitySpec, np.ndarray, np.ndarray]:
    """A random spec (bounds, immutables, monotone directions, some grids), a row that obeys it, wild proposals."""
    d = draw(st.integers(1, 6))
    lower = np.array([draw(st.floats(-2.0, 0.0)) for _ in range(d)])
    upper = lower + np.array([draw(st.floats(0.5, 3.0)) for _ in range(d)])
    grids: list[tuple[float, ...] | None] = []
    x = np.empty(d)
    for j in range(d):
        if draw(st.booleans()):
            points = np.linspace(lower[j], upper[j], 7)
            chosen = draw(st.lists(st.integers(0, 6), min_size=1, max_size=7, unique=True))
            grid = tuple(float(v) for v in np.sort(points[chosen]))
            grids.append(grid)
            x[j] = grid[draw(st.integers(0, len(grid) - 1))]
        else:
            grids.append(None)
            x[j] = lower[j] + draw(_UNIT) * (upper[j] - lower[j])
    mutable = tuple(draw(st.booleans()) for _ in range(d))
    direction = tuple(draw(st.sampled_from([-1, 0, 1])) for _ in range(d))
    spec = ActionabilitySpec(tuple(lower), tuple(upper), mutable, direction, tuple(grids))
    offsets = draw(st.lists(st.floats(-10.0, 10.0), min_size=5 * d, max_size=5 * d))
    return spec, x, x + np.array(offsets).reshape(5, d)


@settings(max_examples=150, deadline=None, database=None)
@given(_spec_row_and_proposals())
def test_projection_properties_on_random_specs(case: tuple[ActionabilitySpec, np.ndarray, np.ndarray]) -> None:
    spec, x, proposals = case
    out = spec.project(x, proposals)
    mutable, direction = np.array(spec.mutable), np.array(spec.direction)
    np.testing.assert_array_equal(out[:, ~mutable], np.broadcast_to(x[~mutable], out[:, ~mutable].shape))
    assert np.all(out[:, direction > 0] >= x[direction > 0])
    assert np.all(out[:, direction < 0] <= x[direction < 0])
    assert np.all(out >= np.array(spec.lower) - 1e-12)
    assert np.all(out <= np.array(spec.upper) + 1e-12)
    for j, grid in enumerate(spec.grids):
        if grid is not None:
            assert np.isin(out[:, j], grid).all()
    np.testing.assert_array_equal(spec.project(x, out), out)  # idempotent
    np.testing.assert_array_equal(spec.project(x, x), x)
    spec.check(out)
    lo, hi = spec.bounds(x)
    assert np.all(out >= lo - 1e-12)
    assert np.all(out <= hi + 1e-12)


def test_projection_of_a_continuous_free_feature_is_the_clip() -> None:
    spec = ActionabilitySpec((0.0,), (2.0,), (True,), (0,), (None,))
    x = np.array([1.0])
    for value in np.linspace(-3, 5, 17):
        assert spec.project(x, np.array([value]))[0] == min(max(value, 0.0), 2.0)


def test_cost_is_normalised_l1_plus_l0_against_numpy() -> None:
    rng = np.random.default_rng(1)
    spec = _random_spec(rng, 5)
    x = _valid_row(spec, rng)
    x_new = spec.project(x, x + rng.normal(0, 2, 5))
    expected = 0.0
    for j in range(5):
        if spec.grids[j] is None:
            expected += abs(x_new[j] - x[j]) / (spec.upper[j] - spec.lower[j])
        else:
            expected += float(x_new[j] != x[j])
    assert float(spec.cost(x, x_new)) == pytest.approx(expected)


def test_counting_oracle_stops_exactly_at_the_budget() -> None:
    calls: list[int] = []

    def oracle(X: np.ndarray) -> np.ndarray:
        calls.append(len(X))
        return np.zeros(len(X), int)

    counting = CountingOracle(oracle, budget=7)
    counting(np.zeros((4, 2)))
    with pytest.raises(BudgetExhausted):
        counting(np.zeros((4, 2)))
    assert counting.queries == 4
    assert sum(calls) == 4
    counting(np.zeros((3, 2)))
    assert counting.queries == 7
    assert counting.remaining == 0
    with pytest.raises(BudgetExhausted):
        counting(np.zeros((1, 2)))
    assert sum(calls) == 7


@pytest.mark.parametrize("generator", [ASRICL, FullZO])
def test_generators_never_pass_the_budget(generator: type) -> None:
    spec = ActionabilitySpec((0,) * 4, (1,) * 4, (True,) * 4, (0,) * 4, (None,) * 4)
    seen = {"rows": 0}

    def never(X: np.ndarray) -> np.ndarray:  # never flips: the whole budget is spent
        seen["rows"] += len(X)
        return np.zeros(len(X), int)

    out = generator(never, spec, classes=[0, 1], budget=23, seed=3).generate(np.full((2, 4), 0.5), 1)
    assert out.queries.tolist() == [23, 23]
    assert seen["rows"] == 46
    assert not out.found.any()


def test_importance_update_formula_and_trace() -> None:
    importance = np.array([0.3, -0.2, 0.1, 0.0])
    new = update_importance(importance, np.array([1, 3]), -0.8, 0.5)
    np.testing.assert_allclose(new, [0.3, 0.5 * -0.2 + 0.5 * -0.8 / 2, 0.1, 0.5 * -0.8 / 2])
    spec = ActionabilitySpec((0,) * 9, (1,) * 9, (True,) * 9, (0,) * 9, (None,) * 9)
    gen = ASRICL(lambda X: (X[:, 7] > 0.9).astype(int), spec, classes=[0, 1], seed=0, refine=False)
    out = gen.generate(np.full((1, 9), 0.1), 1)
    assert len(gen.trace_) >= 2
    assert gen.k == 3
    for chosen, before, reward, after in gen.trace_:
        manual = before.copy()
        for j in chosen:
            manual[j] = 0.5 * before[j] + 0.5 * reward / len(chosen)
        np.testing.assert_allclose(after, manual)
    # a round without a flip scores -(1 + lam * cost) <= -1; a flip scores -lam * cost > -1 and stops the loop
    assert all(reward <= -1.0 for _, _, reward, _ in gen.trace_[:-1])
    assert out.found[0]
    assert -1.0 < gen.trace_[-1][2] <= 0.0


def test_racos_minimises_a_mixed_quadratic_better_than_random_search() -> None:
    lower, upper, integer = np.zeros(4), np.array([1, 1, 9, 9.0]), np.array([False, False, True, True])
    target = np.array([0.3, 0.8, 2, 7])

    def f(z: np.ndarray) -> float:
        return float(((z - target) ** 2 / (upper - lower + 1) ** 2).sum())

    racos_best, random_best = [], []
    for seed in range(5):
        rng = np.random.default_rng(seed)
        racos_best.append(RACOS(lower, upper, integer).minimize(f, 80, rng).value)
        samples = np.column_stack([rng.uniform(0, 1, (80, 2)), rng.integers(0, 10, (80, 2))])
        random_best.append(min(f(z) for z in samples))
    assert np.median(racos_best) < 0.2 * np.median(random_best)


def test_seeded_runs_are_deterministic_and_seeds_matter() -> None:
    rng = np.random.default_rng(5)
    spec = ActionabilitySpec((0,) * 6, (1,) * 6, (True,) * 5 + (False,), (1, 0, 0, -1, 0, 0), (None,) * 6)
    w = rng.normal(size=6)
    oracle = lambda X: (X @ w > 0.4).astype(int)  # noqa: E731
    X = rng.uniform(0.2, 0.8, (4, 6))
    X = X[oracle(X) == 0]
    a = ASRICL(oracle, spec, classes=[0, 1], seed=11).generate(X, 1)
    b = ASRICL(oracle, spec, classes=[0, 1], seed=11).generate(X, 1)
    c = ASRICL(oracle, spec, classes=[0, 1], seed=12).generate(X, 1)
    np.testing.assert_array_equal(a.counterfactuals, b.counterfactuals)
    np.testing.assert_array_equal(a.queries, b.queries)
    assert not np.array_equal(a.counterfactuals, c.counterfactuals)


def test_multiclass_targets_given_or_cheapest_class() -> None:
    spec = ActionabilitySpec((0, 0), (3, 3), (True, True), (0, 0), (None, None))
    oracle = lambda X: np.minimum(np.floor(X[:, 0]), 2).astype(int)  # noqa: E731
    x = np.array([[0.5, 1.0]])
    out = ASRICL(oracle, spec, classes=[0, 1, 2], seed=0).generate(x, 2)
    assert out.found[0]
    assert out.labels[0] == 2
    assert out.counterfactuals[0, 0] >= 2.0
    cheapest = ASRICL(oracle, spec, classes=[0, 1, 2], seed=0).generate(x, None)
    assert cheapest.found[0]
    assert cheapest.targets[0] == cheapest.labels[0] == 1
    assert cheapest.cost[0] < out.cost[0]


def test_clear_errors() -> None:
    spec = ActionabilitySpec((0, 0), (1, 1), (True, True), (0, 0), (None, None))
    oracle = lambda X: (X[:, 0] > 0.5).astype(int)  # noqa: E731
    gen = ASRICL(oracle, spec, classes=[0, 1])
    with pytest.raises(ValueError, match="spec describes 2 features but X has 3"):
        gen.generate(np.zeros((1, 3)), 1)
    with pytest.raises(ValueError, match="breaks its own spec"):
        gen.generate(np.array([[2.0, 0.0]]), 1)
    with pytest.raises(ValueError, match="equals the current label"):
        gen.generate(np.zeros((1, 2)), 0)
    with pytest.raises(ValueError, match="not a known class"):
        gen.generate(np.zeros((1, 2)), 5)
    with pytest.raises(ValueError, match="budget must be an int >= 1"):
        ASRICL(oracle, spec, classes=[0, 1], budget=0)
    with pytest.raises(ValueError, match="one label per row"):
        ASRICL(lambda X: np.zeros((len(X), 2)), spec, classes=[0, 1]).generate(np.zeros((1, 2)), 1)
    with pytest.raises(ValueError, match="grids must have 2 entries"):
        ActionabilitySpec((0, 0), (1, 1), (True, True), (0, 0), (None,))
    with pytest.raises(ValueError, match="direction entries"):
        ActionabilitySpec((0,), (1,), (True,), (2,), (None,))


def test_full_zo_gets_the_same_refinement_as_asr_icl() -> None:
    # only feature 0 matters (flip iff x_0 > 0.6); from x = 0.2 the cheapest recourse moves x_0 to 0.6: cost 0.4
    spec = ActionabilitySpec((0.0,) * 6, (1.0,) * 6, (True,) * 6, (0,) * 6, (None,) * 6)
    calls = {"rows": 0}

    def oracle(X: np.ndarray) -> np.ndarray:
        calls["rows"] += len(X)
        return (X[:, 0] > 0.6).astype(int)

    X = np.full((3, 6), 0.2)
    raw = FullZO(oracle, spec, classes=[0, 1], seed=1, refine=False).generate(X, 1)
    assert raw.found.all()
    assert raw.queries.tolist() == [150] * 3
    assert (np.abs(raw.counterfactuals - X) > 1e-12).sum(1).min() > 1  # RACOS alone leaves other features moved
    calls["rows"] = 0
    refined = FullZO(oracle, spec, classes=[0, 1], seed=1).generate(X, 1)
    assert calls["rows"] == refined.queries.sum()
    assert np.all(refined.queries <= 150)
    assert np.all(refined.queries >= 150 - (6 + 5))
    asr = ASRICL(oracle, spec, classes=[0, 1], seed=1).generate(X, 1)
    for out in (refined, asr):
        assert out.found.all()
        moved = np.abs(out.counterfactuals - X) > 1e-12
        assert moved[:, 1:].sum() == 0
        assert moved[:, 0].all()
        # five bisection steps from a flip at most 0.8 away: within 0.8 / 32 of the optimum 0.4
        assert np.all(out.cost > 0.4)
        assert np.all(out.cost <= 0.4 + 0.8 / 32 + 1e-12)
    assert np.all(refined.cost <= raw.cost)


def test_subspace_racos_stop_and_full_zo_arguments() -> None:
    spec = ActionabilitySpec((0.0,) * 3, (1.0,) * 3, (True,) * 3, (0,) * 3, (None,) * 3)
    counting = CountingOracle(lambda X: np.zeros(len(X), int), budget=10)
    state = SearchState(np.zeros(3), spec, counting, lambda label: label == 1, lam=0.25)
    with pytest.raises(StopSearch):
        subspace_racos(state, np.arange(3), 5, np.random.default_rng(0), stop=lambda: counting.queries >= 2)
    assert counting.queries == 2
    with pytest.raises(ValueError, match="refine_steps must be an int >= 0, got -1"):
        FullZO(lambda X: X[:, 0] > 0, spec, classes=[0, 1], refine_steps=-1)
