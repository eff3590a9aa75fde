"""Record epoch-level metrics during fit and draw them into one PNG on rank zero."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities import rank_zero_only, rank_zero_warn
from typing_extensions import override

from lightning_icml26._optional import is_available, require_pyplot
from lightning_icml26._requirements import Requirement, declare_requirements

__all__ = ["MetricsPlot", "plot_history"]


def plot_history(history: dict[str, list[tuple[int, float]]], path: str | Path, title: str = "") -> Path:
    """Plot metric curves: losses on the left axis panel, every other metric on the right one.

    Args:
        history: metric name to a list of ``(epoch, value)`` points.
        path: PNG file to write (parent folders are created).
        title: figure title.

    Returns:
        The path written.

    Example:
        >>> import tempfile, os
        >>> out = plot_history({"val_loss": [(0, 1.0), (1, 0.5)], "val_acc": [(0, 0.4), (1, 0.8)]},
        ...                    os.path.join(tempfile.mkdtemp(), "m.png"))
        >>> out.stat().st_size > 0
        True
    """
    plt = require_pyplot()

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    losses = {k: v for k, v in history.items() if "loss" in k}
    others = {k: v for k, v in history.items() if "loss" not in k}
    panels = [(name, group) for name, group in (("loss", losses), ("metric", others)) if group]
    fig, axes = plt.subplots(1, max(len(panels), 1), figsize=(5.5 * max(len(panels), 1), 4), squeeze=False)
    for ax, (label, group) in zip(axes[0], panels, strict=False):
        for key, points in sorted(group.items()):
            epochs, values = zip(*points, strict=True)
            ax.plot(epochs, values, marker="o", markersize=3, label=key)
        ax.set_xlabel("epoch")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


@declare_requirements(  # ``required=False`` (the recipes' default) draws no PNG without matplotlib, and says so once
    lambda args: (
        [Requirement("matplotlib", "plots", "the PNG of the curves drawn at the end of fit")]
        if args["required"]
        else []
    )
)
class MetricsPlot(Callback):
    """Keep every scalar epoch-level metric and write a PNG of their curves when fit ends.

    The history is part of the callback's checkpoint state, so a resumed run draws the whole curve.
    Only global rank zero writes the file. Drawing needs matplotlib (the ``plots`` extra), which is checked
    when the callback is built, before any training.

    Args:
        filename: PNG name, relative to ``trainer.default_root_dir`` unless absolute.
        title: figure title.
        required: what a missing matplotlib does. ``True`` (the default): building the callback raises
            ``ImportError`` naming the ``plots`` extra. ``False``: it warns once, in one line, and the callback
            draws nothing (the history is still kept); the recipes build their default plot this way, so that
            a plain ``pip install lightning-icml26`` runs them.

    Example:
        >>> MetricsPlot("curves.png").state_dict()
        {'history': {}}
        >>> MetricsPlot(required=False).enabled  # matplotlib is installed here
        True
    """

    def __init__(self, filename: str = "metrics.png", title: str = "", required: bool = True) -> None:
        if not filename.endswith(".png"):
            raise ValueError(f"filename must end with '.png', got {filename!r}")
        if not isinstance(required, bool):
            raise TypeError(f"required must be a bool, got {required!r}")
        self.filename = filename
        self.title = title
        self.required = required
        self.enabled = is_available("matplotlib")
        if not self.enabled:
            if required:
                require_pyplot()  # raises the one-line ImportError that names the `plots` extra
            rank_zero_warn(
                f"MetricsPlot: matplotlib is not installed, so {filename} will not be drawn "
                "(pip install 'lightning-icml26[plots]' draws it)"
            )
        self.history: dict[str, list[tuple[int, float]]] = {}
        self.path: Path | None = None

    @override
    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        for key, value in trainer.callback_metrics.items():
            if key.endswith("_step") or not isinstance(value, torch.Tensor) or value.numel() != 1:
                continue
            name = key.removesuffix("_epoch")
            points = self.history.setdefault(name, [])
            if not points or points[-1][0] != trainer.current_epoch:
                points.append((trainer.current_epoch, float(value)))

    @override
    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        path = Path(self.filename)
        if not path.is_absolute():
            path = Path(trainer.default_root_dir) / path
        self.path = path
        self._write(path)

    @rank_zero_only
    def _write(self, path: Path) -> None:
        if self.history and self.enabled:
            plot_history(self.history, path, self.title)

    @override
    def state_dict(self) -> dict[str, Any]:
        return {"history": {k: list(v) for k, v in self.history.items()}}

    @override
    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.history = {k: [tuple(p) for p in v] for k, v in state_dict.get("history", {}).items()}  # type: ignore[misc]
