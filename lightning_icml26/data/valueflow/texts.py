"""A seeded generator of value-labelled texts with a planted intensity (a small offline stand-in for VIDB).

Every text states that a subject supports or opposes one leaf of a value hierarchy
(:mod:`~lightning_icml26.data.valueflow.hierarchies`), often naming its level-2 or level-1 value, with an
adverb that grows with the planted intensity ``|I|`` (``I`` in ``[-10, 10]``, positive for "supports").
The ``"train"`` and ``"heldout"`` splits use disjoint sentence templates and subjects, so held-out texts test
generalisation beyond the wording seen in training. Lexical variation comes from verbs, adverbs, subjects
and templates drawn by a seeded generator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from lightning_icml26.data.valueflow.hierarchies import (
    CROSS_THEORY_CONCEPTS,
    DIRECTIONS,
    THEORIES,
    check_label,
    label_paths,
)

__all__ = ["ADVERBS", "ValueTextCorpus", "make_value_texts", "node_ids"]

ADVERBS = ("barely", "mildly", "clearly", "strongly", "fiercely")
"""Adverbs of the five intensity buckets ``|I|`` in ``(0, 2], (2, 4], ..., (8, 10]``."""

_VERBS = {
    "supports": (
        ("values", "value"),
        ("stands up for", "stand up for"),
        ("defends", "defend"),
        ("cherishes", "cherish"),
    ),
    "opposes": (
        ("rejects", "reject"),
        ("dismisses", "dismiss"),
        ("works against", "work against"),
        ("scorns", "scorn"),
    ),
}
_TEMPLATES = {
    "train": (
        "{subj} {adv} {verb} {leaf}.",
        "{subj} {adv} {verb} {leaf}, out of a view of {l2}.",
        "When it comes to {l2}, {subj_l} {adv} {verb} {leaf}.",
    ),
    "heldout": (
        "In every decision, {subj_l} {adv} {verb} {leaf}.",
        "{subj} says that they {adv} {base} {leaf}, which is about {l2}.",
        "As a matter of {l1}, {subj_l} {adv} {verb} {leaf}.",
    ),
}
_SUBJECTS = {
    "train": ("She", "The council", "My neighbour", "The author", "This policy"),
    "heldout": ("He", "The committee", "Our teacher", "The new law"),
}


def node_ids(theory: str, path: tuple[str, str, str]) -> tuple[int, int, int]:
    """Globally unique integer ids of the three prefixes of a label path (all theories share one numbering).

    Args:
        theory: a theory name.
        path: ``(L1, L2, L3)``.

    Returns:
        ``(id of (theory, L1), id of (theory, L1, L2), id of (theory, L1, L2, L3))``.

    Example:
        >>> node_ids("pvq", ("openness to change", "self direction", "independent action"))
        (0, 0, 1)
    """
    check_label(theory, path, "supports")
    return _NODE_IDS[_key(theory, path)]


def _key(theory: str, path: tuple[str, ...]) -> tuple[str, ...]:
    return (theory,) + tuple(path)


def _build_node_ids() -> dict[tuple[str, ...], tuple[int, int, int]]:
    seen: list[dict[tuple[str, ...], int]] = [{}, {}, {}]
    out: dict[tuple[str, ...], tuple[int, int, int]] = {}
    for theory in THEORIES:
        for path in label_paths(theory):
            ids = []
            for level in range(3):
                key = (theory, *path[: level + 1])
                ids.append(seen[level].setdefault(key, len(seen[level])))
            out[_key(theory, path)] = (ids[0], ids[1], ids[2])
    return out


_NODE_IDS = _build_node_ids()
_CONCEPT_OF = {(t, p): c for c, (name, items) in enumerate(CROSS_THEORY_CONCEPTS.items()) for t, p in items}


@dataclass
class ValueTextCorpus:
    """Generated texts and their labels (row ``i`` of every field describes ``texts[i]``).

    Attributes:
        texts: the sentences.
        theories: theory name of each text.
        paths: ``(L1, L2, L3)`` of each text.
        levels: ``[N, 3]`` int64 global node ids (see :func:`node_ids`).
        directions: ``[N]`` int64, 0 supports and 1 opposes.
        theory_ids: ``[N]`` int64 index into ``THEORIES``.
        intensities: ``[N]`` float32 planted intensity in ``[-10, 10]``.
        individual_ids: ``[N]`` int64 id of ``(theory, path, direction)``.
        concept_ids: ``[N]`` int64 cross-theory concept (``CROSS_THEORY_CONCEPTS`` order) or -1.
    """

    texts: list[str]
    theories: list[str]
    paths: list[tuple[str, str, str]]
    levels: torch.Tensor
    directions: torch.Tensor
    theory_ids: torch.Tensor
    intensities: torch.Tensor
    individual_ids: torch.Tensor
    concept_ids: torch.Tensor

    def __len__(self) -> int:
        """Number of texts."""
        return len(self.texts)


def make_value_texts(
    per_label: int = 4, seed: int = 0, split: str = "train", theories: tuple[str, ...] | None = None
) -> ValueTextCorpus:
    """Generate ``per_label`` texts for every label path and direction of the chosen theories.

    Args:
        per_label: texts per ``(theory, path, direction)``, positive.
        seed: seed of every random choice (same seed, same corpus).
        split: ``"train"`` or ``"heldout"`` (disjoint templates and subjects).
        theories: subset of ``THEORIES`` (default all four).

    Returns:
        A :class:`ValueTextCorpus`; the planted ``|I|`` is uniform on ``(0, 10]`` and its adverb is the
        bucket's entry of :data:`ADVERBS`.

    Raises:
        ValueError: on a non-positive ``per_label``, an unknown split or theory.

    Example:
        >>> corpus = make_value_texts(per_label=1, theories=("mft",))
        >>> len(corpus), corpus.levels.shape, sorted(set(corpus.directions.tolist()))
        (24, torch.Size([24, 3]), [0, 1])
        >>> bool((corpus.intensities[corpus.directions == 1] < 0).all())
        True
    """
    if per_label < 1:
        raise ValueError(f"per_label must be >= 1, got {per_label}")
    if split not in _TEMPLATES:
        raise ValueError(f"split must be one of {sorted(_TEMPLATES)}, got {split!r}")
    names = tuple(THEORIES) if theories is None else tuple(theories)
    for name in names:
        if name not in THEORIES:
            raise ValueError(f"theories must be drawn from {sorted(THEORIES)}, got {name!r}")
    rng = np.random.default_rng([seed, 0 if split == "train" else 1])
    rows: dict[str, list] = {k: [] for k in ("texts", "theories", "paths", "levels", "dirs", "tid", "I", "ind", "con")}
    theory_index = {t: i for i, t in enumerate(THEORIES)}
    individual = 0
    for theory in THEORIES:
        for path in label_paths(theory):
            for d, direction in enumerate(DIRECTIONS):
                individual += 1
                if theory not in names:
                    continue
                for _ in range(per_label):
                    magnitude = float(rng.uniform(0.0, 10.0)) or 10.0
                    verb, base = _VERBS[direction][rng.integers(len(_VERBS[direction]))]
                    subj = _SUBJECTS[split][rng.integers(len(_SUBJECTS[split]))]
                    template = _TEMPLATES[split][rng.integers(len(_TEMPLATES[split]))]
                    adverb = ADVERBS[min(int(np.ceil(magnitude / 2.0)) - 1, 4) if magnitude > 0 else 0]
                    text = template.format(
                        subj=subj,
                        subj_l=subj[0].lower() + subj[1:],
                        adv=adverb,
                        verb=verb,
                        base=base,
                        leaf=path[2],
                        l2=path[1],
                        l1=path[0],
                    )
                    rows["texts"].append(text)
                    rows["theories"].append(theory)
                    rows["paths"].append(path)
                    rows["levels"].append(_NODE_IDS[_key(theory, path)])
                    rows["dirs"].append(d)
                    rows["tid"].append(theory_index[theory])
                    rows["I"].append(magnitude if d == 0 else -magnitude)
                    rows["ind"].append(individual - 1)
                    rows["con"].append(_CONCEPT_OF.get((theory, path), -1))
    return ValueTextCorpus(
        texts=rows["texts"],
        theories=rows["theories"],
        paths=rows["paths"],
        levels=torch.tensor(rows["levels"], dtype=torch.long),
        directions=torch.tensor(rows["dirs"], dtype=torch.long),
        theory_ids=torch.tensor(rows["tid"], dtype=torch.long),
        intensities=torch.tensor(rows["I"], dtype=torch.float32),
        individual_ids=torch.tensor(rows["ind"], dtype=torch.long),
        concept_ids=torch.tensor(rows["con"], dtype=torch.long),
    )
