"""Free-running (imagined) rollouts of any token world model with a choice of next-frame decoder."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import torch

from lightning_icml26.ops import DECODERS, ITCDecoder, decode_next_frame, gumbel_noise

__all__ = ["NextFrameModel", "rollout"]


@runtime_checkable
class NextFrameModel(Protocol):
    """Anything with ``next_frame_logits(frames (B, T, H, W), actions (B, T)) -> (B, H, W, V)``.

    ``actions[:, t]`` is the action taken after frame ``t``; the logits are for frame ``T``. An optional
    integer attribute ``context`` limits how many past frames the rollout feeds it.
    """

    def next_frame_logits(self, frames: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Logits of the frame that follows ``frames`` under ``actions``."""
        ...


def rollout(
    model: NextFrameModel | Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    frames: torch.Tensor,
    actions: torch.Tensor,
    horizon: int,
    decoder: str = "itc",
    *,
    itc: ITCDecoder | None = None,
    context: int | None = None,
    copy_mask: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    **decode_kwargs: Any,
) -> torch.Tensor:
    """Imagine ``horizon`` frames after ``frames`` under ``actions``, decoding each with ``decoder``.

    Args:
        model: a :class:`NextFrameModel` (e.g. :class:`~lightning_icml26.modules.itc.TokenWorldModel`) or a
            callable ``(frames, actions) -> (B, H, W, V)`` logits.
        frames: ``(B, T0, H, W)`` int64 context frames (real observations).
        actions: ``(B, A)`` int64 actions with ``A >= T0 + horizon - 1``; ``actions[:, t]`` follows frame ``t``.
        horizon: number of frames to imagine, at least 1.
        decoder: ``"itc"``, ``"sample"`` or ``"argmax"``.
        itc: ITC configuration (also supplies the temperature of ``"sample"``).
        context: frames fed to the model (default ``model.context`` when present, else all).
        copy_mask: ``(H, W)`` cells where ITC may copy.
        generator: random generator (the same seed gives ``"itc"`` and ``"sample"`` the same Gumbel noise).
        **decode_kwargs: forwarded to :func:`~lightning_icml26.ops.decode_next_frame`.

    Returns:
        ``(B, horizon, H, W)`` imagined frames.

    Raises:
        ValueError: unknown decoder, bad shapes, too few actions.

    Example:
        >>> def stay(frames, actions):  # a "world model" predicting no change
        ...     return 5.0 * torch.nn.functional.one_hot(frames[:, -1], 3).float()
        >>> start = torch.tensor([[[[0, 1], [2, 0]]]])
        >>> out = rollout(stay, start, torch.zeros(1, 3, dtype=torch.long), 3, "itc")
        >>> bool((out == start).all())
        True
    """
    if decoder not in DECODERS:
        raise ValueError(f"decoder must be one of {DECODERS}, got {decoder!r}")
    if not isinstance(frames, torch.Tensor) or frames.dim() != 4:
        shape = tuple(frames.shape) if isinstance(frames, torch.Tensor) else type(frames).__name__
        raise ValueError(f"frames must be a (B, T0, H, W) tensor of tokens, got {shape}")
    if not isinstance(horizon, int) or horizon < 1:
        raise ValueError(f"horizon must be a positive integer, got {horizon!r}")
    batch, start = frames.shape[:2]
    if not isinstance(actions, torch.Tensor) or actions.dim() != 2 or actions.shape[0] != batch:
        shape = tuple(actions.shape) if isinstance(actions, torch.Tensor) else type(actions).__name__
        raise ValueError(f"actions must be a (B={batch}, A) tensor, got {shape}")
    if actions.shape[1] < start + horizon - 1:
        raise ValueError(
            f"actions must cover T0 + horizon - 1 = {start + horizon - 1} steps, got {actions.shape[1]} actions"
        )
    predict = model.next_frame_logits if isinstance(model, NextFrameModel) else model
    if context is None:
        context = getattr(model, "context", None)
    history = [frames[:, t] for t in range(start)]
    imagined = []
    for _ in range(horizon):
        window = torch.stack(history if context is None else history[-context:], dim=1)
        end = len(history)
        window_actions = actions[:, end - window.shape[1] : end]
        with torch.no_grad():
            logits = predict(window, window_actions)
        gumbel = None if decoder == "argmax" else gumbel_noise(logits.shape, generator).to(logits.device)
        extra = dict(decode_kwargs)
        if decoder == "itc" and copy_mask is not None:
            extra["copy_mask"] = copy_mask
        next_frame = decode_next_frame(logits, history[-1], decoder, itc=itc, gumbel=gumbel, **extra)
        history.append(next_frame)
        imagined.append(next_frame)
    return torch.stack(imagined, dim=1)
