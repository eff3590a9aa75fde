"""``SelfPlayDataModule``: the toy world, the problem buffer and one self-play iteration per epoch."""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl
from torch.utils.data import DataLoader

from lightning_icml26.data.selfplay.buffer import ProblemBuffer
from lightning_icml26.data.selfplay.world import ToyWorld

__all__ = ["SelfPlayDataModule"]


class SelfPlayDataModule(pl.LightningDataModule):
    """Owns the :class:`ToyWorld` and the :class:`ProblemBuffer`; its loader yields one prompt batch per epoch.

    Each epoch is one questioner/solver iteration: the loader yields a single batch holding the questioner's
    prompts (``num_prompts`` copies of ``prompt``); the buffer is saved in and restored from checkpoints.

    Args:
        num_difficulties: difficulty levels of the world.
        num_variants: variants per cell.
        buffer_capacity: problems the buffer keeps.
        buffer_policy: ``"fifo"`` or ``"reservoir"``.
        num_prompts: prompts per iteration (GRPO groups).
        prompt: the questioner's prompt.
        seed: seed of the buffer's sampler.

    Example:
        >>> dm = SelfPlayDataModule(num_prompts=2)
        >>> next(iter(dm.train_dataloader()))
        ['Ask a new question.', 'Ask a new question.']
    """

    def __init__(
        self,
        num_difficulties: int = 6,
        num_variants: int = 8,
        buffer_capacity: int = 256,
        buffer_policy: str = "fifo",
        num_prompts: int = 4,
        prompt: str = "Ask a new question.",
        seed: int = 0,
    ) -> None:
        super().__init__()
        if isinstance(num_prompts, bool) or not isinstance(num_prompts, int) or num_prompts < 1:
            raise ValueError(f"num_prompts must be a positive int, got {num_prompts!r}")
        self.world = ToyWorld(num_difficulties, num_variants)
        self.buffer = ProblemBuffer(buffer_capacity, buffer_policy, seed)
        self.num_prompts, self.prompt = num_prompts, prompt

    def train_dataloader(self) -> DataLoader:
        """One batch (a list of prompt strings) per epoch."""
        batch = [[self.prompt] * self.num_prompts]
        return DataLoader(batch, batch_size=None, shuffle=False)  # type: ignore[arg-type]

    def state_dict(self) -> dict[str, Any]:
        """The buffer's state."""
        return {"buffer": self.buffer.state_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the buffer."""
        self.buffer.load_state_dict(state_dict.get("buffer", {}))
