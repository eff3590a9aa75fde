"""VALUEFLOW: hierarchical value embeddings (HiVES) and the anchor-based intensity evaluator.

Two claims, one run (generated data, see docs/valueflow.md):

1. Embeddings. all-MiniLM-L6-v2 fine-tuned with the HiVES stage-1 loss (then stage 2), MiniLM as is, and the same
   MiniLM fine-tuned with a flat supervised-contrastive loss on the leaf-and-direction label (same batches,
   same steps). Measured on held-out texts (templates and subjects never seen in training): mean average
   precision of cosine retrieval by level (relevant = same label prefix up to the level and same direction),
   split by query direction, and the Spearman correlation between cosine and tree similarity
   (depth of the shared prefix of (L1, L2, L3, direction), 0..4). Targets: HiVES >= 1.2 x MiniLM's mean MAP and
   >= 1.5 x its Spearman; HiVES above flat SupCon at levels 1 and 2.
2. Evaluator. Responses of known intensity ranked with k - 1 = 5 anchors in m = 3 windows by a simulated judge
   (Plackett-Luce, Gumbel-max on utility = intensity); Plackett-Luce with bucket anchors (the paper's setting)
   against Borda-position interpolation on the same rankings and PL with random anchors. Target: PL-bucket
   MAE <= 0.7 x Borda's and < 1.0 (intensity scale [-10, 10]). A reference row, "Bayes oracle bucket", is the
   posterior median of the exact Plackett-Luce likelihood under the true prior of the responses (uniform on
   [-9, 9]): the smallest expected MAE any estimator can reach on these rankings, so it bounds what the
   ratio target can ask for. Neither the paper nor the authors' code compares the evaluator with Borda
   interpolation: the paper reports agreement with human raters and compares with direct scalar ratings.

``--llm`` steers SmolLM2-135M-Instruct at the five levels, scores its answers with SmolLM2 as the ranking judge
against generated anchors, and reports Spearman(level, intensity) for positive and negative steering (no target).

    python -m benchmarks.valueflow --quick --json outputs/valueflow_quick.json
    python -m benchmarks.valueflow --json benchmarks/results/valueflow.json
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from scipy.stats import spearmanr

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, write_json
from lightning_icml26.algorithms import RankingJudge, evaluate_with_judge, steering_prompt
from lightning_icml26.algorithms.valueflow_intensity import (
    borda_interpolation,
    estimate_intensity,
    pl_log_likelihood,
    sample_anchors,
)
from lightning_icml26.data.valueflow import HierarchicalBatchSampler, ValueTextDataset, make_value_texts
from lightning_icml26.data.valueflow.datamodule import collate_value_texts
from lightning_icml26.llm import smollm2
from lightning_icml26.modules import HiVESModule, MiniLMEncoder
from lightning_icml26.ops import anchor_info_nce


def authors_figures(sim: np.ndarray, levels: np.ndarray, directions: np.ndarray) -> dict[str, float]:
    """The two embedding figures as the authors' evaluation code defines them (3 levels + direction).

    ``rank_pairwise``: for every query, the other texts fall into five bins by how far up the tree they part
    from it: 0 same leaf and direction, 1 same leaf and the other direction, 2 same L2 and another L3, 3 same
    L1 and another L2, 4 another L1; the share of cross-bin pairs whose cosine to the query is ordered like
    their bins (all pairs here; the authors draw one text per bin). ``pearson_labels``: Pearson correlation of
    cosine with (the number of the three level labels that agree, position by position) + 0.5 x same direction.
    """
    n = len(sim)
    lv, dv = levels, directions
    eq = lv[:, None, :] == lv[None, :, :]
    same_dir = dv[:, None] == dv[None, :]
    bins = np.full((n, n), 4)
    bins[eq[..., 0]] = 3
    bins[eq[..., 0] & eq[..., 1]] = 2
    bins[eq.all(-1)] = 1
    bins[eq.all(-1) & same_dir] = 0
    correct = total = 0
    for a in range(n):
        keep = np.arange(n) != a
        s_a, b_a = sim[a, keep], bins[a, keep]
        groups = [np.sort(s_a[b_a == b]) for b in range(5)]
        for p in range(5):
            for q in range(p + 1, 5):
                if len(groups[p]) and len(groups[q]):
                    # pairs (x in bin p, y in bin q) with x > y
                    correct += int(np.searchsorted(groups[q], groups[p], side="left").sum())
                    total += len(groups[p]) * len(groups[q])
    label_sim = eq.sum(-1) + 0.5 * same_dir
    upper = np.triu_indices(n, 1)
    return {
        "rank_pairwise": correct / total if total else float("nan"),
        "pearson_labels": float(np.corrcoef(sim[upper], label_sim[upper])[0, 1]),
    }


def retrieval_figures(z: torch.Tensor, levels: torch.Tensor, directions: torch.Tensor) -> dict[str, float]:
    """MAP by level (all queries and by query direction), Spearman(cosine, tree similarity) and the authors' pair."""
    sim = (z @ z.T).numpy()
    n = len(z)
    lv, dv = levels.numpy(), directions.numpy()
    out: dict[str, float] = {}
    same_dir = dv[:, None] == dv[None, :]
    depth = np.zeros((n, n))
    for level in range(lv.shape[1]):
        depth += np.all(lv[:, None, : level + 1] == lv[None, :, : level + 1], axis=-1)
    for level in range(lv.shape[1]):
        relevant = (depth >= level + 1) & same_dir
        aps = np.zeros(n)
        for i in range(n):
            order = np.argsort(-np.delete(sim[i], i), kind="stable")
            rel = np.delete(relevant[i], i)[order]
            hits = np.cumsum(rel)
            aps[i] = (hits[rel] / (np.flatnonzero(rel) + 1)).mean() if rel.any() else np.nan
        out[f"map_l{level + 1}"] = float(np.nanmean(aps))
        for d, name in ((0, "supports"), (1, "opposes")):
            out[f"map_l{level + 1}_{name}"] = float(np.nanmean(aps[dv == d]))
    out["map_mean"] = float(np.mean([out[f"map_l{i + 1}"] for i in range(lv.shape[1])]))
    tree = depth + (same_dir & (depth == lv.shape[1]))  # direction is the label's last level
    upper = np.triu_indices(n, 1)
    out["spearman_tree"] = float(spearmanr(sim[upper], tree[upper]).statistic)
    out.update(authors_figures(sim, lv, dv))
    return out


