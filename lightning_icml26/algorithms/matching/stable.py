"""Deferred acceptance (Gale-Shapley) and stability checks for one-to-one matching markets.

Players rank arms by utility (higher is better); arms rank players by a rank table (0 is the favourite). The
player-proposing run gives the player-optimal stable matching, the arm-proposing run the arm-optimal one.
Unmatched entries are ``-1``. The tests compare both against brute-force enumeration of every matching and
against the ``matching`` package (hospital-resident games with capacity one); the simulator uses this
implementation because it runs at every arrival and departure of every run and needs no dependency.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["blocking_pairs", "deferred_acceptance", "is_permutation_table", "stable_matching"]


def is_permutation_table(table: np.ndarray) -> bool:
    """True when every row of an integer table is a permutation of ``0..n-1`` (``n`` = row length)."""
    table = np.asarray(table)
    if table.ndim != 2 or not np.issubdtype(table.dtype, np.integer):
        return False
    return bool(np.array_equal(np.sort(table, axis=1), np.broadcast_to(np.arange(table.shape[1]), table.shape)))


def deferred_acceptance(proposer_order: np.ndarray, acceptor_rank: np.ndarray) -> np.ndarray:
    """Proposer-optimal stable matching by deferred acceptance.

    Args:
        proposer_order: ``(P, A)`` integer table, row ``i`` lists acceptors from most to least preferred.
        acceptor_rank: ``(A, P)`` integer table, ``acceptor_rank[a, i]`` is the rank of proposer ``i`` for
            acceptor ``a`` (0 = favourite); every row a permutation of ``0..P-1``.

    Returns:
        ``(P,)`` array: the acceptor matched to each proposer, ``-1`` when unmatched (only if ``P > A``).

    Example:
        >>> order = np.array([[0, 1], [0, 1]])      # both players prefer arm 0
        >>> rank = np.array([[1, 0], [0, 1]])       # arm 0 prefers player 1
        >>> deferred_acceptance(order, rank).tolist()
        [1, 0]
    """
    proposer_order = np.asarray(proposer_order)
    acceptor_rank = np.asarray(acceptor_rank)
    n_prop, n_acc = proposer_order.shape
    if not is_permutation_table(proposer_order):
        raise ValueError("proposer_order must be a (P, A) table whose rows are permutations of 0..A-1")
    if acceptor_rank.shape != (n_acc, n_prop) or not is_permutation_table(acceptor_rank):
        raise ValueError(
            f"acceptor_rank must be a ({n_acc}, {n_prop}) table whose rows are permutations of 0..{n_prop - 1}"
        )
    holder = np.full(n_acc, -1)
    next_choice = np.zeros(n_prop, dtype=int)
    free = list(range(n_prop))
    while free:
        i = free.pop()
        if next_choice[i] >= n_acc:
            continue  # rejected everywhere: stays unmatched
        a = int(proposer_order[i, next_choice[i]])
        next_choice[i] += 1
        current = holder[a]
        if current < 0:
            holder[a] = i
        elif acceptor_rank[a, i] < acceptor_rank[a, current]:
            holder[a] = i
            free.append(int(current))
        else:
            free.append(i)
    match = np.full(n_prop, -1)
    for a, i in enumerate(holder):
        if i >= 0:
            match[i] = a
    return match


def stable_matching(
    utilities: np.ndarray,
    arm_rank: np.ndarray,
    present: Sequence[bool] | np.ndarray | None = None,
    *,
    proposing: str = "players",
) -> np.ndarray:
    """Stable matching of the present players with all arms; ``-1`` for absent or unmatched players.

    Args:
        utilities: ``(N, K)`` player utilities (higher preferred; ties broken by the lower arm index).
        arm_rank: ``(K, N)`` rank of each player for each arm (0 = favourite).
        present: ``(N,)`` booleans; default all present.
        proposing: ``"players"`` (player-optimal) or ``"arms"`` (arm-optimal).

    Example:
        >>> u = np.array([[0.9, 0.5], [0.8, 0.6]])
        >>> stable_matching(u, np.array([[1, 0], [0, 1]])).tolist()
        [1, 0]
    """
    utilities = np.asarray(utilities, dtype=float)
    n_players = utilities.shape[0]
    present_mask = np.ones(n_players, bool) if present is None else np.asarray(present, bool)
    idx = np.flatnonzero(present_mask)
    result = np.full(n_players, -1)
    if idx.size == 0:
        return result
    order = np.argsort(-utilities[idx], axis=1, kind="stable")
    sub_rank = np.argsort(np.argsort(np.asarray(arm_rank)[:, idx], axis=1, kind="stable"), axis=1)
    if proposing == "players":
        result[idx] = deferred_acceptance(order, sub_rank)
    elif proposing == "arms":
        arm_order = np.argsort(sub_rank, axis=1)
        player_rank = np.argsort(order, axis=1)
        arm_match = deferred_acceptance(arm_order, player_rank)
        for arm, player in enumerate(arm_match):
            if player >= 0:
                result[idx[player]] = arm
    else:
        raise ValueError(f"proposing must be 'players' or 'arms', got {proposing!r}")
    return result


def blocking_pairs(
    utilities: np.ndarray, arm_rank: np.ndarray, matching: np.ndarray, present: np.ndarray | None = None
) -> np.ndarray:
    """Blocking pairs of a matching, batched: ``(..., N, K)`` booleans.

    Player ``p`` and arm ``k`` block when ``p`` is present, prefers ``k`` to its partner (or is unmatched) and
    ``k`` is free or prefers ``p`` to its holder. A matching is stable when no entry is true.

    Args:
        utilities: ``(..., N, K)`` player utilities.
        arm_rank: ``(..., K, N)`` arm ranks of players (0 = favourite).
        matching: ``(..., N)`` arm of each player or ``-1``.
        present: ``(..., N)`` booleans; default all present.

    Example:
        >>> u = np.array([[0.9, 0.5], [0.8, 0.6]])
        >>> bool(blocking_pairs(u, np.array([[1, 0], [0, 1]]), np.array([0, 1])).any())
        True
    """
    utilities = np.asarray(utilities, dtype=float)
    matching = np.asarray(matching)
    batch = matching.shape[:-1]
    n_players, n_arms = utilities.shape[-2:]
    u = np.broadcast_to(utilities, batch + (n_players, n_arms)).reshape(-1, n_players, n_arms)
    ranks = np.broadcast_to(np.asarray(arm_rank), batch + (n_arms, n_players)).reshape(-1, n_arms, n_players)
    m = matching.reshape(-1, n_players)
    here = (
        np.ones(m.shape, bool)
        if present is None
        else np.broadcast_to(np.asarray(present, bool), matching.shape).reshape(m.shape)
    )
    matched = (m >= 0) & here
    safe = np.where(matched, m, 0)
    rows = np.arange(m.shape[0])[:, None]
    own = np.where(matched, u[rows, np.arange(n_players), safe], -np.inf)
    player_wants = u > own[..., None]
    holder_rank = np.full((m.shape[0], n_arms), n_players)  # n_players: the arm is free
    r_idx, p_idx = np.nonzero(matched)
    holder_rank[r_idx, safe[r_idx, p_idx]] = ranks[r_idx, safe[r_idx, p_idx], p_idx]
    arm_wants = np.swapaxes(ranks, -1, -2) < holder_rank[:, None, :]
    return (player_wants & arm_wants & here[..., None]).reshape(batch + (n_players, n_arms))
