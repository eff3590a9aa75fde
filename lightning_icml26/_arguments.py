"""Check a composed recipe's object nodes against their targets' signatures before anything is built.

Hydra checks the shared blocks against the structured schema (:mod:`lightning_icml26._schema`), but the
``data``, ``model``, ``callbacks``, ``strategy`` and ``task`` nodes are open mappings handed to
``hydra.utils.instantiate``: a wrong key or a value of the wrong type there would only surface as an error
deep inside a constructor, or worse, at the first use of the value mid-run. :func:`argument_problems` walks
every mapping with a ``_target_``, and for each key

* refuses a key that the target does not accept (unless it takes ``**kwargs``), naming the accepted ones;
* refuses a plain value (number, string, boolean, ``null``, a list of them) that does not fit the
  parameter's type hint: ``lr: float`` gets ``'fast'``, ``timeout: timedelta`` gets ``60``.

Hints it cannot judge (protocols, callables, generics of objects, unresolvable forward references) accept
every value: the check never refuses what the target would take. It imports the targets (that is how it
reads their signatures) and builds nothing.
"""

from __future__ import annotations

import collections.abc
import enum
import inspect
import os
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any

from hydra.utils import get_object
from omegaconf import DictConfig, ListConfig, OmegaConf

from lightning_icml26._requirements import Requirement, declared_requirements

__all__ = ["argument_problems", "fits_hint", "recipe_requirements"]

_SPECIAL_KEYS = frozenset({"_target_", "_partial_", "_convert_", "_recursive_", "_args_"})
_PLAIN = (bool, int, float, str, type(None))


def _describe(hint: Any) -> str:
    if isinstance(hint, type) and not typing.get_args(hint):
        return hint.__qualname__ if hint.__module__ == "builtins" else f"{hint.__module__}.{hint.__qualname__}"
    return str(hint).replace("typing.", "").replace("NoneType", "None")


def fits_hint(value: Any, hint: Any) -> bool | None:
    """Whether a plain config value fits a type hint: ``True``, ``False``, or ``None`` when it cannot tell.

    Args:
        value: a number, string, boolean, ``None``, or a list/tuple of them.
        hint: a parameter's type hint (``typing`` forms, PEP 604 unions, classes).

    Example:
        >>> fits_hint("fast", float), fits_hint(3, float), fits_hint(True, int)
        (False, True, False)
        >>> fits_hint(None, int | None), fits_hint("max", typing.Literal["min", "max"])
        (True, True)
        >>> import datetime
        >>> fits_hint(60, datetime.timedelta), fits_hint(60, datetime.timedelta | float)
        (False, True)
        >>> fits_hint([1, "a"], list[int]), fits_hint(["a"], collections.abc.Callable) is None
        (False, True)
    """
    if hint is Any or hint is object or isinstance(hint, typing.TypeVar):
        return True
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        verdicts = [fits_hint(value, arg) for arg in args]
        if any(v is True for v in verdicts):
            return True
        return None if any(v is None for v in verdicts) else False
    if origin is typing.Literal:
        return any(value == arg and type(value) is type(arg) for arg in args)
    if origin is typing.Annotated:
        return fits_hint(value, args[0])
    if hint is None or hint is type(None):
        return value is None
    if value is None:
        return False if (isinstance(hint, type) or origin is not None) else None
    if isinstance(value, list | tuple):
        return _fits_sequence(value, hint, origin, args)
    return _fits_scalar(value, hint, origin)


def _fits_scalar(value: Any, hint: Any, origin: Any) -> bool | None:
    if hint in _NUMBERS:
        return _NUMBERS[hint](value)
    if isinstance(hint, type) and issubclass(hint, os.PathLike):
        return isinstance(value, str)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return None  # a class may convert a name or a value itself
    if origin is not None:
        container = origin if isinstance(origin, type) else None
        if container is not None and issubclass(container, collections.abc.Iterable):
            return isinstance(value, str) if issubclass(str, container) else False
        return None
    if isinstance(hint, type) and hint.__module__ not in ("typing", "collections.abc"):
        return isinstance(value, hint)
    return None


_NUMBERS: dict[Any, Callable[[Any], bool]] = {
    bool: lambda value: isinstance(value, bool),
    int: lambda value: isinstance(value, int) and not isinstance(value, bool),
    float: lambda value: isinstance(value, int | float) and not isinstance(value, bool),
    complex: lambda value: isinstance(value, int | float | complex) and not isinstance(value, bool),
    str: lambda value: isinstance(value, str),
}


def _fits_sequence(value: list[Any] | tuple[Any, ...], hint: Any, origin: Any, args: tuple[Any, ...]) -> bool | None:
    container = origin if origin is not None else hint
    if not isinstance(container, type):
        return None
    if container in _PLAIN:
        return False
    if not issubclass(container, collections.abc.Iterable) or issubclass(container, collections.abc.Mapping):
        return None if not issubclass(container, collections.abc.Mapping) else False
    if not args:
        return True
    if container is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        if len(args) != len(value):
            return False
        verdicts = [fits_hint(item, arg) for item, arg in zip(value, args, strict=True)]
    else:
        verdicts = [fits_hint(item, args[0]) for item in value]
    if any(v is False for v in verdicts):
        return False
    return True if all(v is True for v in verdicts) else None


