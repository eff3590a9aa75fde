"""SparsityMonitor and MagnitudePrune inside a real Trainer; threshold sweep against a direct computation."""

from __future__ import annotations

import functools
import json

import lightning.pytorch as pl
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_icml26.callbacks import (
    MagnitudePrune,
    SparsityMonitor,
    classification_accuracy,
    global_magnitude_threshold,
    threshold_sweep,
)
from lightning_icml26.modules import MLP, ClassifierModule
from lightning_icml26.optim import ReWASGD


def _data(n: int = 64) -> tuple[DataLoader, DataLoader]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 6, generator=g)
    y = (x[:, 0] + x[:, 1] > 0).long() + (x[:, 2] > 1).long()
    ds = TensorDataset(x, y)
    return DataLoader(ds, batch_size=16, shuffle=True), DataLoader(ds, batch_size=32)


def _trainer(tmp_path, callbacks: list, epochs: int = 2) -> pl.Trainer:
    return pl.Trainer(
        max_epochs=epochs,
        callbacks=callbacks,
        default_root_dir=tmp_path,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
        num_sanity_val_steps=0,
    )


def _module() -> ClassifierModule:
    torch.manual_seed(0)
    opt = functools.partial(ReWASGD, lr=0.2, K=9, M=2, weight_decay=0.05, momentum=0.875)
    return ClassifierModule(MLP(6, 3, hidden=16, depth=1), num_classes=3, optimizer=opt)


def test_sparsity_monitor_logs_the_weights_figures(tmp_path) -> None:
    module = _module()
    monitor = SparsityMonitor(include="linear", threshold=1e-3)
    train, val = _data()
    trainer = _trainer(tmp_path, [monitor])
    trainer.fit(module, train, val)
    weights = [module.net[0].weight.detach(), module.net[2].weight.detach()]
    flat = torch.cat([w.flatten() for w in weights])
    nonzero = int((flat.abs() > 1e-3).sum())
    metrics = trainer.callback_metrics
    assert float(metrics["sparsity/sparsity"]) == pytest.approx(1 - nonzero / flat.numel())
    assert float(metrics["sparsity/compression_ratio"]) == pytest.approx(flat.numel() / nonzero)
    first = weights[0]
    assert float(metrics["sparsity/sparsity/net.0.weight"]) == pytest.approx(
        float((first.abs() <= 1e-3).float().mean())
    )
    assert [h["epoch"] for h in monitor.history] == [0.0, 1.0]
    restored = SparsityMonitor(include="linear")
    restored.load_state_dict(monitor.state_dict())
    assert restored.history == monitor.history
    restored.load_state_dict({})  # older checkpoints without the key load
    assert restored.history == []


def test_threshold_sweep_matches_direct_pruning() -> None:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 3, 3), nn.Flatten(), nn.Linear(12, 2))
    x = torch.randn(5, 1, 4, 4)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    rows = threshold_sweep(net, [0.0, 0.1, 0.3], evaluate=lambda m: float(m(x).sum()), include="conv")
    for k, v in net.state_dict().items():  # the module is restored
        assert torch.equal(v, before[k])
    for row in rows:
        pruned = nn.Sequential(nn.Conv2d(1, 3, 3), nn.Flatten(), nn.Linear(12, 2))
        pruned.load_state_dict(before)
        with torch.no_grad():
            pruned[0].weight[pruned[0].weight.abs() <= row["threshold"]] = 0.0
        assert row["score"] == pytest.approx(float(pruned(x).sum()))
        w = pruned[0].weight
        assert row["compression_ratio"] == pytest.approx(w.numel() / int((w != 0).sum()))


def test_global_threshold_prunes_the_requested_fraction() -> None:
    torch.manual_seed(0)
    ws = [torch.randn(100), torch.randn(30, 10)]
    thr = global_magnitude_threshold(ws, 0.7)
    pruned = sum(int((w.abs() <= thr).sum()) for w in ws)
    assert pruned == 280
    with pytest.raises(ValueError, match="amount must be a fraction"):
        global_magnitude_threshold(ws, 1.5)


def test_magnitude_prune_at_fit_end_with_sweep(tmp_path) -> None:
    module = _module()
    prune = MagnitudePrune(amount=0.6, include="linear", sweep=[0.0, 1e-3, 1e-1], filename="prune.json")
    train, val = _data()
    trainer = _trainer(tmp_path, [prune])
    trainer.fit(module, train, val)
    flat = torch.cat([module.net[0].weight.flatten(), module.net[2].weight.flatten()])
    assert float((flat == 0).float().mean()) == pytest.approx(0.6, abs=0.01)
    assert prune.pruned
    assert [r["threshold"] for r in prune.sweep_results] == [0.0, 1e-3, 1e-1]
    crs = [r["compression_ratio"] for r in prune.sweep_results]
    assert crs == sorted(crs)
    for r in prune.sweep_results:
        assert 0.0 <= r["score"] <= 1.0
    saved = json.loads((tmp_path / "prune.json").read_text())
    assert saved["sweep_results"] == prune.sweep_results
    # the sweep's score is the validation accuracy of the pruned model
    assert prune.sweep_results[0]["score"] <= 1.0


