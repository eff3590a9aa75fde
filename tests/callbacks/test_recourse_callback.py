"""RecourseOnPredict inside Trainer.predict: the rejected rows are explained, the others left alone."""

from __future__ import annotations

from pathlib import Path

import lightning.pytorch as pl
import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26.algorithms.recourse import ASRICL, ActionabilitySpec
from lightning_icml26.callbacks import RecourseOnPredict

_W = torch.tensor([1.0, -1.0, 0.5], dtype=torch.float64)


class _Linear(pl.LightningModule):
    def predict_step(self, batch: tuple[torch.Tensor], batch_idx: int) -> torch.Tensor:
        return (batch[0].double() @ _W > 0.2).long()


def _oracle(X: np.ndarray) -> np.ndarray:
    return (X @ _W.numpy() > 0.2).astype(int)


def test_recourse_on_predict_explains_rejected_rows(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    X = torch.tensor(rng.uniform(0, 1, (24, 3)))
    spec = ActionabilitySpec((0, 0, 0), (1, 1, 1), (True, True, False), (1, -1, 0), (None, None, None))
    callback = RecourseOnPredict(ASRICL(_oracle, spec, classes=[0, 1], seed=0))
    trainer = pl.Trainer(
        accelerator="cpu", logger=False, enable_progress_bar=False, callbacks=[callback], default_root_dir=tmp_path
    )
    trainer.predict(_Linear(), DataLoader(TensorDataset(X), batch_size=8))
    rejected = X.numpy()[_oracle(X.numpy()) == 0]
    counterfactuals = callback.counterfactuals()
    assert counterfactuals.shape == rejected.shape
    np.testing.assert_array_equal(counterfactuals[:, 2], rejected[:, 2])  # immutable
    assert np.all(counterfactuals[:, 0] >= rejected[:, 0])  # monotone up
    found = np.concatenate([r.found for r in callback.results])
    np.testing.assert_array_equal(_oracle(counterfactuals[found]), 1)
    summary = callback.summary()
    assert summary["validity"] == pytest.approx(found.mean())
    assert summary["queries"] == pytest.approx(np.concatenate([r.queries for r in callback.results]).mean())
    restored = RecourseOnPredict(ASRICL(_oracle, spec, classes=[0, 1]))
    restored.load_state_dict(callback.state_dict())
    assert float(restored.metrics["cost"].compute()) == pytest.approx(summary["cost"])
    with pytest.raises(ValueError, match="predict_step must return"):
        callback.on_predict_batch_end(None, None, torch.zeros(2, 2), X[:2], 0)