def _hints(target: Callable[..., Any]) -> dict[str, Any]:
    function = target.__init__ if isinstance(target, type) else target  # type: ignore[misc]
    try:
        return typing.get_type_hints(function)
    except Exception:  # forward references to names imported only for type checkers: judge one by one
        hints = {}
        namespace = getattr(inspect.unwrap(function), "__globals__", {})
        for name, annotation in getattr(function, "__annotations__", {}).items():
            try:
                hints[name] = eval(annotation, namespace) if isinstance(annotation, str) else annotation
            except Exception:
                continue
        return hints


def _plain(value: Any) -> Any:
    """The value as plain Python when it is a plain value or a list of them; ``...`` otherwise."""
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, ListConfig):
        items = [_plain(item) for item in value]
        return ... if any(item is ... for item in items) else items
    return ...


def _target_problems(node: DictConfig, path: str) -> Iterator[str]:
    name = str(node._target_)
    try:
        target = get_object(name)
    except Exception as error:  # ImportError of an optional package keeps its install hint
        cause = error.__cause__ or error
        yield f"{path}._target_: cannot import '{name}': {type(cause).__name__}: {cause}"
        return
    if not callable(target):
        return
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return
    parameters = signature.parameters
    takes_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    accepted = [p for p, v in parameters.items() if v.kind not in (v.VAR_POSITIONAL, v.VAR_KEYWORD)]
    hints = _hints(target)
    for key in node:
        key = str(key)
        if key in _SPECIAL_KEYS:
            continue
        where = f"{path}.{key}" if path else key
        if key not in parameters or parameters[key].kind in (inspect.Parameter.VAR_POSITIONAL,):
            if not takes_kwargs:
                yield f"{where}: '{key}' is not an argument of {name}; it takes: {', '.join(accepted) or 'nothing'}"
            continue
        hint = hints.get(key)
        value = _plain(node[key])
        if hint is None or value is ...:
            continue
        if fits_hint(value, hint) is False:
            yield f"{where}: {value!r} does not fit {name}'s argument {key}: {_describe(hint)}"


def argument_problems(node: Any, path: str = "") -> list[str]:
    """Every key or plain value of ``node``'s ``_target_`` mappings that its target would refuse.

    Args:
        node: a resolved config node (a recipe, or one of its nodes).
        path: the node's dotted key in the recipe, used in the messages.

    Returns:
        One message per problem, each starting with the full dotted key.

    Example:
        >>> from omegaconf import OmegaConf
        >>> cfg = OmegaConf.create({"optimizer": {"_target_": "torch.optim.SGD", "_partial_": True, "lr": "fast"}})
        >>> argument_problems(cfg)  # doctest: +ELLIPSIS
        ["optimizer.lr: 'fast' does not fit torch.optim.SGD's argument lr: ..."]
        >>> argument_problems(OmegaConf.create({"_target_": "string.Template", "text": "$x"}))
        ["text: 'text' is not an argument of string.Template; it takes: template"]
    """
    problems: list[str] = []
    if isinstance(node, DictConfig):
        if "_target_" in node and isinstance(node.get("_target_"), str):
            problems.extend(_target_problems(node, path))
        for key in node:
            child = node[key]
            if isinstance(child, DictConfig | ListConfig):
                problems.extend(argument_problems(child, f"{path}.{key!s}" if path else str(key)))
    elif isinstance(node, ListConfig):
        for index, child in enumerate(node):
            if isinstance(child, DictConfig | ListConfig):
                problems.extend(argument_problems(child, f"{path}[{index!s}]"))
    return problems


def recipe_requirements(node: Any, path: str = "") -> list[tuple[str, Requirement]]:
    """The optional packages every ``_target_`` of ``node`` declares for its arguments, with the node's key.

    Targets declare them with :func:`~lightning_icml26._requirements.declare_requirements`; a target that
    cannot be imported declares nothing here (:func:`argument_problems` reports it).

    Example:
        >>> from omegaconf import OmegaConf
        >>> cfg = OmegaConf.create({"callbacks": {"plot": {"_target_": "lightning_icml26.callbacks.MetricsPlot"}}})
        >>> [(key, r.module, r.extra) for key, r in recipe_requirements(cfg)]
        [('callbacks.plot', 'matplotlib', 'plots')]
    """
    found: list[tuple[str, Requirement]] = []
    if isinstance(node, DictConfig):
        if isinstance(node.get("_target_"), str):
            try:
                target = get_object(str(node._target_))
            except Exception:
                target = None
            if target is not None:
                arguments = {
                    str(k): OmegaConf.to_container(v, resolve=True) if isinstance(v, DictConfig | ListConfig) else v
                    for k, v in node.items()
                    if str(k) not in _SPECIAL_KEYS
                }
                found.extend((path, r) for r in declared_requirements(target, arguments))
        for key in node:
            child = node[key]
            if isinstance(child, DictConfig | ListConfig):
                found.extend(recipe_requirements(child, f"{path}.{key!s}" if path else str(key)))
    elif isinstance(node, ListConfig):
        for index, child in enumerate(node):
            if isinstance(child, DictConfig | ListConfig):
                found.extend(recipe_requirements(child, f"{path}[{index!s}]"))
    return found
