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


def _without_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` fails as when it is not installed


def test_without_matplotlib_a_required_plot_is_refused_when_built(monkeypatch: pytest.MonkeyPatch) -> None:
    _without_matplotlib(monkeypatch)
    with pytest.raises(ImportError, match=r"pip install 'lightning-icml26\[plots\]'"):
        MetricsPlot()


def test_without_matplotlib_an_optional_plot_warns_once_and_training_goes_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _without_matplotlib(monkeypatch)
    with pytest.warns(UserWarning, match=r"matplotlib is not installed.*lightning-icml26\[plots\]") as caught:
        plot = MetricsPlot("curves.png", required=False)
    assert len(caught) == 1
    assert plot.enabled is False
    x, y = torch.randn(40, 2), torch.randint(0, 3, (40,))
    loader = DataLoader(TensorDataset(x, y), batch_size=20)
    trainer = pl.Trainer(
        max_epochs=2, logger=False, enable_checkpointing=False, enable_progress_bar=False,
        default_root_dir=tmp_path, callbacks=[plot],
    )  # fmt: skip
    trainer.fit(ClassifierModule(MLP(2, 3, hidden=4), num_classes=3), loader, loader)
    assert [e for e, _ in plot.history["val_loss"]] == [0, 1]  # the history is still kept (and checkpointed)
    assert not (tmp_path / "curves.png").exists()


def test_required_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="required"):
        MetricsPlot(required="no")  # type: ignore[arg-type]
