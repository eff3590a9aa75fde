"""Experiment runners that recipes call (above every other sub-package but the CLI)."""

from __future__ import annotations

from lightning_icml26.tasks.irt_judge import irt_judge_task

__all__ = ["irt_judge_task"]
