"""Three-level hierarchies of four value theories, written by the project, and cross-theory anchor concepts.

Each theory maps a level-1 group to level-2 values and each value to level-3 facets. The trees summarise the
public theories in a compact form (they are not the authors' label files):

* ``"pvq"``: Schwartz's refined basic values (four higher-order groups, twelve values incl. face and humility);
* ``"mft"``: moral foundations (individualising / binding, six foundations incl. liberty);
* ``"duty"``: Ross's prima facie duties, grouped by whom they concern;
* ``"right"``: Vasak's three generations of human rights.

A label is a path ``(L1, L2, L3)`` plus a direction in :data:`DIRECTIONS`.
"""

from __future__ import annotations

__all__ = ["CROSS_THEORY_CONCEPTS", "DIRECTIONS", "THEORIES", "check_label", "label_paths"]

DIRECTIONS = ("supports", "opposes")
"""The two directions of a value label."""

THEORIES: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {
    "pvq": {
        "openness to change": {
            "self direction": ("independent thought", "independent action"),
            "stimulation": ("novelty", "excitement"),
            "hedonism": ("pleasure", "enjoyment"),
        },
        "self enhancement": {
            "achievement": ("personal success", "competence"),
            "power": ("dominance over people", "control of resources"),
            "face": ("public image", "avoiding humiliation"),
        },
        "conservation": {
            "security": ("personal safety", "societal stability"),
            "conformity": ("following rules", "avoiding upsetting others"),
            "tradition": ("cultural customs", "religious practice"),
            "humility": ("modesty", "accepting one's place"),
        },
        "self transcendence": {
            "benevolence": ("caring for close ones", "being dependable"),
            "universalism": ("social justice", "protecting nature", "tolerance of others"),
        },
    },
    "mft": {
        "individualizing": {
            "care": ("compassion for the suffering", "protection of the vulnerable"),
            "fairness": ("equal treatment", "proportional reward"),
            "liberty": ("personal autonomy", "resisting oppression"),
        },
        "binding": {
            "loyalty": ("loyalty to the group", "patriotism"),
            "authority": ("respect for leaders", "social order"),
            "sanctity": ("bodily purity", "self restraint"),
        },
    },
    "duty": {
        "duties from past acts": {
            "fidelity": ("keeping promises", "telling the truth"),
            "reparation": ("making amends", "paying back damage"),
            "gratitude": ("thanking benefactors", "returning favours"),
        },
        "duties to others": {
            "justice": ("fair distribution of goods", "giving people what they deserve"),
            "beneficence": ("helping others", "charitable giving"),
            "non maleficence": ("avoiding harm", "not injuring others"),
        },
        "duties to oneself": {
            "self improvement": ("gaining knowledge", "building virtue"),
        },
    },
    "right": {
        "civil and political rights": {
            "civil liberties": ("freedom of speech", "freedom of religion"),
            "political participation": ("the right to vote", "a fair trial"),
        },
        "economic social and cultural rights": {
            "economic rights": ("the right to work", "a fair wage"),
            "social rights": ("access to health care", "access to education"),
            "cultural rights": ("taking part in cultural life", "preserving one's language"),
        },
        "solidarity rights": {
            "environmental rights": ("a clean environment", "sustainable use of resources"),
            "development rights": ("economic development", "living in peace"),
        },
    },
}
"""``{theory: {L1: {L2: (L3, ...)}}}``."""

CROSS_THEORY_CONCEPTS: dict[str, tuple[tuple[str, tuple[str, str, str]], ...]] = {
    "care": (
        ("pvq", ("self transcendence", "benevolence", "caring for close ones")),
        ("mft", ("individualizing", "care", "compassion for the suffering")),
        ("duty", ("duties to others", "beneficence", "helping others")),
    ),
    "fairness": (
        ("pvq", ("self transcendence", "universalism", "social justice")),
        ("mft", ("individualizing", "fairness", "equal treatment")),
        ("duty", ("duties to others", "justice", "fair distribution of goods")),
        ("right", ("economic social and cultural rights", "economic rights", "a fair wage")),
    ),
    "freedom": (
        ("pvq", ("openness to change", "self direction", "independent action")),
        ("mft", ("individualizing", "liberty", "personal autonomy")),
        ("right", ("civil and political rights", "civil liberties", "freedom of speech")),
    ),
    "honesty": (
        ("pvq", ("self transcendence", "benevolence", "being dependable")),
        ("duty", ("duties from past acts", "fidelity", "telling the truth")),
    ),
    "harmlessness": (
        ("mft", ("individualizing", "care", "protection of the vulnerable")),
        ("duty", ("duties to others", "non maleficence", "avoiding harm")),
        ("pvq", ("conservation", "security", "personal safety")),
    ),
    "order": (
        ("pvq", ("conservation", "conformity", "following rules")),
        ("mft", ("binding", "authority", "social order")),
    ),
    "nature": (
        ("pvq", ("self transcendence", "universalism", "protecting nature")),
        ("right", ("solidarity rights", "environmental rights", "a clean environment")),
    ),
}
"""Concepts shared across theories: ``{concept: ((theory, path), ...)}`` (the stage-2 cross-theory anchors)."""


def label_paths(theory: str) -> list[tuple[str, str, str]]:
    """All root-to-leaf paths of a theory, in the order of :data:`THEORIES`.

    Args:
        theory: one of ``"pvq"``, ``"mft"``, ``"duty"``, ``"right"``.

    Returns:
        The ``(L1, L2, L3)`` paths.

    Raises:
        ValueError: if ``theory`` is unknown.

    Example:
        >>> label_paths("mft")[0]
        ('individualizing', 'care', 'compassion for the suffering')
        >>> len(label_paths("pvq"))
        25
    """
    if theory not in THEORIES:
        raise ValueError(f"theory must be one of {sorted(THEORIES)}, got {theory!r}")
    return [(l1, l2, l3) for l1, values in THEORIES[theory].items() for l2, leaves in values.items() for l3 in leaves]


def check_label(theory: str, path: tuple[str, ...], direction: str) -> None:
    """Raise if ``(theory, path, direction)`` is not a label of the hierarchy.

    Args:
        theory: a theory name.
        path: ``(L1, L2, L3)``.
        direction: ``"supports"`` or ``"opposes"``.

    Raises:
        ValueError: naming the unknown theory, path or direction.

    Example:
        >>> check_label("mft", ("binding", "loyalty", "patriotism"), "opposes")
        >>> check_label("mft", ("binding", "care", "patriotism"), "supports")
        Traceback (most recent call last):
        ...
        ValueError: path=('binding', 'care', 'patriotism') is not a label path of theory 'mft' ...
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    if tuple(path) not in label_paths(theory):
        raise ValueError(f"path={tuple(path)!r} is not a label path of theory {theory!r} (see THEORIES[{theory!r}])")
