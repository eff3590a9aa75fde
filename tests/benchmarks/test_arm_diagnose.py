"""benchmarks/arm_diagnose.py: the diagnosis's targets (same keys whatever ran), the tau measure, a tiny run."""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.benchmarks._tiny_arm import tiny_arm_decoder

diag = importlib.import_module("benchmarks.arm_diagnose")

_KEYS = {
    "full_kv_recall",
    "transplant_recall",
    "arm_recall",
    "frozen_router_recall",
    "gumbel_over_argmax_overwrites_at_init",
    "hard_choice_same_at_both_taus",
    "balanced_recall",
    "balanced_gap_to_full",
}


def test_targets_read_the_last_rows_and_are_missed_when_absent() -> None:
    figures: dict[str, Any] = {
        "runs": {
            "full": [{"recall": 0.0}, {"recall": 0.99}],
            "arm": [{"recall": 0.0, "overwritten": 0.34, "overwritten_train": 0.69}, {"recall": 0.01}],
            "arm_frozen": [{"recall": 0.0}, {"recall": 0.86}],
            "arm_balanced": [{"recall": 0.0}, {"recall": 0.95}],
        },
        "transplant": {"recall": 0.64},
        "hard_choice_agreement": 1.0,
    }
    targets = diag.build_targets(figures)
    assert targets.keys() == _KEYS
    assert all(entry["met"] for entry in targets.values())
    assert targets["gumbel_over_argmax_overwrites_at_init"]["value"] == 0.69 / 0.34
    figures["runs"]["arm"][-1]["recall"] = 0.2  # ARM learning would contradict the diagnosis
    figures["hard_choice_agreement"] = 0.98
    missed = diag.build_targets(figures)
    assert not missed["arm_recall"]["met"]
    assert not missed["hard_choice_same_at_both_taus"]["met"]
    figures["runs"]["arm_balanced"][-1]["recall"] = 0.6  # learns, but 39 points below full KV
    gap = diag.build_targets(figures)
    assert gap["balanced_recall"]["met"]
    assert not gap["balanced_gap_to_full"]["met"]
    assert gap["balanced_gap_to_full"]["value"] == 0.99 - 0.6
    empty = diag.build_targets({})
    assert empty.keys() == _KEYS
    assert all(math.isnan(e["value"]) and not e["met"] for e in empty.values())


def test_hard_choice_agreement_is_one_across_taus_and_not_across_noise() -> None:
    args = diag._parser().parse_args([])
    model = diag._model("arm", args)
    ids = diag.make_recall_batch("mqar", 8, diag.SEQ, diag.PAIRS, seed=12)["input_ids"]
    assert diag.hard_choice_agreement(model, ids, 1.0, 0.2, seed=3) == 1.0
    attn = model.arm_layers()[0]
    block = model.blocks[0]
    kh = block._qkv(model._embed(ids))[1].transpose(1, 2)
    attn.train()
    choices = []
    for seed in (3, 4):  # other noise: other choices, so the measure can tell them apart
        attn.generator = torch.Generator().manual_seed(seed)
        choices.append(attn.route(kh)[0].argmax(-1))
    assert (choices[0] == choices[1]).float().mean().item() < 0.9


def test_noise_scale_schedule_falls_linearly_then_stays() -> None:
    scales = [diag.noise_scale_at(step, 100, 0.2, 0.5) for step in (0, 25, 50, 99)]
    assert scales == pytest.approx([1.0, 0.6, 0.2, 0.2])
    assert diag.noise_scale_at(7, 100, 0.0, 0.0) == 0.0


def test_balanced_kind_sets_the_slot_loss_and_the_noise() -> None:
    args = diag._parser().parse_args(
        ["--steps", "4", "--every", "1", "--batch", "4", "--kinds", "arm_balanced", "--slot-balance", "0.5",
         "--noise-final", "0.0", "--noise-decay", "0.5"]
    )  # fmt: skip
    assert diag._model("arm_balanced", args).arm_layers()[0].slot_balance_weight == 0.5
    assert diag._model("arm", args).arm_layers()[0].slot_balance_weight == 0.0
    train = diag.make_recall_batch("mqar", 16, diag.SEQ, diag.PAIRS, seed=11)
    probe = diag.make_recall_batch("mqar", 4, diag.SEQ, diag.PAIRS, seed=12)
    model, rows = diag.train_kind("arm_balanced", args, train, probe)
    assert [row["noise_scale"] for row in rows] == [1.0, 0.5, 0.0, 0.0]
    assert all(row["aux_loss"] > 0 for row in rows)  # the fixed read costs nothing: this is the slot loss
    assert model.arm_layers()[0].noise_scale == 0.0