def train_minilm(loss_kind: str, corpus: Any, steps: int, seed: int, batch: int) -> HiVESModule:
    """Fine-tune MiniLM + projection with ``"hives"`` (stage 1 then stage 2) or ``"supcon"`` (flat)."""
    torch.manual_seed(seed)
    module = HiVESModule(MiniLMEncoder(max_length=40), encoder_dim=384, proj_dim=128)
    module.train()
    enc_params = list(module.encoder.parameters())
    opt = torch.optim.AdamW(
        [{"params": enc_params, "lr": 3e-5}, {"params": list(module.projection.parameters()), "lr": 1e-3}]
    )
    dataset = ValueTextDataset(corpus)
    plan: list[tuple[int, list]] = []
    for stage, share in ((1, 0.6), (2, 0.4)):
        sampler = HierarchicalBatchSampler(
            corpus.levels, corpus.directions, corpus.theory_ids, batch, 4,
            individual_ids=corpus.individual_ids, concept_ids=corpus.concept_ids,
            fractions=(1.0, 0.0, 0.0) if stage == 1 else (0.5, 0.25, 0.25), num_replicas=1, rank=0, seed=seed,
        )  # fmt: skip
        epoch, batches = 0, list[list[tuple[int, int]]]()
        while len(batches) < int(steps * share):
            sampler.set_epoch(epoch)
            batches.extend(sampler)
            epoch += 1
        plan.extend((stage, b) for b in batches[: int(steps * share)])
    for stage, indices in plan:
        rows = collate_value_texts([dataset[i] for i in indices])
        if loss_kind == "hives":
            loss = module._loss(rows, stage)
        else:  # flat SupCon on (theory, leaf, direction), the same batches
            keep = rows["levels"][:, 0] >= 0
            ids = torch.where(keep, corpus.individual_ids[[i for i, _ in indices]], -1)
            loss = anchor_info_nce(module(rows["text"]), ids, temperature=0.1)
        opt.zero_grad()
        loss.backward()
        opt.step()
    module.eval()
    return module


