"""Memory accounting: live tensor bytes via a dispatch mode, saved-for-backward bytes, one forward + backward.

The trackers count storages, not tensors (views share their base's storage) and never read the process RSS.
:func:`forward_backward_memory` measures the peak of one forward + backward of a module: with the CUDA
allocator's statistics on a GPU, with :class:`LiveBytesTracker` on CPU and on ``meta`` tensors (bytes at full
size, nothing computed); :class:`OffloadByteModel` models activation offloading for that count.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

__all__ = ["forward_backward_memory", "LiveBytesTracker", "OffloadByteModel", "SavedTensorBytes"]


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


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


class _Packed:
    def __init__(self, t: torch.Tensor) -> None:
        self.shape, self.stride, self.dtype, self.device = t.shape, t.stride(), t.dtype, t.device


class OffloadByteModel:
    """``saved_tensors_hooks`` that model activation offloading for byte accounting (values are not kept).

    Packing a tensor records its bytes as host memory and drops the device tensor (only its shape, stride and
    dtype are kept); unpacking allocates a new device tensor of that shape, as ``save_on_cpu`` copies the tensor
    back. The unpacked values are uninitialised: the model serves byte counts (on ``meta`` tensors, or on CPU to
    check them), not results. ``host`` is the sum of the bytes packed so far, ``host_peak`` the most that were
    held at once.

    Example:
        >>> offload = OffloadByteModel()
        >>> w = torch.ones(4, 4, requires_grad=True)
        >>> with offload.hooks():
        ...     y = (torch.ones(2, 4) @ w).sum()   # matmul saves its 32-byte input
        >>> offload.host, offload.host_peak
        (32, 32)
    """

    def __init__(self) -> None:
        self.host = 0
        self.host_peak = 0
        self._held = 0

    def reset(self) -> None:
        """Set ``host`` and ``host_peak`` to zero (the bytes still held stay counted)."""
        self.host = self.host_peak = 0

    def _release(self, nbytes: int) -> None:
        self._held -= nbytes

    def pack(self, t: torch.Tensor) -> Any:
        """Record ``t``'s bytes as offloaded; return a handle holding its shape, stride, dtype and device."""
        nbytes = _nbytes(t)
        self.host += nbytes
        self._held += nbytes
        self.host_peak = max(self.host_peak, self._held)
        handle = _Packed(t)
        weakref.finalize(handle, self._release, nbytes)
        return handle

    @staticmethod
    def unpack(handle: Any) -> torch.Tensor:
        """A new (uninitialised) device tensor of the packed tensor's shape, stride and dtype."""
        return torch.empty_strided(handle.shape, handle.stride, dtype=handle.dtype, device=handle.device)

    def hooks(self) -> Any:
        """The ``torch.autograd.graph.saved_tensors_hooks`` context of this model."""
        return torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)


def forward_backward_memory(
    module: nn.Module, x: torch.Tensor, offload: OffloadByteModel | None = None
) -> dict[str, int]:
    """Peak activation bytes of one forward + backward of ``module`` on ``x`` (a random upstream gradient).

    The device of ``x`` chooses the counter: on CUDA the allocator's peak (``torch.cuda.max_memory_allocated``
    above what was allocated before the forward); on CPU or ``meta`` the storages that the computation creates
    (:class:`LiveBytesTracker` with ``include_meta=True``: on ``meta`` tensors the bytes are counted at full size
    and nothing is computed, so a layer of any size is accounted on a laptop). ``module``'s parameters must be on
    that device; their gradients are reset first.

    Args:
        module: the module, called as ``module(x)``; it returns one tensor.
        x: the input; it is made to require gradients.
        offload: the offloading model that ``module`` packs its saved tensors with, if any; its ``host_peak``
            is reported as ``host_offloaded`` and reset.

    Returns:
        ``peak``: the forward + backward peak of activations, ``x`` and the upstream gradient included, every
        weight gradient left out; ``fwd_transient``: the forward peak minus the output; ``const``: the bytes of
        the weights and their gradients (the same for every way of computing the layer, reported apart);
        ``host_offloaded`` with ``offload``. On CUDA an out-of-memory error gives ``peak = sys.maxsize`` and
        ``oom = 1`` (so a search treats it as not fitting).

    Raises:
        TypeError: if ``module`` is not an ``nn.Module`` or ``x`` not a tensor.

    Example:
        >>> lin = nn.Linear(8, 8, bias=False, device="meta")   # x, y, dy, dx: 4 x 8 fp32 each, 128 bytes
        >>> forward_backward_memory(lin, torch.empty(4, 8, device="meta"))
        {'fwd_transient': 0, 'peak': 512, 'const': 512}
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    for p in module.parameters():
        p.grad = None
    x = x.detach().requires_grad_()
    if x.device.type == "cuda":
        out = _cuda_forward_backward(module, x)
    else:
        with LiveBytesTracker(include_meta=True) as mem:
            y = module(x)
            fwd_transient = mem.peak - _nbytes(y)
            y.backward(torch.randn_like(y))
            del y
        out = {"fwd_transient": fwd_transient, "peak": mem.peak}
    weight_grads = sum(_nbytes(p.grad) for p in module.parameters() if p.grad is not None)
    if "oom" not in out:  # x exists before the count starts, the upstream gradient is created inside it
        out["peak"] = out["peak"] - weight_grads + _nbytes(x)
    out["const"] = sum(2 * _nbytes(p) for p in module.parameters())
    if offload is not None:
        out["host_offloaded"] = offload.host_peak  # host memory, not in the device figures
        offload.reset()
    return out


def _cuda_forward_backward(module: nn.Module, x: torch.Tensor) -> dict[str, int]:
    device = x.device
    try:
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
        start = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        y = module(x)
        torch.cuda.synchronize(device)
        fwd_transient = torch.cuda.max_memory_allocated(device) - start - _nbytes(y)
        y.backward(torch.randn_like(y))
        del y
        torch.cuda.synchronize(device)
        peak = torch.cuda.max_memory_allocated(device) - start
    except torch.cuda.OutOfMemoryError:
        return {"peak": sys.maxsize, "oom": 1}
    return {"fwd_transient": fwd_transient, "peak": peak}
