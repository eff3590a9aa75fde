"""benchmarks/arm_kv_budget.py: ``--kinds`` validation, ``--merge`` of a stored run's rows, the validation trace."""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path

import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

from benchmarks.arm_diagnose import memory_stats
from lightning_icml26.data import make_recall_batch
from tests.benchmarks._tiny_arm import tiny_arm_decoder

bench = importlib.import_module("benchmarks.arm_kv_budget")


def test_kinds_are_validated_and_ordered() -> None:
    assert bench.parse_kinds("arm_learned") == ("arm_learned",)
    assert bench.parse_kinds(" h2o , full") == ("full", "h2o")
    for bad in ("", "arm", "full,lru"):
        with pytest.raises(ValueError, match="--kinds"):
            bench.parse_kinds(bad)


def test_merge_keeps_stored_rows_of_kinds_not_rerun() -> None:
    stored = {
        "figures": {
            "mqar": [
                {"budget": "1/8", "kind": "full", "recall": 0.8},
                {"budget": "1/8", "kind": "arm_fixed", "recall": 0.5},
                {"budget": "1/8", "kind": "arm_learned", "recall": 0.06},
                {"budget": "1/4", "kind": "full", "recall": 0.9},
            ],
            "decode_cost": [{"kind": "full", "context": 512}, {"kind": "arm_fixed", "context": 512}],
        }
    }
    new = [{"budget": "1/8", "kind": "arm_learned", "recall": 0.4}]
    rows, cost = bench.merge_stored(new, [], stored, ("arm_learned",))
    assert [(r["kind"], r["recall"], r["source"]) for r in rows] == [
        ("full", 0.8, "stored"),
        ("arm_fixed", 0.5, "stored"),
        ("arm_learned", 0.4, "rerun"),  # the stored 0.06 is replaced; the other budget is not merged
    ]
    assert rows[2]["vs_full"] == pytest.approx(0.5)
    assert [(c["kind"], c["source"]) for c in cost] == [("full", "stored"), ("arm_fixed", "stored")]


def _tiny_batches(steps: int) -> list[dict[str, torch.Tensor]]:
    """``steps`` MQAR batches of 2 sequences of 32 tokens (4 pairs)."""
    data = make_recall_batch("mqar", steps * 2, 32, 4, seed=5)
    return [{k: v[2 * i : 2 * i + 2] for k, v in data.items()} for i in range(steps)]


def _tiny_probe(every: int) -> bench.Probe:
    """A probe every ``every`` steps on two validation sequences shaped like ``_tiny_batches``'."""
    val = make_recall_batch("mqar", 2, 32, 4, seed=6)
    return bench.Probe(every, val["input_ids"], val["labels"], 32 - 2 * 4 + 1, pairs=4)


def _tiny_arm(**attention_kwargs: object) -> bench.ARMDecoder:
    """The tiny ARM decoder with the benchmark's routing (budget 16, two clusters)."""
    return tiny_arm_decoder(num_clusters=2, **{**bench.ARM_ROUTING, **attention_kwargs})


def test_validation_trace_does_not_change_training() -> None:
    """A traced run (probes every 2 steps) ends with the same weights as an untraced one, and logs each probe."""
    batches = _tiny_batches(4)
    probe = _tiny_probe(2)
    weights = []
    for use_probe in (None, probe):
        model = _tiny_arm(noise_scale=1.0)  # Gumbel noise drawn from the decoder's generator
        _, trace, _ = bench._train(model, batches, use_probe)
        weights.append({k: v.clone() for k, v in model.state_dict().items()})
        if use_probe is None:
            assert trace == []
    assert [row["step"] for row in trace] == [2, 4]
    assert all(0.0 <= row["val_recall"] <= 1.0 and row["train_loss"] > 0 for row in trace)
    # the step-2 probe's memory replay samples Gumbel routing (penalty still off): it must not shift training's noise
    # (the benchmark itself routes without noise; the probe does not rely on that)
    assert "mem_overwritten_train" in trace[0]
    assert "mem_overwritten_train" not in trace[1]
    for name, value in weights[0].items():
        torch.testing.assert_close(weights[1][name], value, rtol=0, atol=0, msg=name)


