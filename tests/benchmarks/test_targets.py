"""Benchmark JSON targets: the shared helper, write_json's check, and each benchmark's target builder."""

from __future__ import annotations

import argparse
import importlib
import json
import math

import pytest

from benchmarks._common import check_targets, target, worst, write_json


def test_target_compares_and_formats():
    assert target(0.31, "<=", 0.25) == {"value": 0.31, "target": "<= 0.25", "met": False}
    assert target(0.25, "<=", 0.25)["met"] is True
    assert target(0.25, "<", 0.25)["met"] is False
    assert target(2.5, ">=", 2.0) == {"value": 2.5, "target": ">= 2", "met": True}
    assert target(2.0, ">", 2.0)["met"] is False
    nan = target(float("nan"), ">=", 0.0)
    assert math.isnan(nan["value"])
    assert nan["met"] is False
    with pytest.raises(ValueError, match="op must be one of"):
        target(1.0, "==", 1.0)


def test_worst_treats_any_nan_as_unmeasured():
    nan = float("nan")
    assert worst([0.5, 1.2, 0.7], "min") == 0.5
    assert worst([0.5, 1.2, 0.7], "max") == 1.2
    # the builtin min/max answer differently depending on where the nan sits; worst() never does
    assert math.isnan(worst([nan, 0.5], "min"))
    assert math.isnan(worst([0.5, nan], "min"))
    assert math.isnan(worst([], "max"))
    with pytest.raises(ValueError, match="kind must be"):
        worst([1.0], "mean")


def test_write_json_refuses_figures_without_targets(tmp_path):
    args = argparse.Namespace(quick=True)
    path = tmp_path / "out.json"
    with pytest.raises(ValueError, match="targets"):
        write_json(path, "demo", {"rows": []}, args)
    with pytest.raises(ValueError, match="targets"):
        write_json(None, "demo", {"rows": [], "targets": {}}, args)
    with pytest.raises(ValueError, match=r"targets\['x'\]"):
        write_json(path, "demo", {"targets": {"x": {"value": 1.0, "met": True}}}, args)
    assert not path.exists()
    write_json(path, "demo", {"rows": [], "targets": {"x": target(1.0, ">=", 0.5)}}, args)
    record = json.loads(path.read_text())
    assert record["figures"]["targets"] == {"x": {"value": 1.0, "target": ">= 0.5", "met": True}}
    assert check_targets(record["figures"])["x"]["met"] is True


def _builder(name: str):
    return importlib.import_module(f"benchmarks.{name}").build_targets


def test_rewa_targets_same_key_at_both_sizes():
    build = _builder("rewa_sparsity")
    quick = build({"summary": {"ReWA@3.5": {"cr_over_l1_mean": 3.0}}})
    full = build({"summary": {"ReWA@3.5": {"cr_over_l1_mean": 0.82}}})
    assert quick.keys() == full.keys() == {"rewa_cr_over_l1"}
    assert quick["rewa_cr_over_l1"] == {"value": 3.0, "target": ">= 2", "met": True}
    assert full["rewa_cr_over_l1"]["met"] is False
    unmeasured = build({"summary": {"ReWA@3.5": {"cr_over_l1_mean": float("nan")}}})
    assert unmeasured["rewa_cr_over_l1"]["met"] is False
    assert build({})["rewa_cr_over_l1"]["met"] is False


