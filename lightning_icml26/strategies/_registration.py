"""Idempotent registration of strategies with Lightning's registry."""

from __future__ import annotations

from typing import Any

from lightning.pytorch.strategies import Strategy, StrategyRegistry

__all__ = ["register_strategy"]


def register_strategy(name: str, strategy: type[Strategy], description: str, **init_params: Any) -> bool:
    """Register ``strategy`` under ``name`` unless the name is already taken.

    Lightning's ``StrategyRegistry.register`` raises on a second registration of a name; plugins are
    imported many times (tests, spawned workers, Hydra), so registration here is idempotent.

    Args:
        name: the string users pass as ``Trainer(strategy=name)``.
        strategy: the strategy class.
        description: one line shown by ``StrategyRegistry.available_strategies`` tooling.
        **init_params: keyword arguments the registry passes to the class.

    Returns:
        ``True`` if this call registered the name, ``False`` if it was already registered.

    Example:
        >>> from lightning.pytorch.strategies import SingleDeviceStrategy
        >>> register_strategy("icml26_doc_example", SingleDeviceStrategy, "doctest", device="cpu")
        True
        >>> register_strategy("icml26_doc_example", SingleDeviceStrategy, "doctest", device="cpu")
        False
    """
    if name in StrategyRegistry:
        return False
    StrategyRegistry.register(name, strategy, description=description, **init_params)
    return True