def test_trace_records_the_memory_as_replayed_on_the_validation_sequences() -> None:
    """The last probe's ``mem_*`` figures are ``memory_stats`` of the trained model on the probe's sequences; a full
    attention model's trace has none."""
    batches = _tiny_batches(4)
    probe = _tiny_probe(2)
    model = _tiny_arm()
    _, trace, _ = bench._train(model, batches, probe)
    want = memory_stats(model, probe.ids, 4)
    assert {key: trace[-1][f"mem_{key}"] for key in want} == pytest.approx(want, rel=1e-6)
    assert 1.0 <= trace[-1]["mem_value_slots"] <= 4.0
    full = bench.ARMDecoder(d_model=16, num_layers=1, num_heads=2, attention="full")
    _, full_trace, _ = bench._train(full, batches, probe)
    assert not any(key.startswith("mem_") for row in full_trace for key in row)


@pytest.mark.parametrize("pairs", [0, 9])
def test_probe_pairs_must_fit_the_sequences(pairs: int) -> None:
    val = make_recall_batch("mqar", 2, 32, 4, seed=6)
    with pytest.raises(ValueError, match=rf"Probe pairs must be in 1\.\.8 for sequences of 32 tokens, got {pairs}$"):
        bench.Probe(2, val["input_ids"], val["labels"], 25, pairs=pairs)


def _run(seed: int, full: float, arm: float, ms: float, steps: int = 3000) -> dict:
    rows = bench.summarize({("1/8", "full"): [(full, math.nan, 1.0)], ("1/8", "arm_fixed"): [(arm, 48.0, 2.0)]})
    cost = [
        {"kind": "arm_fixed", "context": 512, "ms_per_token": ms, "kv_bytes": 10.0},
        {"kind": "arm_fixed", "context": 2048, "ms_per_token": ms, "kv_bytes": 10.0},
    ]
    return {
        "benchmark": "arm_kv_budget",
        "command": f"run {seed}",
        "time": "t",
        "figures": {
            "config": {"steps": steps, "seeds": [seed]},
            "mqar": rows,
            "decode_cost": cost,
            "traces": {f"1/8 full seed {seed}": [{"step": 1, "train_loss": 4.0, "val_recall": 0.0}]},
        },
    }


def test_pool_gives_the_statistics_of_all_seeds_together() -> None:
    pooled = bench.pool_records([("a.json", _run(0, 1.0, 0.5, 1.0)), ("b.json", _run(1, 0.8, 0.9, 3.0))])
    rows = {row["kind"]: row for row in pooled["mqar"]}
    assert pooled["config"]["seeds"] == [0, 1]
    assert rows["arm_fixed"]["recall"] == pytest.approx(0.7)
    assert rows["arm_fixed"]["recall_sd"] == pytest.approx(0.2)  # population spread of 0.5 and 0.9
    assert rows["arm_fixed"]["vs_full"] == pytest.approx(0.7 / 0.9)
    assert pooled["targets"]["full_minus_arm_recall_1_8"]["value"] == pytest.approx(0.2)
    assert [c["ms_per_token"] for c in pooled["decode_cost"]] == [2.0, 2.0]
    assert set(pooled["traces"]) == {"1/8 full seed 0", "1/8 full seed 1"}
    assert [p["path"] for p in pooled["pooled_from"]] == ["a.json", "b.json"]


