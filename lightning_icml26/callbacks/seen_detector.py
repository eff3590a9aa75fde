"""``SeenDetectorCallback``: after each self-play iteration, buffer the used problems and refit the detector."""

from __future__ import annotations

from typing import Any

from lightning.pytorch import Callback, LightningModule, Trainer

from lightning_icml26.algorithms.novelty import CalibratedSeenDetector

__all__ = ["SeenDetectorCallback"]


class SeenDetectorCallback(Callback):
    """Keeps the seen detector of a self-play module in step with the problem buffer.

    At the end of every training epoch (one self-play iteration) it adds the module's ``used_questions`` (the
    problems that trained the solver) to the data module's ``buffer``
    (:class:`~lightning_icml26.data.selfplay.ProblemBuffer`) and, once the buffer holds ``min_buffer`` problems,
    refits and recalibrates the module's ``reward.detector`` on ``pl_module.embed(buffer.items())``.

    Checkpoints: the buffer travels with the data module's state, the callback saves the detector's fit
    counter, and on resume the detector is refitted on the restored buffer with the same held-out split, so a
    resumed run continues exactly as an uninterrupted one. Every rank refits (the detector is state the
    reward needs everywhere); the callback has no other side effects.

    Example:
        >>> SeenDetectorCallback().state_dict()
        {'detector': None}
    """

    def __init__(self) -> None:
        self._pending: dict[str, Any] | None = None
        self._detector_state: dict[str, int] | None = None

    @staticmethod
    def _parts(trainer: Trainer, pl_module: LightningModule) -> tuple[Any, CalibratedSeenDetector | None]:
        dm = trainer.datamodule  # type: ignore[attr-defined]
        buffer = getattr(dm, "buffer", None)
        if buffer is None:
            raise TypeError(
                f"SeenDetectorCallback needs a data module with a ProblemBuffer 'buffer', got {type(dm).__name__}"
            )
        reward = getattr(pl_module, "reward", None)
        return buffer, getattr(reward, "detector", None)

    def on_train_epoch_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        """On resume, refit the detector on the restored buffer."""
        if self._pending is None:
            return
        buffer, detector = self._parts(trainer, pl_module)
        if detector is not None:
            emb = pl_module.embed(buffer.items()) if len(buffer) else None  # type: ignore[operator]
            detector.load_state_dict(self._pending, emb)
            self._detector_state = detector.state_dict()
        self._pending = None

    def on_train_epoch_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        """Buffer the used problems and refit/recalibrate the detector."""
        buffer, detector = self._parts(trainer, pl_module)
        buffer.add(getattr(pl_module, "used_questions", []))
        if detector is not None and len(buffer) >= detector.min_buffer:
            detector.fit(pl_module.embed(buffer.items()))  # type: ignore[operator]
        if detector is not None:
            self._detector_state = detector.state_dict()

    def state_dict(self) -> dict[str, Any]:
        """The detector's fit counter (``None`` before the first iteration)."""
        return {"detector": self._detector_state}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Keep the saved state; the refit happens at the next epoch start, once the buffer is restored."""
        self._detector_state = state_dict.get("detector")
        self._pending = dict(self._detector_state) if self._detector_state is not None else None
