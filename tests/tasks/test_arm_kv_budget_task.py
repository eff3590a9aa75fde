"""``arm_kv_budget_task``: its Trainer run against a hand-written training loop, its decode against the parallel
form, its settings' validation."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F

from lightning_icml26.data import make_recall_batch
from lightning_icml26.tasks import ARMKVBudgetConfig, arm_kv_budget_task
from lightning_icml26.tasks.arm_kv_budget import build_kv_decoder, decode_recall, train_kv_decoder

TINY: dict[str, Any] = {
    "budget": 16, "seq_len": 64, "train_len": 32, "pairs": 4, "batch_size": 2, "n_eval": 4, "d_model": 16,
}  # fmt: skip


def _reference_training(config: ARMKVBudgetConfig) -> dict[str, torch.Tensor]:
    """The weights of the ARM fixed read trained by a plain loop: AdamW with a linear warm-up factor
    ``min(1, (s + 1) / warmup)``, the Gumbel temperature linear from ``tau_start`` to ``tau_min``, the usage
    penalty on from ``usage_start`` of the steps, loss = cross-entropy + the decoder's auxiliary loss."""
    model = build_kv_decoder(config.kind, config)
    data = make_recall_batch("mqar", config.steps * config.batch_size, config.train_len, config.pairs, seed=1)
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    factor = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / config.warmup))
    model.train()
    for step in range(config.steps):
        for layer in model.arm_layers():
            layer.tau = config.tau_start + (config.tau_min - config.tau_start) * step / config.steps
            layer.usage_penalty = config.usage_penalty if step / config.steps >= config.usage_start else 0.0
        rows = slice(step * config.batch_size, (step + 1) * config.batch_size)
        logits = model(data["input_ids"][rows])
        loss = F.cross_entropy(logits.flatten(0, 1), data["labels"][rows].flatten(), ignore_index=-100)
        opt.zero_grad()
        (loss + model.aux_weight * model.aux_loss()).backward()
        opt.step()
        factor.step()
    return model.state_dict()


def test_trainer_run_equals_a_plain_training_loop() -> None:
    config = ARMKVBudgetConfig(kind="arm_fixed", steps=6, warmup=3, usage_start=0.5, num_heads=2, **TINY)
    expected = _reference_training(config)
    model = build_kv_decoder(config.kind, config)
    train_kv_decoder(model, config)
    got = model.state_dict()
    assert set(got) == set(expected)
    for name, value in expected.items():
        torch.testing.assert_close(got[name], value, atol=2e-5, rtol=1e-4, msg=name)
    assert not torch.equal(got["head.weight"], build_kv_decoder(config.kind, config).state_dict()["head.weight"])


def test_decoded_recall_equals_the_parallel_forms_accuracy_for_full_kv() -> None:
    config = ARMKVBudgetConfig(kind="full", num_heads=2, **TINY)
    model = build_kv_decoder("full", config).eval()
    batch = make_recall_batch("mqar", 4, 64, 4, seed=3)
    start = 64 - 2 * 4 + 1
    logits = model(batch["input_ids"])[:, start - 1 :]
    gold = batch["labels"][:, start - 1 :]
    scored = gold != -100
    parallel = (logits.argmax(-1)[scored] == gold[scored]).float().mean().item()
    got = decode_recall(model, batch["input_ids"], batch["labels"], start)
    assert got["acc"] == pytest.approx(parallel)
    assert got["nll"] == pytest.approx(F.cross_entropy(logits[scored], gold[scored]).item(), rel=1e-4)
    assert got["slots"] != got["slots"]  # nan: no ARM layer


def test_learned_read_trains_with_its_cost_and_reads_fewer_slots_than_all() -> None:
    out = arm_kv_budget_task(ARMKVBudgetConfig(kind="arm_learned", steps=4, num_heads=2, decode_cost=True, **TINY))
    assert 0.0 <= out["recall_arm_learned"] <= 1.0
    assert 0 < out["slots_arm_learned"] <= 12  # budget 16: window 4, 12 slots
    assert out["kv_bytes_64"] == out["kv_bytes_256"]  # ARM's cache does not grow with the context


@pytest.mark.parametrize(
    ("change", "match"),
    [({"kind": "arm"}, "kind must be one of"), ({"budget": 64}, "budget must be in"), ({"steps": 0}, "steps must")],
)
def test_bad_settings_are_refused(change: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ARMKVBudgetConfig(**{**TINY, **change})  # type: ignore[arg-type]