def test_pool_refuses_other_settings_repeated_seeds_and_merged_runs() -> None:
    with pytest.raises(ValueError, match=r"b\.json was run with steps=1500 but a\.json with steps=3000"):
        bench.pool_records([("a.json", _run(0, 1, 0.5, 1)), ("b.json", _run(1, 1, 0.5, 1, steps=1500))])
    with pytest.raises(ValueError, match=r"seed 0 is in both a\.json and b\.json"):
        bench.pool_records([("a.json", _run(0, 1, 0.5, 1)), ("b.json", _run(0, 1, 0.5, 1))])
    merged = _run(1, 1, 0.5, 1)
    merged["figures"]["merged_from"] = {}
    with pytest.raises(ValueError, match="--merge"):
        bench.pool_records([("a.json", _run(0, 1, 0.5, 1)), ("b.json", merged)])
    with_text = _run(1, 1, 0.5, 1)
    with_text["figures"]["byte_perplexity_1_8"] = {"full": 3.0}
    with pytest.raises(ValueError, match="b.json holds byte perplexity"):
        bench.pool_records([("a.json", _run(0, 1, 0.5, 1)), ("b.json", with_text)])
    with pytest.raises(ValueError, match="not of arm_kv_budget"):
        bench.pool_records([("a.json", _run(0, 1, 0.5, 1)), ("g.json", {"benchmark": "g_substrate", "figures": {}})])
    with pytest.raises(ValueError, match="at least two"):
        bench.pool_records([("a.json", _run(0, 1, 0.5, 1))])


def test_pool_of_chosen_kinds_ignores_arm_settings_only_when_no_arm_kind_is_pooled() -> None:
    """``--pool ... --kinds full``: baselines of runs with other ARM settings pool; ARM kinds still must match."""
    old, new = _run(0, 1.0, 0.5, 1.0), _run(1, 0.8, 0.9, 3.0)
    old["figures"]["config"]["arm_learned"] = {"budget_cost": 0.05}  # made before a change to ARM's training
    new["figures"]["config"] |= {"arm_learned": {"budget_cost": 1.5}, "usage_start": 0.5, "budgets": ["1/8"]}
    new["figures"]["traces"]["1/8 arm_fixed seed 1"] = []
    pooled = bench.pool_records([("old.json", old), ("new.json", new)], ("full",))
    assert [(row["kind"], row["recall_per_seed"]) for row in pooled["mqar"]] == [("full", [1.0, 0.8])]
    assert pooled["config"] == {"steps": 3000, "seeds": [0, 1], "budgets": ["1/8"]}
    assert pooled["pooled_kinds"] == ["full"]
    assert pooled["decode_cost"] == []
    assert set(pooled["traces"]) == {"1/8 full seed 0", "1/8 full seed 1"}
    with pytest.raises(ValueError, match=r"new\.json was run with arm_learned="):
        bench.pool_records([("old.json", old), ("new.json", new)], ("full", "arm_fixed"))
    with pytest.raises(ValueError, match=r"new\.json was run with arm_learned="):
        bench.pool_records([("old.json", old), ("new.json", new)])
    with pytest.raises(ValueError, match=r"--pool --kinds: old\.json has no rows of \['gsa'\]"):
        bench.pool_records([("old.json", old), ("new.json", new)], ("full", "gsa"))
    shorter = _run(1, 0.8, 0.9, 3.0, steps=1500)  # a setting of every kind still counts
    with pytest.raises(ValueError, match=r"new\.json was run with steps=1500"):
        bench.pool_records([("old.json", old), ("new.json", shorter)], ("full",))
    broken = _run(1, 0.8, 0.9, 3.0)
    broken["figures"]["traces"] = {"full": []}
    with pytest.raises(ValueError, match=r"--pool: broken\.json has a trace or memory key 'full'"):
        bench.pool_records([("old.json", old), ("broken.json", broken)], ("full",))


def test_merged_records_keep_the_arm_settings_of_their_arm_rows() -> None:
    """A merge that reruns no ARM kind takes ``arm_learned``/``usage_start`` from the stored run, whose rows stay."""
    baselines = [_run(seed, 1.0, 0.5, 1.0) for seed in (0, 1)]
    pooled = bench.pool_records([("a.json", baselines[0]), ("b.json", baselines[1])], ("full",))
    stored = _run(0, 0.9, 0.8, 2.0)
    stored["figures"]["config"] |= {"arm_learned": {"usage_penalty": 32.0}, "usage_start": 0.5}
    merged = bench.merge_pooled(pooled, "s.json", stored)
    assert [(row["kind"], row["source"]) for row in merged["mqar"]] == [("full", "rerun"), ("arm_fixed", "stored")]
    assert bench.usage_setting(merged["config"]) == (32.0, 0.5)
    learned = bench.pool_records([("a.json", _run(0, 1.0, 0.5, 1.0)), ("b.json", _run(1, 1.0, 0.5, 1.0))])
    learned["config"] |= {"arm_learned": {"usage_penalty": 8.0}, "usage_start": 0.2}
    assert bench.usage_setting(bench.merge_pooled(learned, "s.json", stored)["config"]) == (8.0, 0.2)


