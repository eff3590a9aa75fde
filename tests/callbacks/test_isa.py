"""SwapAttentionForInference: ISA during validation/predict (outputs equal ISA computed directly), restored after."""

from __future__ import annotations

import lightning.pytorch as pl
import pytest
import torch
from torch import nn

from lightning_icml26.callbacks import SwapAttentionForInference
from lightning_icml26.ops.attention import ISAAttention, SDPAAttention, isa_attention

ISA = {"block_size": 8, "context_keep": 0.5, "full_fraction": 0.5}
SEQ, TARGET, HEADS, DIM = 48, 24, 2, 8


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(4, 3 * HEADS * DIM)
        self.core = SDPAAttention()
        self.out = nn.Linear(HEADS * DIM, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).view(x.shape[0], SEQ, 3, HEADS, DIM).unbind(2)
        return self.out(self.core(q, k, v, TARGET, x=x).flatten(2)).squeeze(-1)


class _Model(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.block = _Block()
        self.seen: list[tuple[str, str]] = []

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        self.seen.append(("train", type(self.block.core).__name__))
        return self(batch[0]).pow(2).mean()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x)

    def validation_step(self, batch: list[torch.Tensor], batch_idx: int) -> None:
        self.seen.append(("val", type(self.block.core).__name__))
        self.log("val_out", self(batch[0]).sum())

    def predict_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        self.seen.append(("predict", type(self.block.core).__name__))
        return self(batch[0])

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)


def _trainer(callback: SwapAttentionForInference) -> pl.Trainer:
    return pl.Trainer(max_epochs=1, callbacks=[callback], logger=False, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0)  # fmt: skip


def _manual(model: _Model, x: torch.Tensor) -> torch.Tensor:
    b = model.block
    q, k, v = b.qkv(x).view(x.shape[0], SEQ, 3, HEADS, DIM).unbind(2)
    out = isa_attention(q, k, v, TARGET, block_size=8, context_keep=0.5, full_fraction=0.5)
    return b.out(out.flatten(2)).squeeze(-1)


def test_swapped_for_validation_and_predict_then_restored() -> None:
    torch.manual_seed(0)
    x = torch.randn(4, SEQ, 4)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x), batch_size=4)
    model = _Model()
    original = model.block.core
    trainer = _trainer(SwapAttentionForInference(SDPAAttention, isa_kwargs=ISA))
    trainer.fit(model, loader, loader)
    assert ("train", "SDPAAttention") in model.seen
    assert ("val", "ISAAttention") in model.seen
    assert ("val", "SDPAAttention") not in model.seen
    assert model.block.core is original
    with torch.no_grad():
        expected = _manual(model, x)
        dense = model(x)
    assert float(trainer.callback_metrics["val_out"]) == pytest.approx(float(expected.sum()), rel=1e-5)
    assert (expected - dense).abs().max() > 1e-4  # ISA differs from dense here, so the check above could fail
    preds = trainer.predict(model, loader)
    assert preds is not None
    torch.testing.assert_close(preds[0], expected, atol=1e-5, rtol=0)
    assert model.block.core is original
    assert model.seen[-1] == ("predict", "ISAAttention")


def test_predicate_and_factory_and_stage_choice() -> None:
    model = _Model()
    swap = SwapAttentionForInference(lambda name, m: name.endswith("core"), factory=lambda m: ISAAttention(8),
                                     stages=("test",))  # fmt: skip
    swap.on_validation_start(None, model)  # type: ignore[arg-type]
    assert isinstance(model.block.core, SDPAAttention)
    swap.on_test_start(None, model)  # type: ignore[arg-type]
    assert isinstance(model.block.core, ISAAttention)
    swap.on_exception(None, model, RuntimeError())  # type: ignore[arg-type]
    assert isinstance(model.block.core, SDPAAttention)


def test_bad_arguments() -> None:
    with pytest.raises(TypeError, match="match"):
        SwapAttentionForInference(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="stages"):
        SwapAttentionForInference(SDPAAttention, stages=("train",))
    with pytest.raises(ValueError, match="full_fraction"):
        SwapAttentionForInference(SDPAAttention, isa_kwargs={"full_fraction": 2.0})
    with pytest.raises(TypeError, match="factory must return"):
        SwapAttentionForInference(SDPAAttention, factory=lambda m: 3).swap(_Model())  # type: ignore[arg-type,return-value]