def test_tiny_run_writes_the_json(tmp_path: Path) -> None:
    args = diag._parser().parse_args(["--steps", "2", "--every", "1", "--batch", "4", "--kinds", "full,arm"])
    figures = diag.run(args)
    assert figures["targets"].keys() == _KEYS
    assert [row["step"] for row in figures["runs"]["arm"]] == [1, 2]
    first = figures["runs"]["arm"][0]
    assert 0 <= first["overwritten"] <= 1
    assert 0 <= first["overwritten_train"] <= 1
    assert 0 <= figures["transplant"]["recall"] <= 1
    assert math.isnan(figures["targets"]["frozen_router_recall"]["value"])  # not run: missed
    path = tmp_path / "diag.json"
    diag.write_json(path, "arm_diagnose", figures, args)
    record = json.loads(path.read_text())
    assert record["figures"]["targets"]["hard_choice_same_at_both_taus"]["met"] is True


def test_freeze_policy_gives_the_read_policy_no_gradient_until_its_cost_starts() -> None:
    argv = ["--steps", "4", "--every", "1", "--batch", "4", "--kinds", "arm_balanced", "--read-policy", "learned",
            "--read-cost", "0.5", "--cost-start", "0.5", "--cost-ramp", "0"]  # fmt: skip
    train = diag.make_recall_batch("mqar", 16, diag.SEQ, diag.PAIRS, seed=11)
    probe = diag.make_recall_batch("mqar", 4, diag.SEQ, diag.PAIRS, seed=12)
    _, frozen = diag.train_kind("arm_balanced", diag._parser().parse_args([*argv, "--freeze-policy"]), train, probe)
    _, free = diag.train_kind("arm_balanced", diag._parser().parse_args(argv), train, probe)
    assert [row["g_policy"] == 0.0 for row in frozen] == [True, True, False, False]  # cost 0 at steps 0 and 1
    assert all(row["g_policy"] > 0 for row in free)  # without it the task trains the policy from the start


def test_freeze_policy_needs_a_cost_warm_up(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr("sys.argv", ["arm_diagnose.py", "--read-policy", "learned", "--freeze-policy"])
    with pytest.raises(SystemExit):
        diag.main()
    assert "--freeze-policy needs --read-policy learned and --cost-start" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("budget", "overwritten", "value_slots", "occupied"), [(16, 1.0, 4.0, 12.0), (40, 0.0, 4.0, 20.0)]
)
def test_memory_stats_count_overwrites_of_a_forced_routing(
    monkeypatch: pytest.MonkeyPatch, budget: int, overwritten: float, value_slots: float, occupied: float
) -> None:
    """Token t goes to slot t mod M; 32 tokens, 4 pairs, window 4: the writes before the queries are tokens 0-19.

    With M = 12 each value (tokens 1, 3, 5, 7) is written over by token t + 12 < 20; with M = 36 none is, and the
    20 writes fill 20 slots (counted by hand).
    """
    model = tiny_arm_decoder(budget)
    (attn,) = model.arm_layers()
    ids = diag.make_recall_batch("mqar", 2, 32, 4, seed=0)["input_ids"]

    def forced(k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        slots = torch.arange(k.shape[2]) % attn.num_slots
        one_hot = torch.nn.functional.one_hot(slots, attn.num_slots).to(k.dtype)
        return one_hot.expand(*k.shape[:2], -1, -1), one_hot[..., :1]

    monkeypatch.setattr(attn, "route", forced)
    stats = diag.memory_stats(model, ids, pairs=4)
    assert attn.num_slots == budget - 4
    assert stats["overwritten"] == overwritten
    assert stats["overwritten_train"] == overwritten
    assert stats["value_slots"] == value_slots
    assert stats["occupied"] == occupied


@pytest.mark.parametrize("usage_penalty", [0.0, 5.0])
def test_memory_stats_replay_the_layers_own_writes(usage_penalty: float) -> None:
    """The replay's occupied slots are those of the layer's own prefill cache after the last pre-query write."""
    model = tiny_arm_decoder(16, usage_penalty=usage_penalty)
    (attn,) = model.arm_layers()
    ids = diag.make_recall_batch("mqar", 2, 32, 4, seed=0)["input_ids"]
    stats = diag.memory_stats(model, ids, pairs=4)
    model.eval()
    with torch.no_grad():
        q, k, v = model.blocks[0]._qkv(model._embed(ids[:, :24]))  # writes of tokens 0-19, as replayed
        cache = attn.prefill(q, k, v)[1]
    assert stats["occupied"] == pytest.approx(cache.occupied.float().sum(-1).mean().item())
    assert ("overwritten_train" in stats) == (usage_penalty == 0)
    if usage_penalty:
        assert stats["value_slots"] == 4.0  # four values, each avoiding the slots already used
