"""Fair classification frontier on Adult and COMPAS: the project's attribute-blind methods against fairlearn.

For each data set and tolerance alpha (largest allowed pairwise demographic-parity gap), on the same
50/25/25 split (train / calibration / test) in one process:

* ``unconstrained``: MLP (32 hidden) argmax;
* ``ours-post``: :class:`FairPostProcessor` (LP plug-in, attribute-blind) on the MLP's ``P(Y|x)`` and
  ``p(a|x)``, fitted on the calibration split;
* ``ours-EG``: :class:`ExponentiatedGradientReduction` (MLP oracle, attribute-blind prediction) on
  train + calibration;
* ``fl-EG``: fairlearn ``ExponentiatedGradient(LogisticRegression, DemographicParity(difference_bound=alpha/2))``
  on train + calibration (``alpha/2`` around the mean rate guarantees pairwise gaps ``<= alpha``);
  one-vs-rest + argmax for the multi-class COMPAS target (fairlearn is binary-only);
* ``fl-TO``: fairlearn ``ThresholdOptimizer(demographic_parity)`` on a prefit LogisticRegression (train),
  thresholds on calibration; NEEDS the group attribute at prediction time; exact parity (no tolerance).

Accuracy and the achieved gap are measured on the test split with the true groups; randomised classifiers
are scored by their expected rates. Ratios are ours-post / fairlearn's best constraint-meeting accuracy.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import benchmark_parser, markdown_table, ratio, write_json
from lightning_icml26.algorithms.fairness import (
    ExponentiatedGradientReduction,
    FairPostProcessor,
    fit_probability_model,
    make_mlp,
)
from lightning_icml26.algorithms.fairness._common import expected_gap, one_hot
from lightning_icml26.data.tabular import load_adult, load_compas, split_indices


def _evaluate(dist: np.ndarray, y: np.ndarray, a: np.ndarray, num_groups: int) -> tuple[float, float]:
    return float(dist[np.arange(len(y)), y].mean()), expected_gap(dist, y, a, num_groups, "dp")


def run_dataset(name: str, data, alphas, args) -> list[dict]:
    from fairlearn.postprocessing import ThresholdOptimizer
    from fairlearn.reductions import DemographicParity, ExponentiatedGradient
    from sklearn.linear_model import LogisticRegression

    train, cal, test = (data.subset(i) for i in split_indices(len(data.y), (0.5, 0.25, 0.25), args.seed))
    mean, std = train.x.mean(0), train.x.std(0).clamp_min(1e-6)
    for split in (train, cal, test):
        split.x = (split.x - mean) / std
    k, g, d = data.num_classes, data.num_groups, data.x.shape[1]
    y_te, a_te = test.y.numpy(), test.a.numpy()
    fit_x = torch.cat([train.x, cal.x])
    fit_y, fit_a = torch.cat([train.y, cal.y]), torch.cat([train.a, cal.a])
    y_model = fit_probability_model(train.x, train.y, k, (32,), args.steps, lr=0.01, seed=args.seed)
    a_model = fit_probability_model(train.x, train.a, g, (32,), args.steps, lr=0.01, seed=args.seed + 1)
    with torch.no_grad():
        py_c, pa_c = y_model(cal.x).softmax(1), a_model(cal.x).softmax(1)
        py_t, pa_t = y_model(test.x).softmax(1), a_model(test.x).softmax(1)
    base_acc, base_gap = _evaluate(one_hot(py_t.argmax(1).numpy(), k), y_te, a_te, g)

    # fairlearn ThresholdOptimizer (one-vs-rest when multi-class); tolerance-free, attribute-aware
    classes = [1] if k == 2 else list(range(k))
    to_scores = []
    for c in classes:
        lr = LogisticRegression(max_iter=1000).fit(train.x.double().numpy(), (train.y.numpy() == c).astype(int))
        to = ThresholdOptimizer(
            estimator=lr, constraints="demographic_parity", prefit=True, predict_method="predict_proba"
        )
        to.fit(cal.x.double().numpy(), (cal.y.numpy() == c).astype(int), sensitive_features=cal.a.numpy())
        to_scores.append(to._pmf_predict(test.x.double().numpy(), sensitive_features=a_te)[:, 1])
    to_dist = _ovr(to_scores, k)
    to_acc, to_gap = _evaluate(to_dist, y_te, a_te, g)

    rows = []
    for alpha in alphas:
        start = time.perf_counter()
        post = FairPostProcessor(k, g, "dp", alpha, seed=args.seed).fit(py_c, pa_c, groups=cal.a)
        post_dist = post.predict_proba(py_t, pa_t, generator=torch.Generator().manual_seed(args.seed)).numpy()
        t_post = time.perf_counter() - start
        start = time.perf_counter()
        red = ExponentiatedGradientReduction(
            lambda: make_mlp(d, k, (32,)),
            k,
            g,
            "dp",
            alpha,
            max_iter=args.eg_iter,
            oracle_steps=50,
            lr=0.02,
            seed=args.seed,
        ).fit(fit_x, fit_y, fit_a)
        red_dist = red.predict_proba(test.x).numpy()
        t_red = time.perf_counter() - start
        start = time.perf_counter()
        eg_scores = []
        for c in classes:
            eg = ExponentiatedGradient(
                LogisticRegression(max_iter=1000), DemographicParity(difference_bound=alpha / 2), max_iter=args.eg_iter
            )
            eg.fit(fit_x.double().numpy(), (fit_y.numpy() == c).astype(int), sensitive_features=fit_a.numpy())
            eg_scores.append(eg._pmf_predict(test.x.double().numpy())[:, 1])
        eg_dist = _ovr(eg_scores, k)
        t_eg = time.perf_counter() - start
        post_acc, post_gap = _evaluate(post_dist, y_te, a_te, g)
        red_acc, red_gap = _evaluate(red_dist, y_te, a_te, g)
        eg_acc, eg_gap = _evaluate(eg_dist, y_te, a_te, g)
        fl_ok = [acc for acc, gap in ((eg_acc, eg_gap), (to_acc, to_gap)) if gap <= alpha]
        fl_best = max(fl_ok) if fl_ok else float("nan")
        rows.append(
            {
                "data": name,
                "alpha": alpha,
                "uncons acc/gap": f"{base_acc:.3f}/{base_gap:.3f}",
                "ours-post acc/gap": f"{post_acc:.3f}/{post_gap:.3f}",
                "ours-EG acc/gap": f"{red_acc:.3f}/{red_gap:.3f}",
                "fl-EG acc/gap": f"{eg_acc:.3f}/{eg_gap:.3f}",
                "fl-TO acc/gap (uses A)": f"{to_acc:.3f}/{to_gap:.3f}",
                "post meets": post_gap <= alpha,
                "EG meets": red_gap <= alpha,
                "post/fl-best": ratio(post_acc, fl_best),
                "ourEG/fl-best": ratio(red_acc, fl_best),
                "s post/ourEG/flEG": f"{t_post:.1f}/{t_red:.1f}/{t_eg:.1f}",
                "_figures": {
                    "unconstrained": [base_acc, base_gap],
                    "ours_post": [post_acc, post_gap],
                    "ours_eg": [red_acc, red_gap],
                    "fairlearn_eg": [eg_acc, eg_gap],
                    "fairlearn_to": [to_acc, to_gap],
                    "ours_post_train_objective_acc": 1 - post.objective_,
                    "ours_eg_train_gap": red.train_gap_,
                },
            }
        )
        print(markdown_table([{kk: v for kk, v in rows[-1].items() if kk != "_figures"}]).splitlines()[-1], flush=True)
    return rows


def _ovr(scores: list[np.ndarray], k: int) -> np.ndarray:
    """One-vs-rest: binary positive probabilities -> distribution (binary) or argmax one-hot (multi-class)."""
    if k == 2:
        return np.stack([1 - scores[0], scores[0]], 1)
    return one_hot(np.stack(scores, 1).argmax(1), k)


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--eg-iter", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(1)
    alphas = [0.02, 0.05, 0.1] if args.quick else [0.0, 0.02, 0.05, 0.1, 0.2]
    if args.quick:
        args.steps, args.eg_iter = 150, 6
    adult = load_adult("sex")
    if args.quick:
        adult = adult.subset(split_indices(len(adult.y), (4000 / len(adult.y),), 7)[0])
    else:
        adult = adult.subset(split_indices(len(adult.y), (16000 / len(adult.y),), 7)[0])
    compas = load_compas("score_text", "race3")
    if args.quick:
        compas = compas.subset(split_indices(len(compas.y), (3000 / len(compas.y),), 7)[0])
    rows = run_dataset("adult(sex)", adult, alphas, args) + run_dataset(
        "compas(score_text,race3)", compas, alphas, args
    )
    columns = [c for c in rows[0] if c != "_figures"]
    print()
    print(markdown_table(rows, columns))
    write_json(args.json, "fairness_frontier", {"rows": rows}, args)


if __name__ == "__main__":
    main()