def test_fixed_mask_finetuning_keeps_pruned_weights_zero(tmp_path) -> None:
    torch.manual_seed(0)
    opt = functools.partial(torch.optim.AdamW, lr=0.05, weight_decay=0.0)  # Adam would revive zeros without a mask
    module = ClassifierModule(MLP(6, 3, hidden=16, depth=1), num_classes=3, optimizer=opt)
    prune = MagnitudePrune(threshold=0.2, include="linear", prune_at_epoch=1, evaluate=None)
    train, val = _data()
    trainer = _trainer(tmp_path, [prune], epochs=3)
    trainer.fit(module, train, val)
    assert prune.pruned
    mask = prune._masks["net.0.weight"]
    assert 0 < int((~mask).sum()) < mask.numel()
    assert bool((module.net[0].weight.detach()[~mask] == 0).all())
    assert bool((module.net[0].weight.detach()[mask] != 0).all())
    assert MagnitudePrune().state_dict()["pruned"] is False


def test_classification_accuracy_and_bad_arguments() -> None:
    net = nn.Linear(2, 2, bias=False)
    with torch.no_grad():
        net.weight.copy_(torch.eye(2))
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 1.0]])
    assert classification_accuracy(net, [(x, torch.tensor([0, 1, 1]))]) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="threshold or amount, not both"):
        MagnitudePrune(threshold=0.1, amount=0.5)
    with pytest.raises(ValueError, match="amount must lie in"):
        MagnitudePrune(amount=1.0)
    with pytest.raises(ValueError, match="prune_at_epoch"):
        MagnitudePrune(prune_at_epoch=2)
    with pytest.raises(ValueError, match="sweep thresholds must be non-negative"):
        MagnitudePrune(sweep=[-1.0])
    with pytest.raises(ValueError, match="threshold must be a non-negative number"):
        SparsityMonitor(threshold=-0.5)


@pytest.mark.parametrize("callback", [SparsityMonitor, functools.partial(MagnitudePrune, amount=0.5)])
def test_a_model_without_the_selected_layers_is_refused_at_setup(tmp_path, callback) -> None:
    # The default include=("conv",) selects nothing in an MLP: refused before the first step, naming the
    # argument and the kinds the model has, instead of logging nan (or pruning nothing) for the whole run.
    module = _module()
    seen_steps = []
    module.on_train_batch_start = lambda *args: seen_steps.append(1)
    train, val = _data()
    with pytest.raises(ValueError, match=r"include=\('conv',\)\) finds no weight .* ClassifierModule.*\['linear'\]"):
        _trainer(tmp_path, [callback()]).fit(module, train, val)
    assert seen_steps == []
    # The same model with include="linear" trains and is measured.
    monitor = SparsityMonitor(include="linear")
    _trainer(tmp_path, [monitor], epochs=1).fit(_module(), train, val)
    assert 0.0 <= monitor.history[0]["sparsity"] <= 1.0


def _masked_adamw_reference(module: ClassifierModule, batches: list, threshold: float) -> dict[str, torch.Tensor]:
    """Fixed-mask fine-tuning written out by hand: one plain epoch, prune, then mask gradients and weights."""
    opt = torch.optim.AdamW(module.parameters(), lr=0.05, weight_decay=0.0)
    weights = [module.net[0].weight, module.net[2].weight]
    for x, y in batches:  # epoch 0: no mask yet
        opt.zero_grad()
        nn.functional.cross_entropy(module(x), y).backward()
        opt.step()
    masks = [w.detach().abs() > threshold for w in weights]
    with torch.no_grad():
        for w, m in zip(weights, masks, strict=True):
            w.mul_(m)
    for x, y in batches:  # epoch 1: the fixed mask
        opt.zero_grad()
        nn.functional.cross_entropy(module(x), y).backward()
        for w, m in zip(weights, masks, strict=True):
            w.grad.mul_(m)
        opt.step()
        with torch.no_grad():
            for w, m in zip(weights, masks, strict=True):
                w.mul_(m)
    return {name: p.detach().clone() for name, p in module.named_parameters()}


def test_fixed_mask_finetuning_equals_the_hand_written_masked_loop(tmp_path) -> None:
    # The callback caches the masked tensors and their cast masks; its steps must be those of the plain loop, and
    # the same callback object, already pruned, must mask a second model it fine-tunes next (not the first one).
    g = torch.Generator().manual_seed(3)
    x, y = torch.randn(48, 6, generator=g), torch.randint(0, 3, (48,), generator=g)
    loader = DataLoader(TensorDataset(x, y), batch_size=16)
    opt = functools.partial(torch.optim.AdamW, lr=0.05, weight_decay=0.0)
    torch.manual_seed(0)
    module = ClassifierModule(MLP(6, 3, hidden=16, depth=1), num_classes=3, optimizer=opt)
    torch.manual_seed(0)
    ref = _masked_adamw_reference(ClassifierModule(MLP(6, 3, hidden=16, depth=1), num_classes=3), list(loader), 0.2)
    prune = MagnitudePrune(threshold=0.2, include="linear", prune_at_epoch=1, evaluate=None)
    _trainer(tmp_path, [prune], epochs=2).fit(module, loader)
    for name, p in module.named_parameters():
        torch.testing.assert_close(p.detach(), ref[name], rtol=1e-6, atol=1e-7)
    assert bool((module.net[0].weight.detach()[~prune._masks["net.0.weight"]] == 0).all())
    torch.manual_seed(1)
    second = ClassifierModule(MLP(6, 3, hidden=16, depth=1), num_classes=3, optimizer=opt)
    _trainer(tmp_path, [prune], epochs=1).fit(second, loader)
    for name in ("net.0.weight", "net.2.weight"):
        kept = second.get_parameter(name).detach()
        assert bool((kept[~prune._masks[name]] == 0).all())
        assert bool((kept[prune._masks[name]] != 0).all())
