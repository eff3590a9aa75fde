"""The context-parallel process group: an explicit handle, never a global singleton."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch.distributed as dist

if TYPE_CHECKING:
    from torch.distributed import ProcessGroup
    from torch.distributed.device_mesh import DeviceMesh

__all__ = ["ContextParallelGroup", "as_context_parallel_group", "mesh_sizes"]


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


def mesh_sizes(
    world_size: int, context_parallel_size: int | str = "auto", data_parallel_size: int | str = "auto"
) -> tuple[int, int]:
    """``(data_parallel_size, context_parallel_size)`` of a 2-D mesh over ``world_size`` ranks.

    Args:
        world_size: number of ranks.
        context_parallel_size: ranks per context-parallel group, or ``"auto"`` (all ranks not used for data
            parallelism).
        data_parallel_size: number of data-parallel replicas, or ``"auto"`` (1 when both are ``"auto"``).

    Returns:
        The two sizes; their product is ``world_size``.

    Raises:
        ValueError: if a given size does not divide ``world_size`` or the sizes do not multiply to it.

    Example:
        >>> mesh_sizes(4), mesh_sizes(4, context_parallel_size=2), mesh_sizes(8, data_parallel_size=2)
        ((1, 4), (2, 2), (2, 4))
    """
    cp, dp = context_parallel_size, data_parallel_size
    if cp == "auto" and dp == "auto":
        dp = 1
    if cp == "auto":
        assert isinstance(dp, int)
        if world_size % dp != 0:
            raise ValueError(f"data_parallel_size={dp} does not divide the world size {world_size}")
        cp = world_size // dp
    assert isinstance(cp, int)
    if dp == "auto":
        if world_size % cp != 0:
            raise ValueError(
                f"context_parallel_size={cp} does not divide the world size {world_size}"
                " (devices x num_nodes); choose a divisor of it"
            )
        dp = world_size // cp
    assert isinstance(dp, int)
    if dp * cp != world_size:
        raise ValueError(
            f"data_parallel_size={dp} x context_parallel_size={cp} = {dp * cp} must equal the world size"
            f" {world_size} (devices x num_nodes)"
        )
    return dp, cp
