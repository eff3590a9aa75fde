"""ARMDecoder: every attention kind decodes as its parallel form, training steps run, stop-and-resume."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import pytest
import torch

from lightning_icml26.data import RecallDataModule
from lightning_icml26.modules import ARMDecoder

_KW: dict[str, dict[str, Any]] = {
    "arm": {"num_clusters": 2, "read_policy": "learned"},
    "h2o": {"recent": 2},
    "snapkv": {"obs_window": 2},
}


@pytest.mark.parametrize(("kind", "budget"), [("full", 8), ("streaming", 8), ("gsa", 8), ("arm", 8), ("h2o", 64)])
def test_incremental_decode_equals_the_parallel_logits(kind: str, budget: int) -> None:
    torch.manual_seed(0)
    model = ARMDecoder(
        d_model=16, num_layers=2, num_heads=2, attention=kind, budget=budget, attention_kwargs=_KW.get(kind)
    )
    model = model.double().eval()
    ids = torch.randint(0, 256, (2, 20))
    ref = model(ids)
    logits, state = model.prefill(ids[:, :7])
    outs = [logits]
    for t in range(7, 20):
        step, state = model.step(ids[:, t], state)
        outs.append(step.unsqueeze(1))
    torch.testing.assert_close(torch.cat(outs, dim=1), ref)


def test_training_step_adds_the_arm_auxiliary_loss() -> None:
    torch.manual_seed(0)
    model = ARMDecoder(d_model=16, num_layers=1, num_heads=2, budget=8, attention_kwargs=_KW["arm"], aux_weight=2.0)
    batch = RecallDataModule(seq_len=24, num_pairs=4, num_train=2, num_val=2, batch_size=2).train_dataloader()
    data = next(iter(batch))
    model.log = lambda *a, **k: None  # type: ignore[method-assign]
    noise = model.gumbel.get_state()
    total = model.training_step(data, 0).detach()
    aux = model.aux_loss().detach()
    assert float(aux) > 0
    model.gumbel.set_state(noise)  # the same Gumbel draws again
    logits = model(data["input_ids"]).detach()
    ce = torch.nn.functional.cross_entropy(logits.flatten(0, 1), data["labels"].flatten(), ignore_index=-100)
    torch.testing.assert_close(total, ce + 2.0 * aux)


def _fit(root: Path, epochs: int, ckpt: Path | None = None) -> ARMDecoder:
    torch.manual_seed(0)
    model = ARMDecoder(d_model=16, num_layers=1, num_heads=2, budget=8, attention_kwargs={"num_clusters": 2})
    dm = RecallDataModule(seq_len=24, num_pairs=4, num_train=8, num_val=4, batch_size=4)
    trainer = pl.Trainer(
        max_epochs=epochs,
        default_root_dir=root,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
        num_sanity_val_steps=0,
    )
    trainer.fit(model, dm, ckpt_path=ckpt)
    trainer.save_checkpoint(root / "end.ckpt")
    return model


def test_stop_and_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    full = _fit(tmp_path / "full", 2)
    _fit(tmp_path / "half", 1)
    resumed = _fit(tmp_path / "resumed", 2, tmp_path / "half" / "end.ckpt")
    for (name, a), b in zip(full.state_dict().items(), resumed.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, msg=name)
    fresh = _fit(tmp_path / "fresh", 1)
    assert not torch.equal(fresh.head.weight, full.head.weight)


def test_bad_attention_kind() -> None:
    with pytest.raises(ValueError, match="attention"):
        ARMDecoder(attention="linear")
    with pytest.raises(ValueError, match="divisible"):
        ARMDecoder(d_model=10, num_heads=4)


@pytest.mark.parametrize("shift", [True, False])
def test_token_shift_equals_a_hand_computation(shift: bool) -> None:
    torch.manual_seed(0)
    model = ARMDecoder(d_model=8, num_layers=1, num_heads=2, attention="full", budget=8, token_shift=shift).double()
    ids = torch.randint(0, 256, (2, 6))
    seen: list[torch.Tensor] = []
    model.blocks[0].register_forward_pre_hook(lambda _m, args: seen.append(args[0]))
    model(ids)
    emb = model.embed.weight[ids]
    expected = emb.clone()
    if model.shift is not None:
        for t in range(1, ids.shape[1]):
            expected[:, t] += emb[:, t - 1] @ model.shift.weight.T
    assert (model.shift is not None) == shift
    torch.testing.assert_close(seen[0], expected)


@pytest.mark.parametrize("kind", ["full", "arm"])
def test_decode_equals_parallel_without_token_shift(kind: str) -> None:
    torch.manual_seed(0)
    model = ARMDecoder(
        d_model=16,
        num_layers=2,
        num_heads=2,
        attention=kind,
        budget=8,
        attention_kwargs=_KW.get(kind),
        token_shift=False,
    )
    model = model.double().eval()
    ids = torch.randint(0, 256, (2, 14))
    logits, state = model.prefill(ids[:, :5])
    outs = [logits]
    for t in range(5, 14):
        step, state = model.step(ids[:, t], state)
        outs.append(step.unsqueeze(1))
    torch.testing.assert_close(torch.cat(outs, dim=1), model(ids))


def test_token_shift_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="token_shift"):
        ARMDecoder(token_shift=1)  # type: ignore[arg-type]


@pytest.mark.parametrize("read_policy", ["fixed", "learned"])
def test_inplace_decode_equals_the_parallel_logits(read_policy: str) -> None:
    """``step(..., inplace=True)``: the same logits as the parallel form; fixed-read ARM layers keep their caches."""
    torch.manual_seed(0)
    kwargs = {"num_clusters": 2, "read_policy": read_policy}
    model = ARMDecoder(d_model=16, num_layers=2, num_heads=2, attention="arm", budget=8, attention_kwargs=kwargs)
    model = model.double().eval()
    ids = torch.randint(0, 256, (2, 20))
    ref = model(ids)
    with torch.no_grad():
        logits, state = model.prefill(ids[:, :7])
        outs = [logits]
        for t in range(7, 20):
            step, new_state = model.step(ids[:, t], state, inplace=True)
            same = [a is b for a, b in zip(new_state.caches, state.caches, strict=True)]
            assert same == [read_policy == "fixed"] * 2  # learned read: new caches, as without inplace
            outs.append(step.unsqueeze(1))
            state = new_state
    torch.testing.assert_close(torch.cat(outs, dim=1), ref)
