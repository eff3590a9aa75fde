"""The base of every task runner's settings: one frozen dataclass per task, whose ``run()`` runs it."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TaskConfig(ABC):
    """Settings of one task runner; ``run()`` runs the task and returns its figures.

    A task runner takes one object, not a long list of keyword arguments: a subclass is a frozen dataclass
    whose fields are the task's settings (with the recipe's defaults) and whose :meth:`run` calls the task's
    function with itself. A recipe's ``task`` node targets the subclass (``_target_: lightning_icml26.tasks.
    FairFrontierConfig``, no ``_partial_``), so ``icml26 run fair_compas task.criterion=eo`` sets a field, and
    the CLI checks every field's name and type before anything runs. Python users build the same object.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass(frozen=True)
        ... class Double(TaskConfig):
        ...     x: int = 2
        ...
        ...     def run(self) -> dict[str, float]:
        ...         return {"double": 2.0 * self.x}
        >>> Double(x=3).run()
        {'double': 6.0}
        >>> TaskConfig()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: Can't instantiate abstract class TaskConfig ...
    """

    @abstractmethod
    def run(self) -> dict[str, Any]:
        """Run the task with these settings and return its figures (a flat mapping of scalars and lists)."""
