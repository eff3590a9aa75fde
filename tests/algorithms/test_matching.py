"""Matching markets: deferred acceptance against brute force, the collision rule, regret, Way-SE and errors."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
import pytest
from matching.games import HospitalResident

from lightning_icml26.algorithms.matching import (
    CAUCB,
    ETGS,
    CentralizedETCGS,
    CentralizedUCBGS,
    MatchingMarketEnv,
    MatchingPolicy,
    WaySE,
    WaySE2S,
    blocking_pairs,
    deferred_acceptance,
    market_schedule,
    run_market,
    stable_matching,
)


def _all_matchings(n_players: int, n_arms: int) -> Iterator[np.ndarray]:
    """Every matching in which each player gets a distinct arm or stays unmatched (-1)."""
    for choice in itertools.product(range(-1, n_arms), repeat=n_players):
        taken = [a for a in choice if a >= 0]
        if len(taken) == len(set(taken)):
            yield np.array(choice)


def _is_stable(utilities: np.ndarray, arm_rank: np.ndarray, matching: np.ndarray) -> bool:
    n_players, n_arms = utilities.shape
    holder = {a: p for p, a in enumerate(matching) if a >= 0}
    for p in range(n_players):
        for k in range(n_arms):
            prefers = matching[p] < 0 or utilities[p, k] > utilities[p, matching[p]]
            arm_prefers = k not in holder or arm_rank[k, p] < arm_rank[k, holder[k]]
            if prefers and arm_prefers:
                return False
    return True


def _random_market(rng: np.random.Generator, n_players: int, n_arms: int) -> tuple[np.ndarray, np.ndarray]:
    utilities = np.stack([rng.permutation(n_arms) for _ in range(n_players)]).astype(float)
    arm_rank = np.stack([rng.permutation(n_players) for _ in range(n_arms)])
    return utilities, arm_rank


@pytest.mark.parametrize(("n_players", "n_arms"), [(1, 1), (2, 2), (2, 3), (3, 3), (3, 4), (4, 4)])
def test_deferred_acceptance_is_stable_and_side_optimal_against_brute_force(n_players: int, n_arms: int) -> None:
    rng = np.random.default_rng(n_players * 10 + n_arms)
    for _ in range(15):
        utilities, arm_rank = _random_market(rng, n_players, n_arms)
        stable = [m for m in _all_matchings(n_players, n_arms) if _is_stable(utilities, arm_rank, m)]
        assert stable
        player_opt = stable_matching(utilities, arm_rank)
        arm_opt = stable_matching(utilities, arm_rank, proposing="arms")
        assert _is_stable(utilities, arm_rank, player_opt)
        assert _is_stable(utilities, arm_rank, arm_opt)

        def util(m: np.ndarray, p: int, utilities: np.ndarray = utilities) -> float:
            return -np.inf if m[p] < 0 else utilities[p, m[p]]

        for m in stable:  # every player weakly prefers the player-optimal matching, every arm the arm-optimal one
            assert all(util(player_opt, p) >= util(m, p) for p in range(n_players))
            for k in range(n_arms):
                holder_m = np.flatnonzero(m == k)
                holder_opt = np.flatnonzero(arm_opt == k)
                rank_m = arm_rank[k, holder_m[0]] if holder_m.size else n_players
                rank_opt = arm_rank[k, holder_opt[0]] if holder_opt.size else n_players
                assert rank_opt <= rank_m


@pytest.mark.parametrize("optimal", ["players", "arms"])
def test_deferred_acceptance_equals_the_matching_package(optimal: str) -> None:
    rng = np.random.default_rng(17)
    for n_players, n_arms in [(3, 3), (4, 6), (6, 6)]:
        utilities, arm_rank = _random_market(rng, n_players, n_arms)
        players = {f"p{p}": [f"a{k}" for k in np.argsort(-utilities[p], kind="stable")] for p in range(n_players)}
        arms = {f"a{k}": [f"p{p}" for p in np.argsort(arm_rank[k])] for k in range(n_arms)}
        game = HospitalResident.create_from_dictionaries(players, arms, {f"a{k}": 1 for k in range(n_arms)})
        solution = game.solve(optimal="resident" if optimal == "players" else "hospital")
        expected = np.full(n_players, -1)
        for arm, held in solution.items():
            for player in held:
                expected[int(player.name[1:])] = int(arm.name[1:])
        np.testing.assert_array_equal(stable_matching(utilities, arm_rank, proposing=optimal), expected)


def test_blocking_pairs_against_a_direct_check_and_present_players() -> None:
    rng = np.random.default_rng(3)
    for _ in range(40):
        utilities, arm_rank = _random_market(rng, 3, 4)
        matchings = list(_all_matchings(3, 4))
        m = matchings[rng.integers(len(matchings))]
        assert (not blocking_pairs(utilities, arm_rank, m).any()) == _is_stable(utilities, arm_rank, m)
    utilities = np.array([[0.9, 0.5], [0.8, 0.6]])
    arm_rank = np.array([[1, 0], [0, 1]])
    # with player 1 absent, player 0 alone at arm 0 is stable; with both, (1 at arm 0) blocks
    assert not blocking_pairs(utilities, arm_rank, np.array([0, -1]), np.array([True, False])).any()
    assert blocking_pairs(utilities, arm_rank, np.array([0, -1])).any()


def test_deferred_acceptance_rejects_non_permutations() -> None:
    with pytest.raises(ValueError, match="proposer_order"):
        deferred_acceptance(np.array([[0, 0]]), np.array([[0], [0]]))
    with pytest.raises(ValueError, match="acceptor_rank"):
        deferred_acceptance(np.array([[0, 1]]), np.array([[1], [0]]))


def test_collision_rule_on_hand_built_steps() -> None:
    ranks = np.array([[2, 0, 1], [0, 1, 2], [1, 2, 0]])  # arm 0 prefers player 1, then 2, then 0
    env = MatchingMarketEnv(3, 3, horizon=10, arm_preferences=ranks, seed=0)
    accepted, winners = env.resolve(np.array([[0, 0, 0]]))
    assert accepted.tolist() == [[False, True, False]]
    assert winners.tolist() == [[1, -1, -1]]
    accepted, winners = env.resolve(np.array([[1, 1, 2]]))  # arm 1 prefers player 0
    assert accepted.tolist() == [[True, False, True]]
    assert winners.tolist() == [[-1, 0, 2]]
    accepted, winners = env.resolve(np.array([[-1, 2, 2]]))  # arm 2 prefers player 2 over player 1
    assert accepted.tolist() == [[False, False, True]]
    assert winners.tolist() == [[-1, -1, 2]]
    # observations: rewards only where accepted, with the accepted arm's mean
    rewards, means = env.rewards(np.array([[-1, 2, 2]]), accepted)
    assert rewards[0, :2].tolist() == [0.0, 0.0]
    assert means[0, 2] == env.utilities[0, 2, 2]


class _FixedArms(MatchingPolicy):
    """Player p always proposes to arm p."""

    name = "fixed"

    def act(self, t: int, local_time: np.ndarray, present: np.ndarray) -> np.ndarray:
        return np.where(present, np.arange(self.n_players)[None, :], -1)


def test_regret_of_a_fixed_policy_matches_its_closed_form() -> None:
    env = MatchingMarketEnv(3, 4, horizon=500, gap=0.1, n_runs=2, seed=5, arrival_times=np.array([0, 100, 250]))
    run = run_market(env, _FixedArms())
    for r in range(2):
        expected = np.zeros(3)
        for segment_start, segment_end in ((0, 100), (100, 250), (250, 500)):
            present = env.arrival[r] <= segment_start
            optimal = stable_matching(env.utilities[r], env.arm_rank[r], present)
            for p in np.flatnonzero(present):
                gain = env.utilities[r, p, optimal[p]] if optimal[p] >= 0 else 0.0
                expected[p] += (segment_end - segment_start) * (gain - env.utilities[r, p, p])
        np.testing.assert_allclose(run.regret[r], expected, rtol=1e-12, atol=1e-9)
    assert run.collisions[:, -1].tolist() == [0.0, 0.0]


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_way_se_reaches_the_stable_matching_for_any_arrival_order_without_noise(order: tuple[int, ...]) -> None:
    arrival = np.zeros(3, dtype=np.int64)
    arrival[list(order)] = [0, 40, 80]
    env = MatchingMarketEnv(3, 3, horizon=1500, gap=0.2, noise_std=1e-9, arrival_times=arrival, n_runs=4, seed=11)
    run = run_market(env, WaySE(seed=2), record=True)
    stable = np.stack([stable_matching(env.utilities[r], env.arm_rank[r]) for r in range(4)])
    realised = np.where(run.steps["accepted"], run.steps["arms"], -1)[80:]  # after the last arrival
    at_stable = np.all(realised == stable[None], axis=-1)  # (T', R)
    bound = 3 * (3 * 3 + 2 * 3) + 4 * 3  # DA through collisions (K arms x patience K) plus exploration cycles
    first = at_stable.argmax(axis=0)
    assert at_stable.any(axis=0).all()
    assert (first <= bound).all(), first
    assert at_stable[first.max() :].mean() > 0.9  # only the one-cycle re-explorations at epoch ends leave it


@pytest.mark.parametrize(
    "policy",
    [WaySE(seed=3), CentralizedETCGS(seed=3), CentralizedUCBGS(seed=3), CAUCB(seed=3), ETGS(seed=3)],
    ids=lambda p: p.name,
)
def test_seeded_policies_are_deterministic_and_end_stable(policy: MatchingPolicy) -> None:
    def once() -> dict[str, np.ndarray]:
        env = MatchingMarketEnv(3, 4, horizon=4000, gap=0.2, noise_std=0.1, n_runs=3, seed=7)
        return run_market(env, policy, record=True).steps

    first, second = once(), once()
    for key in first:
        np.testing.assert_array_equal(first[key], second[key])
    assert not first["unstable"][-1].any()  # a static market: every policy ends at a stable matching


def test_way_se_2s_is_deterministic_in_a_two_sided_market_and_one_sided_policies_are_refused() -> None:
    def once() -> np.ndarray:
        env = MatchingMarketEnv(
            3,
            3,
            horizon=3000,
            gap=0.2,
            noise_std=0.1,
            n_runs=2,
            seed=1,
            two_sided=True,
            arrivals="uniform",
            departures=True,
        )
        return run_market(env, WaySE2S(seed=4), record=True).steps["arms"]

    np.testing.assert_array_equal(once(), once())
    env = MatchingMarketEnv(2, 2, horizon=10, two_sided=True)
    with pytest.raises(ValueError, match="arm side"):
        run_market(env, WaySE())


def test_schedules_respect_their_windows() -> None:
    rng = np.random.default_rng(0)
    for pattern in ("uniform", "staggered", "poisson"):
        arrival, departure = market_schedule(pattern, 10_000, 5, 20, rng, departures=True)
        assert (arrival.min(axis=1) == 0).all()
        assert (arrival < 2500).all()
        leaving = departure < 10_000
        assert leaving.any()
        assert (departure[leaving] >= 5000).all()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_players": 3, "n_arms": 2}, "K >= N"),
        ({"gap": 0.0}, "gap"),
        ({"horizon": 0}, "horizon"),
        ({"arrivals": "bursty"}, "arrivals"),
        ({"arm_preferences": np.array([[0, 0], [1, 0]])}, "arm_preferences"),
        ({"arrival_times": np.array([0, 100])}, "arrival_times"),
        ({"arrival_times": np.array([-1, 0])}, "arrival_times"),
        ({"departure_times": np.array([5, 101])}, "departure_times"),
        ({"noise": "poisson"}, "noise"),
        ({"noise": "bernoulli", "gap": 0.5, "n_arms": 3}, "gap"),
        ({"departures": True}, "departures"),
    ],
)
def test_market_errors_name_the_argument(kwargs: dict, match: str) -> None:
    base = {"n_players": 2, "n_arms": 2, "horizon": 100}
    with pytest.raises(ValueError, match=match):
        MatchingMarketEnv(**{**base, **kwargs})


def test_policy_errors_name_the_argument() -> None:
    with pytest.raises(ValueError, match="confidence"):
        WaySE(confidence=0.0)
    with pytest.raises(ValueError, match="patience"):
        WaySE(patience=0)
    with pytest.raises(ValueError, match="forced_exponent"):
        WaySE2S(forced_exponent=1.5)
    with pytest.raises(ValueError, match="hesitation"):
        CAUCB(hesitation=1.0)


def test_the_arm_side_of_a_one_sided_policy_is_a_clear_error() -> None:
    policy = CAUCB()
    policy.reset(MatchingMarketEnv(2, 2, horizon=10))
    with pytest.raises(TypeError, match="CA-UCB.*no arm side"):
        policy.arm_priority(0, np.zeros((1, 2), dtype=int))
