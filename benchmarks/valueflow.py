"""VALUEFLOW: hierarchical value embeddings (HiVES) and the anchor-based intensity evaluator.

Two claims, one run (generated data, see docs/valueflow.md):

1. Embeddings, three runs of the ``valueflow_hives`` recipe: all-MiniLM-L6-v2 as is (no training, no projection),
   fine-tuned with the HiVES loss (stage 1 in epoch 0, stage 2 in epoch 1) and with the flat supervised-contrastive
   baseline on the leaf-and-direction label (``model.loss=supcon``, same batches and steps). Figures on the test
   split (held-out templates and subjects, :func:`~lightning_icml26.metrics.functional.hierarchical_retrieval`):
   MAP of cosine retrieval by level, split by query direction, Spearman(cosine, tree similarity), and the authors'
   pair-ranking and label-Pearson figures. Targets: HiVES >= 1.2 x MiniLM's mean MAP and >= 1.5 x its Spearman;
   HiVES above flat SupCon at levels 1 and 2.
2. Evaluator, the ``valueflow_intensity`` task (:class:`~lightning_icml26.tasks.ValueflowIntensityConfig`): responses
   of known intensity ranked with 5 anchors in 3 windows by a simulated Plackett-Luce judge; PL with bucket anchors
   (the paper's) against Borda interpolation on the same rankings and PL with random anchors, over seeds; the
   "Bayes oracle bucket" row (posterior median under the true prior) bounds what any estimator can reach. Target:
   PL-bucket MAE <= 0.7 x Borda's and < 1.0 (intensity scale [-10, 10]).

``--llm`` steers SmolLM2-135M-Instruct at five levels and scores its answers with SmolLM2 as the ranking judge.

    python -m benchmarks.valueflow --quick --json outputs/valueflow_quick.json
    python -m benchmarks.valueflow --json benchmarks/results/valueflow.json
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, write_json
from lightning_icml26.algorithms import RankingJudge, evaluate_with_judge, steering_prompt
from lightning_icml26.cli import run_recipe
from lightning_icml26.data.valueflow import make_value_texts
from lightning_icml26.llm import smollm2
from lightning_icml26.tasks import ValueflowIntensityConfig

ARMS = {"MiniLM": ["trainer.max_epochs=0", "model.proj_dim=null"], "HiVES": [], "flat SupCon": ["model.loss=supcon"]}
MAE = {"PL bucket": "mae_pl", "Borda bucket": "mae_borda", "Bayes oracle bucket": "mae_oracle"}


def evaluator_claim(args: Any) -> list[dict[str, Any]]:
    n_resp, seeds = (200, 3) if args.quick else (1000, 10)
    per_seed: dict[str, list[float]] = {"PL bucket": [], "PL random": [], "Borda bucket": [], "Bayes oracle bucket": []}
    for s in range(seeds):
        bucket = ValueflowIntensityConfig(n_responses=n_resp, oracle=True, seed=1000 * args.seed + s).run()
        for name, key in MAE.items():
            per_seed[name].append(bucket[key])
        per_seed["PL random"].append(
            ValueflowIntensityConfig(n_responses=n_resp, sampling="random", seed=s).run()["mae_pl"]
        )
    return [{"estimator": k, "MAE mean": statistics.fmean(v), "MAE sd": float(np.std(v)), "seeds": len(v)}
            for k, v in per_seed.items()]  # fmt: skip


def embeddings_claim(args: Any) -> dict[str, dict[str, float]]:
    per_label, steps = (3, 40) if args.quick else (8, 200)
    common = [f"data.per_label={per_label}", "data.heldout_per_label=2", f"trainer.limit_train_batches={steps // 2}",
              "trainer.limit_val_batches=0", "model.projection_lr=0.001", f"seed={args.seed}"]  # fmt: skip
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, extra in ARMS.items():
            summary = run_recipe("valueflow_hives", [*common, *extra], run_dir=Path(tmp) / name.replace(" ", "_"))
            out[name] = {k[5:]: v for k, v in summary["metrics"].items() if k.startswith("test_")}
            out[name]["train_s"] = summary["seconds"]
    return out


def llm_claim(args: Any) -> tuple[list[dict], list[dict]]:
    lm = smollm2(batch_size=8)
    corpus = make_value_texts(per_label=6, seed=args.seed, theories=("duty",))
    pick = [i for i, p in enumerate(corpus.paths) if p == ("duties from past acts", "fidelity", "telling the truth")]
    questions = ["Should I tell my friend the truth about the broken vase?", "Is it fine to lie on a job form?"]
    levels, texts = [], []
    for q in questions[: 1 if args.quick else 2]:
        for level in (-2, -1, 0, 1, 2):
            prompt = lm.format_chat([{"role": "user", "content": steering_prompt("honesty", level, q)}])
            texts.append(lm.generate([prompt], max_new_tokens=40)[0].strip())
            levels.append(level)
    scores = evaluate_with_judge(RankingJudge(lm), texts, "telling the truth", [corpus.texts[i] for i in pick],
                                 corpus.intensities[pick].numpy(), m=3, k=6, seed=args.seed)  # fmt: skip
    lv = np.array(levels)
    rows = [{"steering": name, "n": int(m.sum()), "spearman(level, intensity)": spearmanr(lv[m], scores[m]).statistic}
            for name, m in (("positive (0..2)", lv >= 0), ("negative (0..-2)", lv <= 0))]  # fmt: skip
    answers = [{"level": int(a), "intensity": float(b), "answer": t.replace("|", "/")[:90]}
               for a, b, t in zip(levels, scores, texts, strict=True)]  # fmt: skip
    return rows, answers


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--llm", action="store_true", help="steer and judge with SmolLM2-135M")
    parser.add_argument("--skip-embeddings", action="store_true", help="only the evaluator claim (no MiniLM)")
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {"evaluator": evaluator_claim(args)}
    print("## Evaluator: MAE on [-10, 10] (m = 3 windows, k = 6)\n\n" + markdown_table(figures["evaluator"]))
    ev = {row["estimator"]: row["MAE mean"] for row in figures["evaluator"]}
    figures["oracle_over_borda_mae"] = ratio(ev["Bayes oracle bucket"], ev["Borda bucket"])
    targets = {"pl_over_borda_mae": target(ratio(ev["PL bucket"], ev["Borda bucket"]), "<=", 0.7),
               "pl_bucket_mae": target(ev["PL bucket"], "<", 1.0)}  # fmt: skip
    if not args.skip_embeddings:
        emb = figures["embeddings"] = embeddings_claim(args)
        cols = ["map_l1", "map_l2", "map_l3", "map_mean", "spearman_tree", "rank_pairwise", "pearson_labels"]
        cols += [f"map_l{lv}_{d}" for lv in (1, 2, 3) for d in ("supports", "opposes")]
        print(
            "\n## Embeddings on held-out texts\n\n"
            + markdown_table([{"embedder": n, **r} for n, r in emb.items()], ["embedder", *cols])
        )
        base_rho = emb["MiniLM"]["spearman_tree"]  # a ratio to a baseline at or below zero says nothing: missed
        targets["hives_over_minilm_map"] = target(ratio(emb["HiVES"]["map_mean"], emb["MiniLM"]["map_mean"]), ">=", 1.2)
        rho = ratio(emb["HiVES"]["spearman_tree"], base_rho) if base_rho > 0 else float("nan")
        targets["hives_over_minilm_spearman"] = target(rho, ">=", 1.5)
        for level in (1, 2):
            gap = emb["HiVES"][f"map_l{level}"] - emb["flat SupCon"][f"map_l{level}"]
            targets[f"hives_minus_supcon_map_l{level}"] = target(gap, ">", 0.0)
    if args.llm:
        figures["llm"], figures["llm_answers"] = llm_claim(args)
        print("\n## SmolLM2 steering scored by the evaluator\n\n" + markdown_table(figures["llm"]))
        print("\n" + markdown_table(figures["llm_answers"]))
    figures["targets"] = targets
    print_targets(targets)
    write_json(args.json, "valueflow", figures, args)
    return figures


if __name__ == "__main__":
    main()