def embeddings_claim(args: Any) -> tuple[list[dict], dict[str, dict[str, float]]]:
    per_label, heldout, steps = (3, 2, 40) if args.quick else (8, 2, 200)
    train = make_value_texts(per_label, seed=args.seed, split="train")
    test = make_value_texts(heldout, seed=args.seed + 1000, split="heldout")
    results: dict[str, dict[str, float]] = {}
    base = MiniLMEncoder(max_length=40).eval()
    with torch.no_grad():
        z = torch.cat([F.normalize(base(test.texts[i : i + 128]), dim=1) for i in range(0, len(test), 128)])
    results["MiniLM"] = retrieval_figures(z, test.levels, test.directions)
    for name, kind in (("HiVES", "hives"), ("flat SupCon", "supcon")):
        start = time.time()
        module = train_minilm(kind, train, steps, args.seed, batch=32)
        results[name] = retrieval_figures(module.embed(test.texts), test.levels, test.directions)
        results[name]["train_s"] = time.time() - start
    rows = [{"embedder": name, **{k: v for k, v in r.items() if k != "train_s"}} for name, r in results.items()]
    return rows, results


def posterior_median(
    rankings: np.ndarray, anchors: np.ndarray, low: float, high: float, points: int = 1801
) -> np.ndarray:
    """Posterior median of the response utility under a uniform prior on ``[low, high]`` (grid, exact PL)."""
    grid = np.linspace(low, high, points)
    loglik = np.stack([pl_log_likelihood(np.full(len(rankings), u), rankings, anchors, l2=0.0) for u in grid], 1)
    post = np.exp(loglik - loglik.max(axis=1, keepdims=True))
    cdf = np.cumsum(post, axis=1)
    return grid[np.argmax(cdf >= 0.5 * cdf[:, -1:], axis=1)]


def evaluator_claim(args: Any) -> tuple[list[dict], dict[str, float]]:
    n_resp, seeds = (200, 3) if args.quick else (1000, 10)
    m, k, beta = 3, 6, 1.0
    per_seed: dict[str, list[float]] = {"PL bucket": [], "PL random": [], "Borda bucket": [], "Bayes oracle bucket": []}
    for s in range(seeds):
        rng = np.random.default_rng([args.seed, s])
        pool = rng.uniform(-10, 10, size=500)
        truth = rng.uniform(-9, 9, size=n_resp)
        for sampling in ("bucket", "random"):
            idx = np.stack([[sample_anchors(pool, k, sampling, rng) for _ in range(m)] for _ in range(n_resp)])
            anchors = pool[idx]
            util = beta * np.concatenate([np.repeat(truth[:, None, None], m, 1), anchors], axis=-1)
            rankings = np.argsort(-(util + rng.gumbel(size=util.shape)), axis=-1)
            pl = estimate_intensity(rankings, anchors)
            per_seed[f"PL {sampling}"].append(float(np.mean(np.abs(pl - truth))))
            if sampling == "bucket":
                per_seed["Borda bucket"].append(float(np.mean(np.abs(borda_interpolation(rankings, anchors) - truth))))
                oracle = posterior_median(rankings, beta * anchors, -9.0 * beta, 9.0 * beta) / beta
                per_seed["Bayes oracle bucket"].append(float(np.mean(np.abs(oracle - truth))))
    rows = [
        {"estimator": name, "MAE mean": float(np.mean(v)), "MAE sd": float(np.std(v)), "seeds": len(v)}
        for name, v in per_seed.items()
    ]
    summary = {name: float(np.mean(v)) for name, v in per_seed.items()}
    return rows, summary