def test_loes_and_r4_and_arbg_targets():
    rows = [
        {"LOES-last": 6.3, "se(last)": 1.0, "LOES-best single (val)": 0.5},
        {"LOES-last": 4.0, "se(last)": 2.5, "LOES-best single (val)": -0.2},
    ]
    loes = _builder("loes_probe")(rows, {"mean": 0.4, "se": 0.1})
    assert loes["loes_minus_last_pt"] == {"value": 4.0, "target": ">= 3", "met": True}
    assert loes["loes_minus_last_in_standard_errors"] == {"value": 1.6, "target": ">= 2", "met": False}
    assert loes["loes_minus_best_single_pt"] == {"value": -0.2, "target": ">= 0", "met": False}
    assert loes["georeg_minus_plain_finetune_pt"]["met"] is True
    one_seed = _builder("loes_probe")([{"LOES-last": 5.0, "se(last)": float("nan")}], None)  # --quick, 1 seed
    assert one_seed.keys() == loes.keys()
    assert not any(entry["met"] for name, entry in one_seed.items() if name != "loes_minus_last_pt")
    # R4: per-seed runs -> summarise (means over seeds, paired margins) -> one target per noise level
    r4_module = importlib.import_module("benchmarks.r4_reward")
    taus = {  # (budget, noise, method) -> Kendall tau of seeds 0 and 1
        (25, 0.0, "r4"): (0.8, 0.7), (25, 0.0, "rbrl"): (0.6, 0.6), (25, 0.0, "bt_queries"): (0.7, 0.72),
        (25, 0.0, "bt_ratings"): (0.95, 0.95),  # an ablation: never in a target
        (100, 0.1, "r4"): (0.8, 0.8), (100, 0.1, "rbrl"): (0.85, 0.81), (100, 0.1, "bt_queries"): (0.5, 0.5),
    }  # fmt: skip
    runs = [
        {"env": "P", "seed": seed, "budget": b, "noise": n, "method": m, "kendall_tau": tau[seed], "spearman": 0.0}
        for (b, n, m), tau in taus.items()
        for seed in (0, 1)
    ]
    rows = importlib.import_module("lightning_icml26.tasks").summarise_alignment(runs)
    r4 = r4_module.build_targets(rows)
    assert r4.keys() == {"r4_minus_paper_baselines_tau_min_clean", "r4_minus_paper_baselines_tau_min_noisy"}
    # clean cell: r4 mean 0.75, rbrl 0.6, bt_queries 0.71 -> min margin 0.04 (bt_ratings ignored)
    assert r4["r4_minus_paper_baselines_tau_min_clean"]["value"] == pytest.approx(0.04)
    assert r4["r4_minus_paper_baselines_tau_min_clean"]["met"] is True
    # noisy cell: r4 0.8, rbrl 0.83 -> -0.03
    assert r4["r4_minus_paper_baselines_tau_min_noisy"]["value"] == pytest.approx(-0.03)
    assert r4["r4_minus_paper_baselines_tau_min_noisy"]["met"] is False
    ablation = next(r for r in rows if r["method"] == "bt_ratings")
    assert ablation["role"] == "ablation"
    assert ablation["r4-method tau"] == pytest.approx(-0.2)
    arbg_module = importlib.import_module("benchmarks.arbg_vs_flow")
    runs = [  # two seeds: per-seed test metrics -> means over seeds -> one target per metric and system
        {"arbg": {"e_w2": 1.0, "ess": 0.1, "e_w2_raw": 5.0, "val_nll": 1.0},
         "flow": {"e_w2": 2.0, "ess": 0.3, "e_w2_raw": 4.0, "val_nll": 1.1}},
        {"arbg": {"e_w2": 3.0, "ess": 0.3, "e_w2_raw": 5.0, "val_nll": 1.0},
         "flow": {"e_w2": 2.0, "ess": 0.1, "e_w2_raw": 4.0, "val_nll": 1.1}},
    ]  # fmt: skip
    rows, means = arbg_module.summarise("dw4", runs)
    assert means["e_w2"]["arbg"] == pytest.approx(2.0)
    assert means["e_w2"]["arbg_std"] == pytest.approx(math.sqrt(2.0))
    assert next(r for r in rows if r["metric"] == "ess")["ArBG wins"] == "no"  # 0.2 vs 0.2: not better
    arbg = _builder("arbg_vs_flow")("dw4", means)
    assert arbg == {
        "dw4_e_w2_ratio": {"value": 1.0, "target": "<= 1", "met": True},
        "dw4_ess_ratio": {"value": pytest.approx(1.0), "target": ">= 1", "met": True},
    }
    runs[0]["arbg"]["ess"] = math.nan
    unmeasured = _builder("arbg_vs_flow")("dw4", arbg_module.summarise("dw4", runs)[1])
    assert unmeasured["dw4_ess_ratio"]["met"] is False


