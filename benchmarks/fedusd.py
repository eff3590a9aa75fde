"""FedUSD against FedAvg, DM and FedAF: aggregation-free federated learning under label skew.

Ten clients hold a Dirichlet(alpha) label partition of the training images; every method runs the same
number of rounds in the same single-process simulation (:class:`~lightning_icml26.callbacks.FedRoundCallback`
driving :class:`~lightning_icml26.modules.fedusd.AggregationFreeServer` through a Lightning Trainer):

- FedAvg: local SGD on real data, weights averaged by sample count (sends the model);
- DM: synthetic images matched by mean features (FedAF without knowledge matching);
- FedAF: DM plus local-global knowledge matching (class soft labels exchanged every round);
- FedUSD (code loss): 0.01 HOB sorted-W1 + 0.01 variance sorted-W1, with the reference code's default
  multi-formation (four half-resolution images packed in each synthetic image, same bytes);
- FedUSD (projection loss): top-k covariance eigenspace projection distance + the variance term, packed too;
- DM packed (``dm_mf``, an ablation, not one of the paper's baselines): DM with the same packing, to tell the
  packing's share of any gain from the HOB/variance loss's.

At the reference weights 0.01 / 0.01 the HOB/variance gradient on the pixels is tiny (about 5e-6 per pixel,
against 0.1 for DM, on a FashionMNIST client): 400 steps change the pixels by 0.3 %, so the 1000 steps of the
reference code would leave FedUSD's images within about 1 % of their initialisation. More distillation steps
therefore change DM and FedAF, not FedUSD; the CPU size keeps 40 steps per round (docs/fedusd.md).

The synthetic methods use the same ipc, distillation steps, window (3 rounds) and server budget (steps per
round, batch size, optimizer); bytes per client and round are measured, and ipc is set so that a client never
sends more than the FedAvg model. The global model's test accuracy after every round is recorded; the final
figure is the last round's (nothing is selected on the test set). Means and standard deviations over seeds.

    python -m benchmarks.fedusd --quick                     # digits (16x16), alpha 0.01, 1 seed
    python -m benchmarks.fedusd --json outputs/fedusd.json  # FashionMNIST (16x16), alpha 0.01 / 0.1 / 0.5
"""

from __future__ import annotations

import statistics
import time
from functools import partial
from typing import Any

import torch
from lightning.pytorch import Callback, LightningModule, Trainer

from benchmarks._common import benchmark_parser, markdown_table, print_targets, target, write_json
from lightning_icml26.callbacks import FedRoundCallback
from lightning_icml26.data import DirichletPartitionDataModule
from lightning_icml26.modules.fedusd import AggregationFreeServer, ConvNet, FedAvgClient, SyntheticSetDistiller

METHODS = ("fedavg", "dm", "fedaf", "fedusd", "fedusd_proj", "dm_mf")
BASELINES = ("fedavg", "dm", "fedaf")


class _Accuracy(Callback):
    """Records ``val/acc`` after every round."""

    def __init__(self) -> None:
        self.per_round: list[float] = []

    def on_validation_epoch_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if not trainer.sanity_checking:
            self.per_round.append(float(trainer.callback_metrics["val/acc"]))