def llm_claim(args: Any) -> tuple[list[dict], list[dict]]:
    lm = smollm2(batch_size=8)
    judge = RankingJudge(lm)
    corpus = make_value_texts(per_label=6, seed=args.seed, theories=("duty",))
    leaf = ("duties from past acts", "fidelity", "telling the truth")
    pick = [i for i, p in enumerate(corpus.paths) if p == leaf]
    anchors = [corpus.texts[i] for i in pick]
    intens = corpus.intensities[pick].numpy()
    questions = ["Should I tell my friend the truth about the broken vase?", "Is it fine to lie on a job form?"]
    levels, texts = [], []
    for q in questions[: 1 if args.quick else 2]:
        for level in (-2, -1, 0, 1, 2):
            prompt = lm.format_chat([{"role": "user", "content": steering_prompt("honesty", level, q)}])
            texts.append(lm.generate([prompt], max_new_tokens=40)[0].strip())
            levels.append(level)
    scores = evaluate_with_judge(judge, texts, "telling the truth", anchors, intens, m=3, k=6, seed=args.seed)
    lv = np.array(levels)
    out = []
    for name, mask in (("positive (0..2)", lv >= 0), ("negative (0..-2)", lv <= 0)):
        rho = spearmanr(lv[mask], scores[mask]).statistic
        out.append({"steering": name, "n": int(mask.sum()), "spearman(level, intensity)": float(rho)})
    answers = [
        {"level": int(lv_), "intensity": float(s_), "answer": t.replace("|", "/")[:90]}
        for lv_, s_, t in zip(levels, scores, texts, strict=True)
    ]
    return out, answers


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--llm", action="store_true", help="steer and judge with SmolLM2-135M")
    parser.add_argument("--skip-embeddings", action="store_true", help="only the evaluator claim (no MiniLM)")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    figures: dict[str, Any] = {}
    targets: dict[str, dict[str, Any]] = {}
    ev_rows, ev = evaluator_claim(args)
    print("## Evaluator: MAE on [-10, 10] (m = 3 windows, k = 6)\n")
    print(markdown_table(ev_rows))
    figures["evaluator"] = ev_rows
    pl_vs_borda = ratio(ev["PL bucket"], ev["Borda bucket"])
    pl_vs_random = ratio(ev["PL bucket"], ev["PL random"])
    oracle_vs_borda = ratio(ev["Bayes oracle bucket"], ev["Borda bucket"])
    print(f"\nPL-bucket / Borda = {pl_vs_borda:.3f}; PL-bucket / PL-random = {pl_vs_random:.3f}")
    print(f"Bayes oracle / Borda = {oracle_vs_borda:.3f} (no estimator can do better on these rankings)")
    figures["oracle_over_borda_mae"] = oracle_vs_borda
    targets["pl_over_borda_mae"] = target(pl_vs_borda, "<=", 0.7)
    targets["pl_bucket_mae"] = target(ev["PL bucket"], "<", 1.0)
    if not args.skip_embeddings:
        emb_rows, emb = embeddings_claim(args)
        print("\n## Embeddings on held-out texts\n")
        cols = [
            "embedder",
            "map_l1",
            "map_l2",
            "map_l3",
            "map_mean",
            "spearman_tree",
            "rank_pairwise",
            "pearson_labels",
        ]
        cols += [f"map_l{lv}_{d}" for lv in (1, 2, 3) for d in ("supports", "opposes")]
        print(markdown_table(emb_rows, cols))
        figures["embeddings"] = emb
        map_ratio = ratio(emb["HiVES"]["map_mean"], emb["MiniLM"]["map_mean"])
        base_rho = emb["MiniLM"]["spearman_tree"]
        # a ratio to a baseline at or below zero says nothing: then the target is missed (nan)
        rho_ratio = ratio(emb["HiVES"]["spearman_tree"], base_rho) if base_rho > 0 else float("nan")
        print(f"\nHiVES / MiniLM: MAP {map_ratio:.3f}, Spearman {rho_ratio:.3f}")
        targets["hives_over_minilm_map"] = target(map_ratio, ">=", 1.2)
        targets["hives_over_minilm_spearman"] = target(rho_ratio, ">=", 1.5)
        for level in (1, 2):
            gap = emb["HiVES"][f"map_l{level}"] - emb["flat SupCon"][f"map_l{level}"]
            targets[f"hives_minus_supcon_map_l{level}"] = target(gap, ">", 0.0)
    if args.llm:
        llm_rows, answers = llm_claim(args)
        print("\n## SmolLM2 steering scored by the evaluator\n")
        print(markdown_table(llm_rows))
        print()
        print(markdown_table(answers))
        figures["llm"] = llm_rows
        figures["llm_answers"] = answers
    figures["targets"] = targets
    print_targets(targets)
    write_json(args.json, "valueflow", figures, args)


if __name__ == "__main__":
    main()