def test_itc_fairness_complementarity_upipe_targets():
    metrics = {"test_sample_persistence_error_rate_last": 0.4, "test_sample_token_accuracy_h1": 0.9,
               "test_itc_persistence_error_rate_last": 0.1, "test_itc_token_accuracy_h1": 0.95}  # fmt: skip
    itc = _builder("itc_rollouts")({"grid": metrics})
    assert itc["persistence_ratio_max"] == {"value": 0.25, "target": "<= 0.5", "met": True}
    assert itc["token_acc_h1_gap_min"]["value"] == pytest.approx(0.05)
    nan = float("nan")
    figs = {k: [0.6, 0.12] for k in ("ours_post", "ours_eg", "ours_callback")}
    fair_rows = [
        {"alpha": 0.0, "post/fl-best": 0.5, "ourEG/fl-best": 0.5, "cb/fl-best": 0.5, "_figures": figs},
        {"alpha": 0.1, "post/fl-best": 1.03, "ourEG/fl-best": 1.01, "cb/fl-best": 1.02, "_figures": figs},
        # no fairlearn method qualified at this alpha: the ratios are nan and left out
        {"alpha": 0.2, "post/fl-best": nan, "ourEG/fl-best": nan, "cb/fl-best": nan, "_figures": figs},
    ]
    fair = _builder("fairness_frontier")(fair_rows)  # alpha = 0 rows are left out
    assert fair["accuracy_over_fairlearn_min"] == {"value": 1.01, "target": ">= 1", "met": True}
    assert fair["gap_excess_max"]["value"] == pytest.approx(0.02)  # 0.12 - 0.1; the alpha = 0.2 rows are inside
    assert fair["gap_excess_max"]["met"] is False
    comp_rows = [
        {"max error corr": -0.3, "worst combiner": 0.01, "worst robust w*": 0.02, "combiner - best baseline": 0.5},
        {"max error corr": 0.0, "worst combiner": 0.03, "worst robust w*": 0.0, "combiner - best baseline": -0.1},
        # latent rho < 0 but positively correlated errors (a binary task): not a row of the paper's condition
        {"max error corr": 0.6, "worst combiner": 0.0, "worst robust w*": 0.0, "combiner - best baseline": 0.0},
    ]
    comp = _builder("complementarity")(comp_rows)
    assert comp["robust_worst_gain_min"] == {"value": 0.0, "target": ">= -1e-12", "met": True}
    assert comp["negative_rho_robust_gain_min"] == {"value": 0.01, "target": "> 0", "met": True}  # corr < 0 only
    assert comp["robust_minus_best_baseline_min"]["value"] == pytest.approx(-0.1)
    assert comp["robust_minus_best_baseline_min"]["met"] is False
    comp_rows[0]["worst robust w*"] = 0.0  # no strict gain at rho < 0: the paper's claim is missed
    assert _builder("complementarity")(comp_rows)["negative_rho_robust_gain_min"]["met"] is False
    up = {"fwd_transient": 1, "peak": 2, "max_seq": 1152}
    uly = {"fwd_transient": 10, "peak": 4, "max_seq": 1024}
    figs = {"attn": {2: {"upipe": up, "ulysses": uly}}, "model": {4: {"upipe": up, "ulysses": uly}}}
    mem = _builder("upipe_memory")(figs, {"upipe": [90.0, 100.0], "ulysses": [100.0, 100.0]})
    assert mem["attn_fwd_transient_P2"] == {"value": 0.1, "target": "<= 0.15", "met": True}
    assert mem["attn_peak_P2"] == {"value": 0.5, "target": "<= 0.35", "met": False}
    assert mem["attn_max_seq_P2"]["value"] == pytest.approx(1.125)
    assert mem["model_ckpt_max_seq_P4"]["met"] is False  # 1.125 < 1.25
    assert mem["tokens_per_s_P2"] == {"value": 0.95, "target": ">= 0.9", "met": True}
    assert math.isnan(mem["layer_peak_P2"]["value"])  # scope not run: unmeasured, missed
    assert mem["attn_peak_P4"]["met"] is False
    assert set(_builder("upipe_memory")({}, None)) == set(mem)  # the same keys whatever was run
    hf = {"model": "hf_llama", "layers": 2, "mem_upipe/ulysses": 0.55, "tok_s_upipe/ulysses": 0.85}
    hf["upipe_fused_layers"] = 1  # one layer fell back to the unfused path: missed
    e2e = _builder("upipe_e2e")([hf, {"model": "upipe_attention", "mem_upipe/ulysses": 0.95}])
    assert e2e["peak_over_ulysses_max"] == {"value": 0.95, "target": "<= 1", "met": True}
    assert e2e["hf_llama_peak_over_ulysses"] == {"value": 0.55, "target": "<= 0.6", "met": True}
    assert e2e["hf_llama_tok_s_over_ulysses"] == {"value": 0.85, "target": ">= 0.9", "met": False}
    assert e2e["hf_llama_fused_layers"]["met"] is False