def test_pool_kinds_from_the_command_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    """``--pool A B --kinds full --json OUT`` writes the pooled baseline; an unknown kind is a clear error."""
    paths = []
    for seed, recall in ((0, 1.0), (1, 0.5)):
        paths.append(tmp_path / f"seed{seed}.json")
        paths[-1].write_text(json.dumps(_run(seed, recall, 0.5, 1.0)))
    out = tmp_path / "pooled.json"
    monkeypatch.setattr(
        "sys.argv", ["arm_kv_budget.py", "--pool", *map(str, paths), "--kinds", "full", "--json", str(out)]
    )
    bench.main()
    figures = json.loads(out.read_text())["figures"]
    assert [(row["kind"], row["recall"]) for row in figures["mqar"]] == [("full", 0.75)]
    monkeypatch.setattr("sys.argv", ["arm_kv_budget.py", "--pool", *map(str, paths), "--kinds", "fulll"])
    with pytest.raises(SystemExit):
        bench.main()
    assert "--kinds must be a comma-separated subset of" in capsys.readouterr().err


def test_lr_schedule_matches_torch_cosine_annealing_after_the_warmup() -> None:
    """``constant`` is the warm-up every earlier run used; ``cosine`` is it times torch's ``CosineAnnealingLR``."""
    total = 300
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total, eta_min=0.0)
    for step in range(total):
        warm = min(1.0, (step + 1) / bench.WARMUP)
        assert bench.lr_factor(step, total, "constant") == warm
        assert bench.lr_factor(step, total, "cosine") == pytest.approx(warm * cosine.get_last_lr()[0], abs=1e-12)
        opt.step()
        cosine.step()
    with pytest.raises(ValueError, match="schedule must be one of"):
        bench.lr_factor(0, total, "linear")


def test_wsd_schedule_matches_torch_constant_then_linear_decay_after_the_warmup() -> None:
    """``wsd`` is the warm-up times torch's ``LinearLR`` from 1 to 0 started at the last fifth of the steps."""
    total, decay = 300, round(bench.WSD_DECAY_FRACTION * 300)
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    stable = torch.optim.lr_scheduler.ConstantLR(opt, factor=1.0, total_iters=total - decay)
    linear = torch.optim.lr_scheduler.LinearLR(opt, start_factor=1.0, end_factor=0.0, total_iters=decay)
    reference = torch.optim.lr_scheduler.SequentialLR(opt, [stable, linear], milestones=[total - decay])
    factors = []
    for step in range(total):
        warm = min(1.0, (step + 1) / bench.WARMUP)
        factors.append(bench.lr_factor(step, total, "wsd"))
        assert factors[-1] == pytest.approx(warm * reference.get_last_lr()[0], abs=1e-12)
        opt.step()
        reference.step()
    assert factors[total - decay - 1] == factors[total - decay] == 1.0  # full rate up to the decay's first step
    assert 0.0 < factors[-1] < factors[-2]
    assert bench.lr_factor(total, total, "wsd") == 0.0


def _no_training(*args: object, **kwargs: object) -> None:
    """Stands in for the MQAR run in tests of refusals: a refusal that fails to stop ``main`` fails fast."""
    pytest.fail("main went on to train instead of refusing")


