"""The context-parallel process group: an explicit handle, never a global singleton."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch.distributed as dist

if TYPE_CHECKING:
    from torch.distributed import ProcessGroup
    from torch.distributed.device_mesh import DeviceMesh

__all__ = ["ContextParallelGroup", "as_context_parallel_group"]


class ContextParallelGroup:
    """The ranks that share one sequence in context parallelism.

    Every context-parallel function takes one of these (or a raw ``ProcessGroup``, or ``None``) explicitly; no
    module-level state is kept, so several groups (e.g. one per data-parallel replica) can coexist.

    Args:
        group: the process group of the context-parallel ranks. ``None`` means a single process: size 1,
            rank 0, and every collective is the identity (no ``torch.distributed`` initialisation needed).

    Example:
        >>> cp = ContextParallelGroup()
        >>> cp.size, cp.rank, cp.is_trivial
        (1, 0, True)
    """

    def __init__(self, group: ProcessGroup | None = None) -> None:
        if group is not None and not isinstance(group, dist.ProcessGroup):
            raise TypeError(f"group must be a torch.distributed.ProcessGroup or None, got {type(group).__name__}")
        self.group = group
        if group is None:
            self.size = 1
            self.rank = 0
        else:
            self.size = dist.get_world_size(group)
            self.rank = dist.get_rank(group)

    @classmethod
    def from_mesh(cls, mesh: DeviceMesh, dim: str | int) -> ContextParallelGroup:
        """Build the group from one dimension of a ``DeviceMesh``.

        Args:
            mesh: the device mesh.
            dim: name or index of the context-parallel mesh dimension.

        Returns:
            The group of this rank along ``dim``.

        Example:
            >>> ContextParallelGroup.from_mesh  # doctest: +ELLIPSIS
            <bound method ContextParallelGroup.from_mesh of ...>
        """
        if isinstance(dim, str):
            names = mesh.mesh_dim_names or ()
            if dim not in names:
                raise ValueError(f"dim={dim!r} is not a dimension of the mesh; its dimensions are {names}")
        elif not isinstance(dim, int) or not 0 <= dim < mesh.ndim:
            raise ValueError(f"dim={dim!r} must be a mesh dimension name or an index in [0, {mesh.ndim})")
        return cls(mesh.get_group(dim))

    @property
    def is_trivial(self) -> bool:
        """``True`` when the group has one rank (collectives are the identity)."""
        return self.size == 1

    def global_rank(self, group_rank: int) -> int:
        """The global rank of the member with index ``group_rank`` in this group.

        Example:
            >>> ContextParallelGroup().global_rank(0)
            0
        """
        if not 0 <= group_rank < self.size:
            raise ValueError(f"group_rank={group_rank} must be in [0, {self.size})")
        if self.group is None:
            return group_rank
        return dist.get_global_rank(self.group, group_rank)

    def __repr__(self) -> str:
        return f"ContextParallelGroup(size={self.size}, rank={self.rank})"


def as_context_parallel_group(cp: Any) -> ContextParallelGroup:
    """Normalise ``cp`` (``ContextParallelGroup``, ``ProcessGroup`` or ``None``) to a :class:`ContextParallelGroup`.

    Example:
        >>> as_context_parallel_group(None).size
        1
    """
    if isinstance(cp, ContextParallelGroup):
        return cp
    if cp is None or isinstance(cp, dist.ProcessGroup):
        return ContextParallelGroup(cp)
    raise TypeError(f"cp must be a ContextParallelGroup, a ProcessGroup or None, got {type(cp).__name__}")
