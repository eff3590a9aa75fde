from __future__ import annotations

import lightning.pytorch as pl
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26.modules import MLP, ClassifierModule


def test_mlp_layers_and_errors() -> None:
    net = MLP(3, 2, hidden=5, depth=2, activation="tanh")
    assert [type(m).__name__ for m in net] == ["Linear", "Tanh", "Linear", "Tanh", "Linear"]
    assert isinstance(MLP(3, 2, depth=0)[0], torch.nn.Linear)
    with pytest.raises(ValueError, match="activation"):
        MLP(3, 2, activation="swish2")
    with pytest.raises(ValueError, match="depth"):
        MLP(3, 2, depth=-1)
    with pytest.raises(ValueError, match="hidden"):
        MLP(3, 2, hidden=0)


def test_classifier_loss_is_cross_entropy_and_uses_the_optimizer_factory() -> None:
    torch.manual_seed(0)
    x, y = torch.randn(32, 4), torch.randint(0, 3, (32,))
    made = []

    def factory(params: object) -> torch.optim.Optimizer:
        opt = torch.optim.SGD(params, lr=0.1)  # type: ignore[arg-type]
        made.append(opt)
        return opt

    module = ClassifierModule(MLP(4, 3, hidden=8), num_classes=3, optimizer=factory)
    trainer = pl.Trainer(max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False)
    before = [p.detach().clone() for p in module.parameters()]
    expected = torch.nn.functional.cross_entropy(module(x), y)
    trainer.fit(module, DataLoader(TensorDataset(x, y), batch_size=32))
    assert len(made) == 1
    assert trainer.callback_metrics["train_loss_epoch"] == pytest.approx(expected.item(), rel=1e-5)
    assert any(not torch.equal(b, p) for b, p in zip(before, module.parameters(), strict=True))
    with pytest.raises(ValueError, match="num_classes"):
        ClassifierModule(MLP(4, 1), num_classes=1)