@pytest.mark.parametrize(
    ("flag", "value", "merge_error"),
    [
        ("--lr-schedule", "cosine", "trained with lr_schedule 'constant', this run with 'cosine'"),
        ("--grad-clip", "1", "trained with grad_clip None, this run with 1.0"),
    ],
)
def test_training_flags_are_refused_where_nothing_trains_or_rows_trained_otherwise(
    flag: str,
    value: str,
    merge_error: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
    tmp_path: Path,
) -> None:
    """A pool trains nothing; a merge refuses stored rows trained under another schedule or clipping."""
    monkeypatch.setattr(bench, "LR_SCHEDULE", "constant")  # main sets both: restored after the test
    monkeypatch.setattr(bench, "GRAD_CLIP", None)
    monkeypatch.setattr(bench, "_mqar_run", _no_training)
    missing = str(tmp_path / "missing.json")
    monkeypatch.setattr("sys.argv", ["arm_kv_budget.py", "--pool", missing, missing, flag, value])
    with pytest.raises(SystemExit):
        bench.main()
    assert f"drop the training options [{flag!r}]" in capsys.readouterr().err
    stored = tmp_path / "stored.json"
    stored.write_text(json.dumps(_run(0, 1.0, 0.5, 1.0)))
    monkeypatch.setattr("sys.argv", ["arm_kv_budget.py", "--kinds", "full", "--merge", str(stored), flag, value])
    with pytest.raises(SystemExit):
        bench.main()
    assert merge_error in capsys.readouterr().err


