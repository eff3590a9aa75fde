"""Optional packages a piece declares it will need, so that a recipe's are checked before its first step.

Heavy packages are imported at first use (:func:`lightning_icml26._optional.require`), which keeps imports
light but would find a missing one late: a plot drawn after training, a LoRA adapter built in
``configure_model``. A piece that needs an optional package after its construction declares it with
:func:`declare_requirements`, as a fixed list or as a function of its arguments (a task that plots only when
``plot=True``). The recipe runner reads the declarations of every ``_target_`` of the composed recipe,
with the node's arguments (:func:`missing_requirements`), and refuses the recipe before anything runs,
naming the extra to install. This module imports nothing heavy.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple, TypeVar

from lightning_icml26._optional import is_available

__all__ = ["REQUIREMENTS_ATTRIBUTE", "Requirement", "declare_requirements", "declared_requirements"]

#: The attribute :func:`declare_requirements` sets on a class or function.
REQUIREMENTS_ATTRIBUTE = "__icml26_requirements__"

T = TypeVar("T")


class Requirement(NamedTuple):
    """An optional package a piece needs: the module to import, the extra that installs it, and why."""

    module: str
    extra: str
    purpose: str = ""

    def message(self, who: str = "") -> str:
        """One line naming the package, who needs it and the command that installs it.

        Example:
            >>> print(Requirement("matplotlib", "plots", "metrics.png").message("callbacks.plot"))
            the optional package 'matplotlib' is not installed; callbacks.plot needs it for metrics.png:
            pip install 'lightning-icml26[plots]'
        """
        need = f"; {who} needs it" if who else ""
        purpose = f" for {self.purpose}" if self.purpose and who else ""
        return (
            f"the optional package '{self.module}' is not installed{need}{purpose}: "
            f"pip install 'lightning-icml26[{self.extra}]'"
        )

    def is_met(self) -> bool:
        """Whether the module can be imported (found without importing it).

        Example:
            >>> Requirement("torch", "core").is_met(), Requirement("surely_not_installed_xyz", "demo").is_met()
            (True, False)
        """
        return is_available(self.module)


Declaration = Iterable[Requirement] | Callable[[Mapping[str, Any]], Iterable[Requirement]]


def declare_requirements(declaration: Declaration) -> Callable[[T], T]:
    """Class or function decorator: the optional packages the piece will need, fixed or from its arguments.

    Args:
        declaration: the requirements, or a function of the piece's arguments (every parameter, defaults
            filled in) returning them.

    Example:
        >>> @declare_requirements(lambda args: [Requirement("matplotlib", "plots", "a plot")] if args["plot"] else [])
        ... def report(plot: bool = True) -> None: ...
        >>> [r.module for r in declared_requirements(report, {})], declared_requirements(report, {"plot": False})
        (['matplotlib'], [])
    """
    fixed = None if callable(declaration) else tuple(declaration)

    def decorate(piece: T) -> T:
        setattr(piece, REQUIREMENTS_ATTRIBUTE, fixed if fixed is not None else declaration)
        return piece

    return decorate


def declared_requirements(target: Any, arguments: Mapping[str, Any]) -> list[Requirement]:
    """The requirements ``target`` (a class or function) declares for the given arguments.

    Args:
        target: a class or function, possibly decorated with :func:`declare_requirements`.
        arguments: the keyword arguments it will be called with; its defaults fill the others.

    Example:
        >>> declared_requirements(dict, {})
        []
    """
    declaration = getattr(target, REQUIREMENTS_ATTRIBUTE, None)
    if declaration is None:
        return []
    if not callable(declaration):
        return list(declaration)
    try:
        parameters = inspect.signature(target).parameters
    except (TypeError, ValueError):
        parameters = {}  # type: ignore[assignment]
    settings = {name: p.default for name, p in parameters.items() if p.default is not inspect.Parameter.empty} | dict(
        arguments
    )
    return list(declaration(settings))
