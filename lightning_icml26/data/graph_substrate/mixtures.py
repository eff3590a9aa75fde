"""Training mixtures: one task (isolated), tasks on separate graphs (naive multi-task), one graph in several roles.

The three mixtures hold the same number of samples of each task and draw graphs of the same kinds and
sizes; they differ only in which samples share a graph. In the naive multi-task mixture every sample
has a graph of its own. In the interleaved mixture the graph of an algorithm sample is re-used for
one consistency and one extraction sample (as far as the role ratios provide them), so the model meets
the same structure as a question, as facts to verify and as a description to write down.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

import networkx as nx

from lightning_icml26.data.graph_substrate.roles import NLGRAPH_TASKS, TRAVERSAL_TASKS, GraphTask, RoleTaskGenerator
from lightning_icml26.data.graph_substrate.sampling import sample_graph
from lightning_icml26.data.graph_substrate.schema import GRAPH_KINDS

__all__ = ["MIXTURES", "TASK_ROLES", "build_mixture", "make_task", "role_counts"]

MIXTURES = ("isolated", "multitask", "interleaved")
"""The three training regimes."""

TASK_ROLES: dict[str, str] = dict.fromkeys((*NLGRAPH_TASKS, *TRAVERSAL_TASKS), "algorithm")
TASK_ROLES |= {"consistency": "consistency", "extraction": "extraction"}
"""The role of every task name."""

_TRAVERSAL_KIND = "scene"


def task_kind(task: str) -> str:
    """The graph kind an algorithm task is asked on (NLGraph tasks their own kind, traversal tasks scenes)."""
    return NLGRAPH_TASKS.get(task, _TRAVERSAL_KIND)


def make_task(gen: RoleTaskGenerator, task: str, graph: nx.Graph, kind: str) -> GraphTask:
    """One sample of ``task`` on ``graph`` (of ``kind``) drawn from ``gen``.

    Raises:
        ValueError: for an unknown task name.
    """
    if task not in TASK_ROLES:
        raise ValueError(f"task must be one of {sorted(TASK_ROLES)}, got {task!r}")
    if task == "consistency":
        return gen.consistency(graph, kind)
    if task == "extraction":
        return gen.extraction(graph, kind)
    if task in NLGRAPH_TASKS and kind == NLGRAPH_TASKS[task]:
        return gen.nlgraph(graph, kind, task)
    return gen.traversal(graph, kind, "cycle" if task == "cycle" else task)


def role_counts(num_samples: int, role_ratios: Mapping[str, float]) -> dict[str, int]:
    """Samples per role: ``num_samples`` split by the ratios (largest remainders get the leftovers).

    Raises:
        ValueError: for an unknown role, a negative ratio or ratios that do not sum to 1.

    Example:
        >>> role_counts(10, {"algorithm": 0.5, "consistency": 0.25, "extraction": 0.25})
        {'algorithm': 5, 'consistency': 3, 'extraction': 2}
    """
    roles = ("algorithm", "consistency", "extraction")
    for role, ratio in role_ratios.items():
        if role not in roles:
            raise ValueError(f"role_ratios has an unknown role {role!r}; the roles are {roles}")
        if not isinstance(ratio, int | float) or ratio < 0:
            raise ValueError(f"role_ratios[{role!r}] must be a number >= 0, got {ratio!r}")
    total = sum(role_ratios.values())
    if not math.isclose(total, 1.0, abs_tol=1e-6):
        raise ValueError(f"role_ratios must sum to 1, got {dict(role_ratios)} (sum {total})")
    raw = {r: num_samples * float(role_ratios[r]) for r in role_ratios}
    counts = {r: int(math.floor(v)) for r, v in raw.items()}
    for r in sorted(raw, key=lambda r: (counts[r] - raw[r], roles.index(r)))[: num_samples - sum(counts.values())]:
        counts[r] += 1
    return counts


def _check_mixture(
    mixture: str, tasks: list[str], role_ratios: Mapping[str, float], num_samples: int, num_nodes: tuple[int, int]
) -> tuple[dict[str, list[str]], dict[str, int]]:
    if mixture not in MIXTURES:
        raise ValueError(f"mixture must be one of {MIXTURES}, got {mixture!r}")
    tasks = list(tasks)
    unknown = [t for t in tasks if t not in TASK_ROLES]
    if not tasks or unknown:
        raise ValueError(f"tasks must be a non-empty list of {sorted(TASK_ROLES)}, got {tasks!r}")
    if mixture == "isolated" and len(tasks) != 1:
        raise ValueError(f"an isolated mixture trains exactly one task, got tasks={tasks!r}")
    lo, hi = num_nodes
    if not 2 <= lo <= hi:
        raise ValueError(f"num_nodes must be a range (lo, hi) with 2 <= lo <= hi, got {num_nodes!r}")
    counts = role_counts(num_samples, role_ratios)
    by_role = {role: [t for t in tasks if TASK_ROLES[t] == role] for role in ("algorithm", "consistency", "extraction")}
    for role, ratio in role_ratios.items():
        if ratio > 0 and not by_role[role]:
            raise ValueError(
                f"role_ratios gives {ratio} of the samples to role {role!r}, but no task in {tasks} has it"
            )
    for role, names in by_role.items():
        if names and not role_ratios.get(role, 0) > 0:
            raise ValueError(f"tasks {names} have role {role!r}, but role_ratios gives it no samples")
    return by_role, counts


def build_mixture(
    mixture: str,
    tasks: Sequence[str],
    role_ratios: Mapping[str, float],
    num_samples: int,
    num_nodes: tuple[int, int] = (5, 8),
    edge_prob: float = 0.3,
    seed: int = 0,
    style: str = "simple",
    kinds: Sequence[str] | None = None,
) -> list[GraphTask]:
    """Generate the samples of one mixture.

    Args:
        mixture: ``isolated`` (exactly one task), ``multitask`` or ``interleaved``.
        tasks: task names (see :data:`TASK_ROLES`); algorithm tasks are drawn uniformly within the role.
        role_ratios: fraction of samples per role, over the roles of ``tasks``; must sum to 1.
        num_samples: number of samples.
        num_nodes: inclusive range of graph sizes.
        edge_prob: edge probability of the random graphs.
        seed: seed of graphs and tasks.
        style: ``simple`` or ``reasoning`` answers.
        kinds: graph kinds drawn for consistency and extraction samples that do not re-use an algorithm
            sample's graph; default: the kinds of the algorithm tasks (``scene`` when there are none).

    Returns:
        The samples in random order.

    Raises:
        ValueError: for an unknown mixture or task, an isolated mixture with several tasks, ratios that
            do not sum to 1 or that give samples to a role without tasks (or none to a role with tasks).

    Example:
        >>> tasks = build_mixture("interleaved", ["connectivity", "consistency"],
        ...                       {"algorithm": 0.5, "consistency": 0.5}, num_samples=4)
        >>> sorted(t.task for t in tasks)
        ['connectivity', 'connectivity', 'consistency', 'consistency']
    """
    by_role, counts = _check_mixture(mixture, list(tasks), role_ratios, num_samples, num_nodes)
    lo, hi = num_nodes
    rng = random.Random(seed)
    gen = RoleTaskGenerator(seed=rng.randrange(2**31), style=style)
    if kinds is not None and (not kinds or any(k not in GRAPH_KINDS for k in kinds)):
        raise ValueError(f"kinds must be a non-empty list of {sorted(GRAPH_KINDS)}, got {kinds!r}")
    kinds = list(kinds or [task_kind(t) for t in by_role["algorithm"]] or [_TRAVERSAL_KIND])

    def fresh(kind: str) -> nx.Graph:
        while True:
            graph = sample_graph(kind, rng.randint(lo, hi), edge_prob, rng)
            if graph.number_of_edges() > 0:
                return graph

    samples: list[GraphTask] = []
    algo = [rng.choice(by_role["algorithm"]) for _ in range(counts.get("algorithm", 0))]
    graphs = []
    for name in algo:
        kind = task_kind(name)
        graph = fresh(kind)
        graphs.append((graph, kind))
        samples.append(make_task(gen, name, graph, kind))
    for role in ("consistency", "extraction"):
        for i in range(counts.get(role, 0)):
            if mixture == "interleaved" and i < len(graphs):
                graph, kind = graphs[i]  # the same graph in another role
            else:
                kind = rng.choice(kinds)
                graph = fresh(kind)
            samples.append(make_task(gen, role, graph, kind))
    rng.shuffle(samples)
    return samples