@pytest.mark.parametrize("clip", ["0", "-1", "nan", "inf"])
def test_grad_clip_must_be_a_finite_positive_norm(
    clip: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setattr(bench, "GRAD_CLIP", None)  # main sets it: restored after the test
    monkeypatch.setattr(bench, "_mqar_run", _no_training)
    monkeypatch.setattr("sys.argv", ["arm_kv_budget.py", "--kinds", "full", "--grad-clip", clip])
    with pytest.raises(SystemExit):
        bench.main()
    assert "--grad-clip must be a finite number > 0" in capsys.readouterr().err


def _traced_gradients(
    clip: float | None, monkeypatch: pytest.MonkeyPatch, probe: bench.Probe | None = None
) -> tuple[list[list[torch.Tensor]], list[dict[str, float]]]:
    """The gradients AdamW sees at each step of a 3-step tiny run with ``GRAD_CLIP = clip``, and the run's trace."""
    monkeypatch.setattr(bench, "GRAD_CLIP", clip)
    seen: list[list[torch.Tensor]] = []

    def record(opt: torch.optim.Optimizer, args: object, kwargs: object) -> None:
        seen.append([p.grad.clone() for g in opt.param_groups for p in g["params"] if p.grad is not None])

    handle = register_optimizer_step_pre_hook(record)
    try:
        torch.manual_seed(0)
        _, trace, _ = bench._train(_tiny_arm(), _tiny_batches(3), probe)
    finally:
        handle.remove()
    return seen, trace


def _total_norm(gradients: list[torch.Tensor]) -> float:
    return torch.linalg.vector_norm(torch.stack([g.norm() for g in gradients])).item()


def test_grad_clip_scales_the_gradients_to_the_largest_norm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Step 1 (same weights): the clipped gradients are the unclipped ones times ``C / norm``; every step <= ``C``."""
    plain, _ = _traced_gradients(None, monkeypatch)
    norms = [_total_norm(step) for step in plain]
    clip = 0.5 * min(norms)  # below every unclipped norm: clipping acts at every step
    clipped, _ = _traced_gradients(clip, monkeypatch)
    assert len(clipped) == len(plain) == 3
    for got, want in zip(clipped[0], plain[0], strict=True):
        torch.testing.assert_close(got, want * (clip / norms[0]), rtol=1e-5, atol=1e-9)
    for step in clipped:
        assert _total_norm(step) <= clip * (1 + 1e-5)


def test_trace_logs_the_gradient_norm_before_clipping(monkeypatch: pytest.MonkeyPatch) -> None:
    """Probes every step: unclipped, the trace's norms are those of the gradients AdamW saw; clipped, step 1 (same
    weights) logs the unclipped norm, not the clipped one, and probes every 3 steps log their mean and largest."""
    plain, trace = _traced_gradients(None, monkeypatch, _tiny_probe(1))
    norms = [_total_norm(step) for step in plain]
    assert [row["grad_norm_mean"] for row in trace] == pytest.approx(norms, rel=1e-5)
    assert [row["grad_norm_max"] for row in trace] == pytest.approx(norms, rel=1e-5)
    clip = 0.5 * min(norms)
    clipped, clipped_trace = _traced_gradients(clip, monkeypatch, _tiny_probe(1))
    assert _total_norm(clipped[0]) == pytest.approx(clip, rel=1e-5)
    assert clipped_trace[0]["grad_norm_max"] == pytest.approx(norms[0], rel=1e-5)
    _, window = _traced_gradients(None, monkeypatch, _tiny_probe(3))
    assert [row["step"] for row in window] == [3]
    assert window[0]["grad_norm_mean"] == pytest.approx(sum(norms) / 3, rel=1e-5)
    assert window[0]["grad_norm_max"] == pytest.approx(max(norms), rel=1e-5)


def test_pooled_runs_of_one_kind_merge_with_a_stored_run() -> None:
    """``--pool A B --merge STORED``: the pooled kind replaces the stored one, other kinds and targets come along."""
    learned = [_run(seed, 1.0, 0.5, 1.0) for seed in (0, 1)]
    for record, recall in zip(learned, (0.3, 0.7), strict=True):
        record["figures"]["mqar"] = bench.summarize({("1/8", "arm_learned"): [(recall, 12.0 + 12 * recall, 1.0)]})
        record["figures"]["decode_cost"] = []
    pooled = bench.pool_records([("a.json", learned[0]), ("b.json", learned[1])])
    stored = _run(0, 1.0, 0.8, 2.0)
    merged = bench.merge_pooled(pooled, "s.json", {**stored, "figures": {**stored["figures"]}})
    rows = {row["kind"]: row for row in merged["mqar"]}
    assert [(k, r["source"]) for k, r in rows.items()] == [
        ("full", "stored"),
        ("arm_fixed", "stored"),
        ("arm_learned", "rerun"),
    ]
    assert rows["arm_learned"]["recall"] == pytest.approx(0.5)
    assert rows["arm_learned"]["recall_per_seed"] == [0.3, 0.7]
    targets = merged["targets"]
    assert targets["fixed_minus_learned_recall_1_8"]["value"] == pytest.approx(0.3)
    assert targets["learned_slots_fraction_of_fixed_1_8"]["value"] == pytest.approx(18.0 / 48.0)
    assert targets["arm_decode_time_ratio_2048_over_512"]["value"] == pytest.approx(1.0)  # stored decode cost
    assert merged["merged_from"]["path"] == "s.json"
    assert merged["rerun_kinds"] == ["arm_learned"]


@pytest.mark.parametrize("freeze", [True, False])
def test_learned_training_freezes_the_policy_only_while_the_cost_is_zero(freeze: bool) -> None:
    """With the cost off all run long, a frozen policy only decays (AdamW, zero gradient); unfrozen, it trains."""
    batches = _tiny_batches(3)
    model = _tiny_arm(read_policy="learned")
    (layer,) = model.arm_layers()
    assert layer.policy is not None
    before = [p.detach().clone() for p in layer.policy.parameters()]
    schedule = bench.LearnedTraining(cost=1.0, start=1.0, ramp=0.0, freeze_policy=freeze)
    bench._train(model, batches, learned=schedule)
    decay = math.prod(1 - bench.LR * min(1.0, (s + 1) / bench.WARMUP) * 0.01 for s in range(3))
    assert layer.budget_cost == 0.0
    for p, b in zip(layer.policy.parameters(), before, strict=True):
        if freeze:
            torch.testing.assert_close(p.detach(), b * decay, rtol=1e-6, atol=1e-9)
        else:
            assert (p.detach() - b * decay).abs().max() > 1e-6
    assert schedule.as_config() == {"budget_cost": 1.0, "cost_start": 1.0, "cost_ramp": 0.0, "freeze_policy": freeze}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"cost": -1.0}, "budget_cost"), ({"start": 1.5}, "start"), ({"initial_full_read": 1.0}, "initial_full_read")],
)
def test_learned_training_rejects_bad_settings(kwargs: dict[str, float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        bench.LearnedTraining(**kwargs)


@pytest.mark.parametrize(("policy", "every"), [("fixed", 1), ("learned", 1), ("fixed", 3)])
def test_resuming_a_branch_ends_like_the_uninterrupted_run(policy: str, every: int) -> None:
    """Train 4 steps; branch after 2 and continue in a fresh model: same weights and trace, bit for bit.

    The learned read draws its Gumbel noise from the decoder's generator, which the branch must carry; with a probe
    every 3 steps the branch also carries a half-done window (two losses and gradient norms of the step-3 probe).
    """
    batches = _tiny_batches(4)
    probe = _tiny_probe(every)
    whole = _tiny_arm(read_policy=policy)
    _, trace, branch = bench._train(whole, batches, probe, branch_at=2)
    assert branch is not None
    assert branch.step == 2
    assert [row["step"] for row in branch.trace] == [step for step in (1, 2) if step % every == 0]
    assert len(branch.grad_norms) == len(branch.losses) == 2 % every
    torch.manual_seed(1)  # another initialisation and RNG state: everything must come from the branch
    resumed = _tiny_arm(read_policy=policy)
    resumed.gumbel.manual_seed(7)
    torch.manual_seed(2)
    _, resumed_trace, none = bench._train(resumed, batches, probe, resume=branch)
    assert none is None
    assert resumed_trace == trace
    for name, value in whole.state_dict().items():
        torch.testing.assert_close(resumed.state_dict()[name], value, rtol=0, atol=0, msg=name)


def test_learned_read_continues_from_the_fixed_reads_branch() -> None:
    """A branch taken at the end of a stopped fixed-read run loads into a learned-read model; the policy is new."""
    batches = _tiny_batches(3)
    fixed = _tiny_arm()
    _, _, branch = bench._train(fixed, batches, branch_at=2, stop=2)
    assert branch is not None
    assert branch.step == 2
    learned = _tiny_arm(read_policy="learned", initial_full_read=0.95)
    (layer,) = learned.arm_layers()
    assert layer.policy is not None
    policy = {k: v.clone() for k, v in layer.policy.state_dict().items()}
    bench._train(learned, batches, stop=2, resume=branch)  # zero steps: the loaded state only
    for name, value in fixed.state_dict().items():
        torch.testing.assert_close(learned.state_dict()[name], value, rtol=0, atol=0, msg=name)
    for name, value in layer.policy.state_dict().items():
        torch.testing.assert_close(value, policy[name], rtol=0, atol=0, msg=name)
    opt = torch.optim.AdamW(learned.parameters())
    bench._load_branch(learned, opt, branch)  # AdamW state by parameter name; the policy's is fresh
    assert branch.optimizer["blocks.0.attn.w_slot"]["exp_avg"].abs().sum() > 0
    torch.testing.assert_close(opt.state[layer.w_slot]["exp_avg"], branch.optimizer["blocks.0.attn.w_slot"]["exp_avg"])
    assert all(p not in opt.state for p in layer.policy.parameters())
    bench._train(learned, batches, resume=branch)  # the third step trains the policy too
    grads = [p.grad for p in layer.policy.parameters()]
    assert all(g is not None for g in grads)
    assert sum(float(g.abs().sum()) for g in grads if g is not None) > 0
    other = bench.ARMDecoder(d_model=16, num_layers=1, num_heads=2, attention="full", budget=16)
    with pytest.raises(ValueError, match="same weights plus a read policy"):
        bench._train(other, batches, resume=branch)


def test_branch_step_is_the_first_costed_step() -> None:
    assert bench.LearnedTraining(start=0.75, ramp=0.1).branch_step(3000) == 2250
    assert bench.LearnedTraining(start=1.0, ramp=0.0).branch_step(10) == 10  # never costed: no branch within
    assert bench.LearnedTraining(start=0.0).branch_step(10) == 0
    with pytest.raises(ValueError, match="branch_from_fixed"):
        bench.LearnedTraining(branch_from_fixed=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="freeze_policy and branch_from_fixed"):
        bench.LearnedTraining(freeze_policy=True, branch_from_fixed=True)
    config = bench.LearnedTraining(freeze_policy=False, branch_from_fixed=True).as_config()
    assert config["branch_from_fixed"] is True


@pytest.mark.parametrize("value", ["-1", "nan", "inf"])
def test_usage_penalty_flag_is_validated(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, value: str
) -> None:
    monkeypatch.setattr("sys.argv", ["arm_kv_budget.py", "--usage-penalty", value])
    with pytest.raises(SystemExit):
        bench.main()
    assert "--usage-penalty must be a finite number >= 0" in capsys.readouterr().err
    assert bench.ARM_ROUTING["usage_penalty"] == bench.ARM_USAGE_PENALTY == 32.0  # nothing changed by a refused run


def test_usage_penalty_flag_reaches_every_arm_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(bench.ARM_ROUTING, "usage_penalty", 3.0)
    for name in ("arm_fixed", "arm_top_p", "arm_learned"):
        kind, kwargs = bench._attention(name, 64)
        assert kind == "arm"
        assert kwargs["usage_penalty"] == 3.0
    model = bench._model("arm_fixed", 64, 1, 0)
    assert all(layer.usage_penalty == 3.0 for layer in model.arm_layers())


def test_usage_start_trains_on_the_key_router_until_it_begins(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``--usage-start 0.5`` the first half is bit for bit the run without a penalty; then the penalty acts."""
    batches = _tiny_batches(4)
    monkeypatch.delitem(bench.ARM_ROUTING, "usage_penalty")
    plain_half, plain = _tiny_arm(), _tiny_arm()
    bench._train(plain_half, batches, stop=2)
    bench._train(plain, batches)
    monkeypatch.setitem(bench.ARM_ROUTING, "usage_penalty", 50.0)
    monkeypatch.setattr(bench, "USAGE_START", 0.5)
    late_half, late = _tiny_arm(), _tiny_arm()
    bench._train(late_half, batches, stop=2)
    bench._train(late, batches)
    for name, value in plain_half.state_dict().items():
        torch.testing.assert_close(late_half.state_dict()[name], value, rtol=0, atol=0, msg=name)
    assert late_half.arm_layers()[0].usage_penalty == 0.0
    assert late.arm_layers()[0].usage_penalty == 50.0
    assert any(not torch.equal(late.state_dict()[k], v) for k, v in plain.state_dict().items())


