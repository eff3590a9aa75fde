from __future__ import annotations

from pathlib import Path

import lightning.pytorch as pl
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26.callbacks import MetricsPlot
from lightning_icml26.modules import MLP, ClassifierModule


def test_records_epoch_metrics_and_writes_png(tmp_path: Path) -> None:
    x, y = torch.randn(40, 2), torch.randint(0, 3, (40,))
    loader = DataLoader(TensorDataset(x, y), batch_size=20)
    plot = MetricsPlot("curves.png", title="t")
    trainer = pl.Trainer(
        max_epochs=3, logger=False, enable_checkpointing=False, enable_progress_bar=False,
        default_root_dir=tmp_path, callbacks=[plot],
    )  # fmt: skip
    trainer.fit(ClassifierModule(MLP(2, 3, hidden=4), num_classes=3), loader, loader)
    assert [e for e, _ in plot.history["val_loss"]] == [0, 1, 2]
    assert "train_loss_step" not in plot.history
    assert plot.history["val_loss"][-1][1] == pytest.approx(float(trainer.callback_metrics["val_loss"]))
    png = tmp_path / "curves.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    restored = MetricsPlot()
    restored.load_state_dict(plot.state_dict())
    assert restored.history == plot.history
    restored.load_state_dict({})  # an older checkpoint without the key still loads
    assert restored.history == {}


def test_rejects_non_png_filename() -> None:
    with pytest.raises(ValueError, match="filename"):
        MetricsPlot("curves.jpg")
