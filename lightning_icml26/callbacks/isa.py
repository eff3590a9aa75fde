"""Swap a model's attention modules for sparse ones (ISA by default) during validation, test or predict."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback
from torch import nn

from lightning_icml26.ops.attention import ISAAttention

__all__ = ["SwapAttentionForInference"]

_STAGES = ("validate", "test", "predict")


class SwapAttentionForInference(Callback):
    """Replace the attention modules a user names by a sparse attention at evaluation start; restore them after.

    At ``on_validation_start`` / ``on_test_start`` / ``on_predict_start`` (the stages in ``stages``) every
    submodule of the LightningModule that ``match`` selects is replaced in its parent by ``factory(module)``;
    at the matching ``..._end`` hook (or on an exception) the original modules are put back, the very same
    objects, so training continues on the dense model. The replacement must accept the same call as the
    original: with the default factory the originals should be :class:`~lightning_icml26.ops.attention.SDPAAttention`
    (or any module called as ``(q, k, v, target_len, x=None)``) and the replacement is an
    :class:`~lightning_icml26.ops.attention.ISAAttention` built from ``isa_kwargs`` (without a gate: the
    training-free use). Replacements are moved to the original's device; they are rebuilt at every stage start.

    Args:
        match: a module class, a tuple of classes, or a predicate ``(qualified_name, module) -> bool``.
        factory: builds the replacement from the original; default ``ISAAttention(**isa_kwargs)``.
        isa_kwargs: keyword arguments of the default factory (ignored when ``factory`` is given).
        stages: the evaluation stages to swap in, a subset of ``("validate", "test", "predict")``.

    Example:
        >>> from lightning_icml26.ops.attention import SDPAAttention
        >>> swap = SwapAttentionForInference(SDPAAttention, isa_kwargs={"block_size": 16})
        >>> model = nn.Sequential(SDPAAttention())
        >>> swap.swap(model)
        1
        >>> type(model[0]).__name__
        'ISAAttention'
        >>> swap.restore()
        >>> type(model[0]).__name__
        'SDPAAttention'
    """

    def __init__(
        self,
        match: type | tuple[type, ...] | Callable[[str, nn.Module], bool],
        factory: Callable[[nn.Module], nn.Module] | None = None,
        isa_kwargs: dict[str, Any] | None = None,
        stages: Sequence[str] = ("validate", "predict"),
    ) -> None:
        is_class = isinstance(match, type) or (
            isinstance(match, tuple) and len(match) > 0 and all(isinstance(m, type) for m in match)
        )
        if not is_class and not callable(match):
            raise TypeError(f"match must be a module class, a tuple of classes or a predicate, got {match!r}")
        if factory is not None and not callable(factory):
            raise TypeError(f"factory must be callable or None, got {factory!r}")
        if isa_kwargs is not None and not isinstance(isa_kwargs, dict):
            raise TypeError(f"isa_kwargs must be a dict or None, got {type(isa_kwargs).__name__}")
        if isinstance(stages, str) or not set(stages) <= set(_STAGES) or not stages:
            raise ValueError(f"stages must be a non-empty subset of {_STAGES}, got {stages!r}")
        self.match = match
        self.is_class = is_class
        self.isa_kwargs = dict(isa_kwargs or {})
        if factory is None:
            ISAAttention(**self.isa_kwargs)  # fail now on bad ratios, not at the first validation
        self.factory = factory
        self.stages = tuple(stages)
        self._swapped: list[tuple[nn.Module, str, nn.Module]] = []

    def _selects(self, name: str, module: nn.Module) -> bool:
        if self.is_class:
            return isinstance(module, self.match)  # type: ignore[arg-type]
        return bool(self.match(name, module))  # type: ignore[operator,call-arg]

    def _build(self, module: nn.Module) -> nn.Module:
        new = self.factory(module) if self.factory is not None else ISAAttention(**self.isa_kwargs)
        if not isinstance(new, nn.Module):
            raise TypeError(f"factory must return an nn.Module, got {type(new).__name__}")
        param = next(module.parameters(), None)
        return new.to(param.device) if param is not None else new

    def swap(self, model: nn.Module) -> int:
        """Replace the matching submodules of ``model`` (not ``model`` itself); return how many were swapped."""
        if self._swapped:
            return 0  # already swapped (nested stages): keep the first set of originals
        targets = [(name, m) for name, m in model.named_modules() if name and self._selects(name, m)]
        for name, module in targets:
            parent_name, _, child = name.rpartition(".")
            parent = model.get_submodule(parent_name) if parent_name else model
            if getattr(parent, child) is not module:
                continue  # inside a module already replaced
            setattr(parent, child, self._build(module))
            self._swapped.append((parent, child, module))
        return len(self._swapped)

    def restore(self) -> None:
        """Put every original module back in place."""
        for parent, child, module in reversed(self._swapped):
            setattr(parent, child, module)
        self._swapped = []

    def on_validation_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Swap in (when ``"validate"`` is in ``stages``)."""
        if "validate" in self.stages:
            self.swap(pl_module)

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Restore the originals."""
        if "validate" in self.stages:
            self.restore()

    def on_test_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Swap in (when ``"test"`` is in ``stages``)."""
        if "test" in self.stages:
            self.swap(pl_module)

    def on_test_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Restore the originals."""
        if "test" in self.stages:
            self.restore()

    def on_predict_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Swap in (when ``"predict"`` is in ``stages``)."""
        if "predict" in self.stages:
            self.swap(pl_module)

    def on_predict_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Restore the originals."""
        if "predict" in self.stages:
            self.restore()

    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        """Restore the originals when a run fails mid-stage."""
        self.restore()