def test_usage_flags_are_set_from_each_call_alone(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    """A call with --usage-penalty 0 leaves nothing behind for the next call of ``main`` in the same process."""
    monkeypatch.setitem(bench.ARM_ROUTING, "usage_penalty", 8.0)  # restored after the test
    monkeypatch.setattr(bench, "USAGE_START", 0.5)
    missing = str(tmp_path / "missing.json")
    for argv, routed in ((["--usage-penalty", "0"], False), ([], True)):
        monkeypatch.setattr("sys.argv", ["arm_kv_budget.py", *argv, "--kinds", "nope"])
        with pytest.raises(SystemExit):
            bench.main()
        assert ("usage_penalty" in bench.ARM_ROUTING) == routed
        assert bench.USAGE_START == 0.5
    monkeypatch.setattr("sys.argv", ["arm_kv_budget.py", "--usage-penalty", "0", "--usage-start", "0.2"])
    with pytest.raises(SystemExit):
        bench.main()
    assert "--usage-start needs a --usage-penalty above 0" in capsys.readouterr().err
    monkeypatch.setattr("sys.argv", ["arm_kv_budget.py", "--pool", missing, missing, "--usage-start", "0.2"])
    with pytest.raises(SystemExit):
        bench.main()
    assert "--usage-penalty/--usage-start" in capsys.readouterr().err


def test_merge_refuses_stored_arm_rows_routed_otherwise() -> None:
    stored = {"figures": {"config": {}, "mqar": [{"kind": "full"}, {"kind": "arm_fixed"}, {"kind": "arm_learned"}]}}
    bench.check_merge_routing(stored, ("arm_fixed", "arm_learned"), (8.0, 0.5))  # every ARM row rerun
    bench.check_merge_routing(stored, ("arm_learned",), (None, None))  # same routing as the stored run
    bench.check_merge_routing(stored, ("full",), (8.0, 0.5))  # no ARM kind rerun: routing changes nothing there
    with pytest.raises(ValueError, match=r"stored run's \['arm_fixed'\] were routed with"):
        bench.check_merge_routing(stored, ("arm_learned",), (8.0, 0.5))
