"""MultiLayerProbe and LayerFeatureExtractor: hooks, transformers hidden states, fusion, parameter groups."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from lightning_icml26.modules import LayerFeatureExtractor, LayerFusion, MultiLayerProbe
from lightning_icml26.modules.probe import pool_tokens


def _net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))


def test_hooks_give_the_intermediate_outputs():
    net = _net()
    x = torch.randn(5, 4)
    feats = LayerFeatureExtractor(net, layer_names=["1", "3", "4"])(x)
    h1 = torch.relu(net[0](x))
    h3 = torch.relu(net[2](h1))
    torch.testing.assert_close(feats[:, 0], h1)
    torch.testing.assert_close(feats[:, 1], h3)
    torch.testing.assert_close(feats[:, 2], net[4](h3))
    with pytest.raises(ValueError, match="not sub-modules"):
        LayerFeatureExtractor(net, layer_names=["9"])
    with pytest.raises(ValueError, match="exactly one"):
        LayerFeatureExtractor(net)


def test_pooling_with_mask():
    h = torch.arange(24.0).reshape(2, 3, 4)
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    pooled = pool_tokens(h, "mean", mask)
    torch.testing.assert_close(pooled[0], h[0, :2].mean(0))
    torch.testing.assert_close(pooled[1], h[1, 0])
    torch.testing.assert_close(pool_tokens(h, "cls"), h[:, 0])


def test_transformers_hidden_states():
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=3, num_attention_heads=2, intermediate_size=32
    )
    torch.manual_seed(0)
    bert = transformers.BertModel(config).eval()
    ids = torch.randint(0, 50, (2, 7))
    mask = torch.ones(2, 7, dtype=torch.long)
    mask[1, 4:] = 0
    probe = MultiLayerProbe(num_classes=3, embed_dim=16, layers=[1, 3], backbone=bert, hidden_states=True)
    feats = probe.layer_features({"input_ids": ids, "attention_mask": mask})
    ref = bert(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
    assert feats.shape == (2, 4, 16)
    torch.testing.assert_close(feats[1, 2], ref[2][1, :4].mean(0))
    assert probe({"input_ids": ids, "attention_mask": mask}).shape == (2, 3)
    # frozen backbone: no gradient reaches it, and it stays out of the optimiser
    assert all(not p.requires_grad for p in bert.parameters())
    assert len(probe.param_groups()) == 1


def test_fine_tuned_backbone_gets_its_own_learning_rate():
    net = _net()
    probe = MultiLayerProbe(
        num_classes=3,
        embed_dim=8,
        layers=2,
        backbone=net,
        layer_names=["1", "3", "4"],
        freeze_backbone=False,
        lr=1e-3,
        backbone_lr=1e-5,
    )
    groups = probe.param_groups()
    assert [g["lr"] for g in groups] == [1e-3, 1e-5]
    assert {id(p) for p in groups[1]["params"]} == {id(p) for p in net.parameters()}
    loss = probe(torch.randn(6, 4)).sum()
    loss.backward()
    assert net[0].weight.grad is not None
    assert probe.layer_indices.tolist() == [-2, -1]


def test_selected_layers_drive_the_output():
    probe = MultiLayerProbe(num_classes=3, embed_dim=4, layers=[0, 2], adapter_dim=5).eval()
    x = torch.randn(3, 4, 4)
    out = probe(x)
    x2 = x.clone()
    x2[:, 1] += torch.randn(3, 4)  # layer 1 is not selected
    torch.testing.assert_close(probe(x2), out)
    x2[:, 2] += torch.randn(3, 4)
    assert not torch.allclose(probe(x2), out)
    probe.set_layers([1, 3])
    assert probe.layer_indices.tolist() == [1, 3]
    with pytest.raises(ValueError, match="k=2"):
        probe.set_layers([1])
    probe.set_layers([1, 9])
    with pytest.raises(ValueError, match="out of range"):
        probe(x)


def test_fusions():
    h = torch.randn(2, 3, 4)
    torch.testing.assert_close(LayerFusion(3, "mean")(h), h.mean(1))
    torch.testing.assert_close(LayerFusion(3, "sum")(h), h.sum(1))
    weighted = LayerFusion(3, "weighted")
    torch.testing.assert_close(weighted(h), h.mean(1))  # zero logits = uniform weights
    with pytest.raises(ValueError, match="fusion"):
        LayerFusion(3, "max")


@pytest.mark.parametrize(("interval", "t_max", "steps_taken"), [("step", 6, 6), ("epoch", 2, 2)])
def test_cosine_interval_sets_the_schedule_length(interval: str, t_max: int, steps_taken: int):
    from lightning.pytorch import Trainer
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    probe = MultiLayerProbe(num_classes=3, embed_dim=4, layers=[0], adapter_dim=4, cosine_interval=interval)
    data = DataLoader(TensorDataset(torch.randn(12, 2, 4), torch.arange(12) % 3), batch_size=4)  # 3 steps / epoch
    trainer = Trainer(max_epochs=2, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                      enable_model_summary=False, accelerator="cpu")  # fmt: skip
    trainer.fit(probe, data)
    scheduler = trainer.lr_scheduler_configs[0].scheduler
    assert (scheduler.T_max, scheduler.last_epoch) == (t_max, steps_taken)
    # at the end of the schedule the cosine has decayed to zero in both cases
    assert trainer.optimizers[0].param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="cosine_interval"):
        MultiLayerProbe(num_classes=3, embed_dim=4, cosine_interval="batch")