def run_method(method: str, source: str, alpha: float, seed: int, cfg: dict[str, Any]) -> dict[str, Any]:
    """One federated run; returns the accuracy per round and the bytes per client and round."""
    dm = DirichletPartitionDataModule(
        source,
        num_clients=10,
        alpha=alpha,
        image_size=16,
        num_train=cfg["num_train"],
        num_test=cfg["num_test"],
        min_client_size=10,
        seed=seed,
        server_steps=cfg["server_steps"],
    )
    torch.manual_seed(seed)
    server = AggregationFreeServer(
        ConvNet(1, 10, 16), steps_per_round=cfg["server_steps"], pool_batch_size=128, seed=seed
    )
    if method == "fedavg":
        client: Any = partial(FedAvgClient, local_epochs=cfg["local_epochs"], batch_size=32, lr=0.01, momentum=0.9)
    else:
        loss = {"dm": "dm", "dm_mf": "dm", "fedaf": "fedaf", "fedusd_proj": "hob_projection"}.get(method, "hob_w1")
        client = partial(
            SyntheticSetDistiller,
            ipc=cfg["ipc"],
            loss=loss,
            real_batch=cfg["real_batch"],
            k=1,
            multi_formation=method in ("fedusd", "fedusd_proj", "dm_mf"),
        )
    rounds = FedRoundCallback(
        client, distill_steps=cfg["distill_steps"], window=3, global_knowledge=method == "fedaf", seed=seed
    )
    acc = _Accuracy()
    trainer = Trainer(
        max_epochs=cfg["rounds"],
        logger=False,
        enable_checkpointing=False,
        callbacks=[rounds, acc],
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    start = time.perf_counter()
    trainer.fit(server, datamodule=dm)
    sent = [b for entry in rounds.history for b in entry["bytes"]]
    return {
        "acc": acc.per_round,
        "bytes_max": max(sent),
        "bytes_mean": statistics.fmean(sent),
        "seconds": time.perf_counter() - start,
    }


def summarise(runs: dict[str, list[dict[str, Any]]], alpha: float, source: str) -> list[dict[str, Any]]:
    """One table row per method: final accuracy mean/std, ratio and difference to the best baseline."""
    finals = {m: [r["acc"][-1] for r in runs[m]] for m in runs}
    means = {m: statistics.fmean(v) for m, v in finals.items()}
    best = max(BASELINES, key=lambda m: means[m])
    rows = []
    for m in runs:
        rows.append(
            {
                "data": source,
                "alpha": alpha,
                "method": m,
                "final acc": means[m],
                "std": statistics.pstdev(finals[m]) if len(finals[m]) > 1 else 0.0,
                "best baseline": best,
                "ratio": means[m] / means[best],
                "diff (points)": 100 * (means[m] - means[best]),
                "acc per round": " ".join(
                    f"{statistics.fmean(r['acc'][i] for r in runs[m]):.3f}" for i in range(len(runs[m][0]["acc"]))
                ),
                "bytes/client/round (max)": max(r["bytes_max"] for r in runs[m]),
                "seconds": sum(r["seconds"] for r in runs[m]),
            }
        )
    return rows


def build_targets(rows: list[dict[str, Any]], alphas: list[float]) -> dict[str, dict[str, Any]]:
    """The claim: +6.7 points over the best baseline at alpha 0.01, above every baseline at 0.1 and 0.5.

    A target whose alpha was not run is ``nan`` (missed); the keys are the same at every size.
    """

    def diff(alpha: float, method: str) -> float:
        return next(r["diff (points)"] for r in rows if r["alpha"] == alpha and r["method"] == method)

    nan = float("nan")
    others = [a for a in alphas if a in (0.1, 0.5)]
    targets = {}
    gain = diff(0.01, "fedusd") if 0.01 in alphas else nan
    targets["fedusd_gain_points_at_alpha_0.01"] = target(gain, ">=", 6.7)
    margin = min((diff(a, "fedusd") for a in others), default=nan) if len(others) == 2 else nan
    targets["fedusd_min_gain_points_at_alpha_0.1_0.5"] = target(margin, ">", 0.0)
    low = min(alphas)
    # the HOB/variance loss, not the quadrant packing, should carry the gain: FedUSD against DM with packing
    targets["fedusd_minus_dm_packed_points_at_lowest_alpha"] = target(
        diff(low, "fedusd") - diff(low, "dm_mf"), ">", 0.0
    )
    targets["projection_minus_code_loss_points_at_lowest_alpha"] = target(
        diff(low, "fedusd_proj") - diff(low, "fedusd"), ">", 0.0
    )
    bytes_ok = all(
        r["bytes/client/round (max)"]
        <= next(q["bytes/client/round (max)"] for q in rows if q["method"] == "fedavg" and q["alpha"] == r["alpha"])
        for r in rows
    )
    targets["synthetic_bytes_at_most_fedavg"] = target(float(bytes_ok), ">=", 1.0)
    return targets


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--source", default=None, choices=["digits", "fashion_mnist", "mnist"])
    parser.add_argument("--alphas", type=float, nargs="+", default=None, help="Dirichlet alphas (full size)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.quick:
        source, alphas, seeds = args.source or "digits", [0.01], [args.seed]
        cfg = {
            "num_train": None,
            "num_test": None,
            "rounds": 3,
            "distill_steps": 30,
            "server_steps": 100,
            "ipc": 5,
            "real_batch": 32,
            "local_epochs": 2,
        }
    else:
        source, seeds = args.source or "fashion_mnist", [args.seed + i for i in range(args.seeds)]
        alphas = args.alphas or [0.01, 0.1, 0.5]
        cfg = {
            "num_train": 6000,
            "num_test": 2000,
            "rounds": 4,
            "distill_steps": 40,
            "server_steps": 150,
            "ipc": 5,
            "real_batch": 32,
            "local_epochs": 1,
        }
    rows: list[dict[str, Any]] = []
    per_seed: dict[str, dict[str, list[list[float]]]] = {}
    for i, alpha in enumerate(alphas):
        runs = {m: [run_method(m, source, alpha, s, cfg) for s in seeds] for m in METHODS}
        per_seed[str(alpha)] = {m: [r["acc"] for r in runs[m]] for m in METHODS}
        rows += summarise(runs, alpha, source)
        print(markdown_table(rows[-len(METHODS) :]), flush=True)
        # written after every alpha, so a run stopped early still leaves its finished alphas on disk
        done = alphas[: i + 1]
        figures = {
            "rows": rows,
            "acc_per_round_per_seed": per_seed,
            "config": cfg,
            "seeds": seeds,
            "alphas_done": done,
            "complete": done == alphas,
            "targets": build_targets(rows, done),
        }
        write_json(args.json, "fedusd", figures, args)
    print("\n" + markdown_table(rows))
    print_targets(build_targets(rows, alphas))


if __name__ == "__main__":
    main()