def test_way_se_targets():
    build = _builder("way_se")
    summary = {
        3: {"k": 3, "log_growth": 0.9, "over_etcgs": 0.5, "over_etgs_staggered": 0.05, "slope_2s": 0.70},
        10: {"k": 10, "log_growth": 1.3, "over_etcgs": 3.5, "over_etgs_staggered": 0.3, "slope_2s": 0.97},
    }
    targets = build(summary)
    assert targets["wayse_log_growth_N3"] == {"value": 0.9, "target": "<= 1.2", "met": True}
    assert targets["wayse2s_slope_N3"] == {"value": 0.70, "target": "<= 0.7167", "met": True}
    assert targets["wayse2s_slope_N10"]["target"] == "<= 0.95"
    assert not any(targets[f"{name}_N10"]["met"] for name in ("wayse_log_growth", "wayse_over_etcgs", "wayse2s_slope"))
    assert targets["wayse_over_etgs_staggered_N10"]["met"] is False
    slope = importlib.import_module("benchmarks.way_se").slope
    assert slope([10, 100, 1000], [2.0, 20.0, 200.0]) == pytest.approx(1.0)
    assert math.isnan(slope([10, 100], [0.0, 1.0]))


def test_asr_icl_targets():
    build = _builder("asr_icl")
    summary = {
        "compas": {"validity_gap": 0.0, "query_ratio": 0.12, "cost_ratio": 0.92, "cost_vs_wachter": 0.8},
        "wine": {"validity_gap": -0.05, "query_ratio": 0.3, "cost_ratio": 0.4, "cost_vs_wachter": 1.6},
    }
    targets = build(summary, {"compas": -0.27, "credit": -0.5})
    assert targets["validity_gap_compas"] == {"value": 0.0, "target": ">= -0.02", "met": True}
    assert targets["query_ratio_wine"]["met"] is True
    assert targets["cost_ratio_compas"]["met"] is False
    assert targets["cost_ratio_wine"]["met"] is True
    assert targets["validity_gap_wine"]["met"] is False
    assert targets["cost_vs_wachter_wine"]["met"] is False
    assert targets["convergence_slope_compas"]["met"] is False
    assert targets["convergence_slope_credit"] == {"value": -0.5, "target": "<= -0.3", "met": True}


def test_fairness_targets_use_the_means_over_seeds():
    nan = float("nan")
    fair = importlib.import_module("benchmarks.fairness_frontier")

    def row(seed: int, gap: float, ratio: float) -> dict:
        figs = {m: [0.8, gap] for m in ("ours_post", "ours_eg", "ours_callback")}
        keys = dict.fromkeys(("post/fl-best", "ourEG/fl-best", "cb/fl-best"), ratio)
        return {"data": "d", "seed": seed, "alpha": 0.1, **keys, "_figures": figs}

    rows = [row(0, 0.14, 0.98), row(1, 0.04, 1.04), row(2, 0.06, nan)]  # seed 2: no fairlearn method qualified
    means = fair.seed_means(rows)
    assert len(means) == 1
    assert means[0]["seeds"] == 3
    assert means[0]["_figures"]["ours_eg"][1] == pytest.approx(0.08)
    assert means[0]["sd"]["ours_eg"][1] == pytest.approx(0.05291502622129181)  # numpy std ddof=1 of the gaps
    assert means[0]["post/fl-best"] == pytest.approx(1.01)  # mean over the seeds where fairlearn qualified
    targets = fair.build_targets(rows)
    assert targets["accuracy_over_fairlearn_min"]["value"] == pytest.approx(1.01)
    assert targets["gap_excess_max"]["value"] == pytest.approx(-0.02)
    assert targets["gap_excess_max"]["met"] is True  # one seed above alpha, the mean within it
