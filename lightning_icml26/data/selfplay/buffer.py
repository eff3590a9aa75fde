"""``ProblemBuffer``: the history of problems actually used to train the solver (FIFO or reservoir)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

__all__ = ["ProblemBuffer"]


class ProblemBuffer:
    """A bounded store of problem texts.

    ``"fifo"`` keeps the newest ``capacity`` problems; ``"reservoir"`` keeps a uniform sample of everything
    added so far (reservoir sampling, seeded). Its :meth:`state_dict` holds the items, the count and the
    sampler's state, so a restored buffer continues exactly as the original.

    Args:
        capacity: most problems kept.
        policy: ``"fifo"`` or ``"reservoir"``.
        seed: seed of the reservoir sampler.

    Example:
        >>> buf = ProblemBuffer(capacity=3)
        >>> buf.add(["a", "b", "c", "d"])
        >>> buf.items(), len(buf), buf.num_added
        (['b', 'c', 'd'], 3, 4)
    """

    def __init__(self, capacity: int = 256, policy: str = "fifo", seed: int = 0) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"capacity must be a positive int, got {capacity!r}")
        if policy not in ("fifo", "reservoir"):
            raise ValueError(f"policy must be 'fifo' or 'reservoir', got {policy!r}")
        self.capacity, self.policy = capacity, policy
        self.generator = torch.Generator().manual_seed(int(seed))
        self._items: list[str] = []
        self.num_added = 0

    def __len__(self) -> int:
        return len(self._items)

    def items(self) -> list[str]:
        """The buffered problems (oldest first for FIFO)."""
        return list(self._items)

    def add(self, problems: Iterable[str]) -> None:
        """Add problems (strings)."""
        for p in problems:
            if not isinstance(p, str):
                raise TypeError(f"problems must be strings, got {type(p).__name__}: {p!r}")
            self.num_added += 1
            if len(self._items) < self.capacity:
                self._items.append(p)
            elif self.policy == "fifo":
                self._items.pop(0)
                self._items.append(p)
            else:
                j = int(torch.randint(0, self.num_added, (1,), generator=self.generator))
                if j < self.capacity:
                    self._items[j] = p

    def state_dict(self) -> dict[str, Any]:
        """Items, count and sampler state."""
        return {"items": list(self._items), "num_added": self.num_added, "rng": self.generator.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (missing keys keep their defaults)."""
        self._items = list(state.get("items", []))
        self.num_added = int(state.get("num_added", len(self._items)))
        if "rng" in state:
            self.generator.set_state(state["rng"])
