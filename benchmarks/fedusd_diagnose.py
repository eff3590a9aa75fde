"""Diagnostics of FedUSD's client loss: does it move the synthetic pixels, and towards the real statistics?

Not a claim benchmark. One FashionMNIST client (the benchmark's partition: 6000 images at 16x16, 10 clients,
Dirichlet alpha 0.01, seed 0, client 0) distils ipc 5 with real batches of 32, under the two teacher
resamplings of the federated run: fresh networks (round 0) and a trained global model moved by a Gaussian
direction of norm 5 (later rounds; the stand-in global model is a ConvNet trained for two epochs on the
union of the clients' images). For the FedUSD loss at the reference weights (0.01 HOB + 0.01 variance) and
for DM, with and without quadrant packing, it prints:

* the loss and the root-mean-square gradient per pixel at the first step, next to the pixels' RMS;
* the relative change of the stored pixels after ``steps`` steps (``||S_T - S_0|| / ||S_0||``);
* the HOB sorted-W1, variance sorted-W1 and mean-feature gaps between the synthetic set (unpacked) and all
  the client's real images, averaged over 8 fixed networks drawn the same way, before and after.

With ``--json PATH`` it writes the rows and the diagnosis's findings as ``figures.targets``
(:func:`build_targets`, the same keys at every size; "gap closed" is ``(before - after) / before``):

* ``paper_fedusd_minus_dm_hob_gap_closed_min`` and ``paper_fedusd_minus_dm_var_gap_closed_min`` (``>= 0``):
  the paper's claim in miniature, matching the HOB and the variances removes the bias that mean matching
  leaves, read as: in the same steps, the FedUSD loss closes at least as much of the HOB (variance) gap as DM
  does; smallest over teachers, packing and step counts;
* ``diag_fedusd_pixel_change_at_most_steps_max`` (``<= 0.01``): ours, at the official weights the FedUSD loss
  moves the stored pixels by under 1 % in the most steps run (400 by default), largest over teachers and
  packing;
* ``diag_fedusd_over_dm_grad_rms_max`` (``<= 0.001``): ours, its first-step pixel gradient is at least a
  thousand times smaller than DM's (same teacher and packing), largest ratio;
* ``diag_dm_fewest_minus_fedusd_most_steps_hob_gap_closed_min`` (``> 0``): ours, DM in the fewest steps
  (40) closes more of FedUSD's own HOB gap than FedUSD in the most (400); smallest over teachers and packing.

Run: ``python -m benchmarks.fedusd_diagnose [--quick] [--steps 40 400] [--seed 0] [--json PATH]``
(``--quick``: steps 4 and 40, the same client).
"""

from __future__ import annotations

import argparse
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, worst, write_json
from lightning_icml26.data import DirichletPartitionDataModule
from lightning_icml26.modules.fedusd import ConvNet, SyntheticSetDistiller, perturbed_copy, reinitialised_copy
from lightning_icml26.ops import hob_w1_loss, mean_matching_loss, var_w1_loss


def trained_model(images: Tensor, labels: Tensor, seed: int) -> nn.Module:
    """A ConvNet trained for two epochs of SGD (a stand-in for a later round's global model)."""
    torch.manual_seed(seed)
    net = ConvNet(1, 10, 16)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    for _ in range(2):
        for idx in torch.randperm(len(images)).split(64):
            opt.zero_grad()
            F.cross_entropy(net(images[idx]), labels[idx]).backward()
            opt.step()
    return net


def feature_gaps(nets: list[nn.Module], syn: Tensor, syn_labels: Tensor, x: Tensor, y: Tensor) -> list[float]:
    """HOB sorted-W1, variance sorted-W1 and squared mean gap, per class, averaged over ``nets``."""
    sums = [0.0, 0.0, 0.0]
    with torch.no_grad():
        for net in nets:
            fr, fs = net.embed(x), net.embed(syn)  # type: ignore[operator]
            for c in syn_labels.unique():
                a, b = fs[syn_labels == c], fr[y == c]
                for i, fn in enumerate((hob_w1_loss, var_w1_loss, mean_matching_loss)):
                    sums[i] += float(fn(a, b))
    return [v / len(nets) for v in sums]


