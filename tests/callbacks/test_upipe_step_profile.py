"""UPipeStepProfile: the step's peak holds every gradient, fused layers counted, through the upipe_llama recipe."""

from __future__ import annotations

from pathlib import Path

import lightning.pytorch as pl
import pytest
from lightning.pytorch.demos.boring_classes import BoringModel

from lightning_icml26.callbacks import UPipeStepProfile
from lightning_icml26.cli import run_recipe
from lightning_icml26.modules import build_hf_causal_lm


def _fit(profile: UPipeStepProfile, steps: int = 4) -> dict[str, float]:
    trainer = pl.Trainer(
        max_steps=steps,
        callbacks=[profile],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    model = BoringModel()
    trainer.fit(model)
    return {k: float(v) for k, v in trainer.callback_metrics.items()}


def test_the_step_peak_holds_at_least_every_gradient_and_the_tokens_are_counted() -> None:
    metrics = _fit(UPipeStepProfile(warmup_steps=1, token_key=None))
    grad_bytes = sum(p.numel() * p.element_size() for p in BoringModel().parameters())  # set to None every step
    assert metrics["step_peak_mib"] * 2**20 >= grad_bytes
    assert metrics["tokens_per_s"] > 0
    assert metrics["upipe_fused_layers"] == 0


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="warmup_steps=-1"):
        UPipeStepProfile(warmup_steps=-1)
    with pytest.raises(ValueError, match="token_key='input_ids'"):
        _fit(UPipeStepProfile(warmup_steps=0))  # BoringModel's batches are plain tensors


def test_the_recipe_runs_every_layer_on_the_fused_operator(tmp_path: Path) -> None:
    overrides = [
        "model.net.hidden_size=32",
        "model.net.intermediate_size=64",
        "model.net.num_hidden_layers=2",
        "model.net.num_attention_heads=4",
        "model.net.num_key_value_heads=2",
        "data.seq_len=64",
        "data.batch_size=1",
        "data.max_bytes=20000",
        "trainer.max_steps=3",
        "trainer.limit_val_batches=0",
        "trainer.enable_progress_bar=false",
        "+callbacks.profile._target_=lightning_icml26.callbacks.UPipeStepProfile",
    ]
    metrics = run_recipe("upipe_llama", overrides, tmp_path)["metrics"]
    assert metrics["upipe_fused_layers"] == 2
    net = build_hf_causal_lm(
        vocab_size=256,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=False,
    )
    grad_bytes = sum(p.numel() * p.element_size() for p in net.parameters())
    assert metrics["step_peak_mib"] * 2**20 >= grad_bytes  # the gradients of every weight exist at once
    assert metrics["tokens_per_s"] > 0
