"""Memory accounting without an allocator: live tensor bytes via a dispatch mode, saved-for-backward bytes.

Both count storages, not tensors (views share their base's storage) and never read the process RSS.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

__all__ = ["LiveBytesTracker", "SavedTensorBytes"]


class LiveBytesTracker(TorchDispatchMode):
    """Track the bytes of tensor storages created while the mode is active; record the peak.

    Every storage produced by an operator (and not shared with one of its inputs) is counted once when it
    appears and released when its last reference dies (``weakref.finalize`` on the storage). Storages that
    existed before the mode started are not counted, so ``peak`` is the transient peak above the starting
    point. With ``include_meta=True`` tensors on the ``meta`` device count too (their nominal bytes), so a
    computation run on meta tensors is accounted at full size without computing anything. Memory that kernels
    allocate internally and free before returning (workspaces) is invisible, like
    in an allocator that ignores scratch space. The autograd engine's backward work on CPU runs through the
    dispatcher and is seen.

    Example:
        >>> with LiveBytesTracker() as mem:
        ...     a = torch.ones(256)          # 1 KiB
        ...     b = a * 2                    # +1 KiB
        ...     del a
        ...     c = b.view(16, 16)           # a view: no new storage
        >>> mem.peak, mem.current
        (2048, 1024)
    """

    def __init__(self, include_meta: bool = False) -> None:
        super().__init__()
        self.include_meta = include_meta
        self.current = 0
        self.peak = 0
        self._live: dict[int, int] = {}

    def reset_peak(self) -> None:
        """Set ``peak`` to the bytes alive now."""
        self.peak = self.current

    def _release(self, key: int) -> None:
        self.current -= self._live.pop(key, 0)

    def _track(self, storage: Any) -> None:
        key = id(storage)
        if key in self._live:
            return
        nbytes = int(storage.nbytes())
        self._live[key] = nbytes
        self.current += nbytes
        self.peak = max(self.peak, self.current)
        weakref.finalize(storage, self._release, key)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        inputs = {
            id(t.untyped_storage())
            for t in tree_flatten((args, kwargs or {}))[0]
            if isinstance(t, torch.Tensor) and t.layout == torch.strided
        }
        for t in tree_flatten(out)[0]:
            if (
                isinstance(t, torch.Tensor)
                and t.layout == torch.strided
                and (self.include_meta or t.device.type != "meta")
            ):
                storage = t.untyped_storage()
                if id(storage) not in inputs:
                    self._track(storage)
        return out


def _storage_key(t: torch.Tensor) -> int:
    """One key per underlying storage (its C++ object), also for meta tensors whose data pointers are all 0."""
    return int(t.untyped_storage()._cdata)


class SavedTensorBytes:
    """Context manager summing the bytes of distinct storages saved for backward (``saved_tensors_hooks``).

    Args:
        exclude: tensors whose storages are not counted (e.g. the layer input and the weights, which every
            method keeps alive anyway).

    Example:
        >>> w = torch.randn(4, 4, requires_grad=True)
        >>> with SavedTensorBytes(exclude=[w]) as saved:
        ...     y = (torch.ones(2, 4) @ w).exp()   # matmul saves its input; exp saves its output
        >>> saved.bytes, saved.count
        (64, 2)
    """

    def __init__(self, exclude: Iterable[torch.Tensor] = ()) -> None:
        self._exclude = {_storage_key(t) for t in exclude}
        self._seen: dict[int, int] = {}
        self._hooks: Any = None

    @property
    def bytes(self) -> int:
        """Total bytes of the distinct saved storages."""
        return sum(self._seen.values())

    @property
    def count(self) -> int:
        """Number of distinct saved storages."""
        return len(self._seen)

    def _pack(self, t: torch.Tensor) -> torch.Tensor:
        key = _storage_key(t)
        if key not in self._exclude and key not in self._seen:
            self._seen[key] = int(t.untyped_storage().nbytes())
        return t

    @staticmethod
    def _unpack(t: torch.Tensor) -> torch.Tensor:
        return t

    def __enter__(self) -> SavedTensorBytes:
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._hooks.__exit__(*exc)