def gap_closed(row: dict[str, Any], gap: str) -> float:
    """Share of the ``gap`` (``"hob"``, ``"var"`` or ``"mean"``) the distillation closed: ``(before - after) / before``.

    Example:
        >>> gap_closed({"hob_gap_before": 0.004, "hob_gap_after": 0.003}, "hob")
        0.25
    """
    before = row[f"{gap}_gap_before"]
    return ratio(before - row[f"{gap}_gap_after"], before)


def build_targets(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The findings as targets (see the module docstring); without the rows they read ``nan`` (missed).

    Example:
        >>> row = {"teacher": "reinit", "packed": False, "hob_gap_before": 1.0, "var_gap_before": 1.0}
        >>> rows = [
        ...     row | {"loss": "hob_w1", "steps": 400, "grad_rms": 5e-6, "rel_pixel_change": 0.003,
        ...            "hob_gap_after": 0.98, "var_gap_after": 0.97},
        ...     row | {"loss": "dm", "steps": 400, "grad_rms": 0.1, "rel_pixel_change": 0.9,
        ...            "hob_gap_after": 0.7, "var_gap_after": 0.5},
        ... ]
        >>> {name: entry["met"] for name, entry in build_targets(rows).items()}  # doctest: +NORMALIZE_WHITESPACE
        {'paper_fedusd_minus_dm_hob_gap_closed_min': False, 'paper_fedusd_minus_dm_var_gap_closed_min': False,
         'diag_fedusd_pixel_change_at_most_steps_max': True, 'diag_fedusd_over_dm_grad_rms_max': True,
         'diag_dm_fewest_minus_fedusd_most_steps_hob_gap_closed_min': True}
    """
    by_key = {(r["teacher"], r["loss"], r["packed"], r["steps"]): r for r in rows}
    steps = sorted({r["steps"] for r in rows})
    settings = sorted({(r["teacher"], r["packed"]) for r in rows})
    pairs = [  # (FedUSD row, DM row) of one teacher, packing and step count
        (by_key[(t, "hob_w1", p, n)], by_key[(t, "dm", p, n)])
        for t, p in settings
        for n in steps
        if (t, "hob_w1", p, n) in by_key and (t, "dm", p, n) in by_key
    ]
    most = [(usd, dm) for usd, dm in pairs if usd["steps"] == steps[-1]]
    fewest_dm = {(dm["teacher"], dm["packed"]): dm for _, dm in pairs if dm["steps"] == steps[0]}
    return {
        "paper_fedusd_minus_dm_hob_gap_closed_min": target(
            worst([gap_closed(usd, "hob") - gap_closed(dm, "hob") for usd, dm in pairs], "min"), ">=", 0.0
        ),
        "paper_fedusd_minus_dm_var_gap_closed_min": target(
            worst([gap_closed(usd, "var") - gap_closed(dm, "var") for usd, dm in pairs], "min"), ">=", 0.0
        ),
        "diag_fedusd_pixel_change_at_most_steps_max": target(
            worst([usd["rel_pixel_change"] for usd, _ in most], "max"), "<=", 0.01
        ),
        "diag_fedusd_over_dm_grad_rms_max": target(
            worst([ratio(usd["grad_rms"], dm["grad_rms"]) for usd, dm in most], "max"), "<=", 1e-3
        ),
        "diag_dm_fewest_minus_fedusd_most_steps_hob_gap_closed_min": target(
            worst(
                [
                    gap_closed(fewest_dm[(usd["teacher"], usd["packed"])], "hob") - gap_closed(usd, "hob")
                    for usd, _ in most
                ],
                "min",
            ),
            ">",
            0.0,
        ),
    }


def _display(row: dict[str, Any]) -> dict[str, Any]:
    """The printed form of a row: the paper's names and ``before -> after`` gaps."""
    return {
        "teacher": row["teacher"],
        "loss": "FedUSD 0.01/0.01" if row["loss"] == "hob_w1" else "DM",
        "packed": row["packed"],
        "steps": row["steps"],
        "loss at step 1": row["loss_at_step_1"],
        "grad RMS / pixel": row["grad_rms"],
        "pixel RMS": row["pixel_rms"],
        "rel. pixel change": row["rel_pixel_change"],
        **{
            f"{gap} gap before -> after": f"{row[f'{gap}_gap_before']:.3g} -> {row[f'{gap}_gap_after']:.3g}"
            for gap in ("hob", "var", "mean")
        },
    }


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Distil the client for every teacher, loss, packing and step count; one row each."""
    torch.set_num_threads(1)
    dm = DirichletPartitionDataModule(
        args.source,
        num_clients=10,
        alpha=0.01,
        image_size=16,
        num_train=args.num_train,
        num_test=2000,
        min_client_size=10,
        seed=args.seed,
    )
    dm.setup("fit")
    x, y = dm.client_data(0)
    union = [dm.client_data(k) for k in range(dm.num_clients)]
    global_model = trained_model(torch.cat([u[0] for u in union]), torch.cat([u[1] for u in union]), args.seed)
    rows: list[dict[str, Any]] = []
    for resample in ("reinit", "perturb"):
        gen = torch.Generator().manual_seed(args.seed + 123)
        nets = [
            reinitialised_copy(global_model, gen) if resample == "reinit" else perturbed_copy(global_model, 5.0, gen)
            for _ in range(8)
        ]
        for loss in ("hob_w1", "dm"):
            for packed in (False, True):
                for steps in args.steps:
                    d = SyntheticSetDistiller(
                        global_model,
                        x,
                        y,
                        ipc=5,
                        loss=loss,
                        real_batch=32,
                        resample=resample,
                        seed=args.seed + 1,
                        multi_formation=packed,
                    )
                    start = d.synthetic.detach().clone()
                    syn, syn_labels = d.decoded()
                    before = feature_gaps(nets, syn.detach(), syn_labels, x, y)
                    first = d.matching_loss(*d.sample_real_batch())
                    first.backward()
                    grad = d.synthetic.grad
                    grad_rms = float(grad.pow(2).mean().sqrt()) if grad is not None else float("nan")
                    d.synthetic.grad = None
                    d.run(steps)
                    syn, syn_labels = d.decoded()
                    after = feature_gaps(nets, syn.detach(), syn_labels, x, y)
                    row: dict[str, Any] = {
                        "teacher": resample,
                        "loss": loss,
                        "packed": packed,
                        "steps": steps,
                        "loss_at_step_1": float(first.detach()),
                        "grad_rms": grad_rms,
                        "pixel_rms": float(start.pow(2).mean().sqrt()),
                        "rel_pixel_change": float((d.synthetic.detach() - start).norm() / start.norm()),
                    }
                    for i, gap in enumerate(("hob", "var", "mean")):
                        row[f"{gap}_gap_before"], row[f"{gap}_gap_after"] = before[i], after[i]
                    rows.append(row)
                    print(markdown_table([_display(row)]), flush=True)
    return rows


def _parser() -> argparse.ArgumentParser:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[40, 400], help="step counts (--quick: 4 40)")
    parser.add_argument("--source", default="fashion_mnist", help="the partitioned data set (tests use digits)")
    parser.add_argument("--num-train", type=int, default=6000, help="training images partitioned over the clients")
    return parser


def main() -> None:
    args = _parser().parse_args()
    if args.quick:
        args.steps = [4, 40]
    rows = run(args)
    print("\n" + markdown_table([_display(row) for row in rows]))
    figures: dict[str, Any] = {"rows": rows, "targets": build_targets(rows)}
    print_targets(figures["targets"])
    write_json(args.json, "fedusd_diagnose", figures, args)


if __name__ == "__main__":
    main()
