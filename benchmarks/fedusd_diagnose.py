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

Run: ``python benchmarks/fedusd_diagnose.py [--steps 40 400] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import markdown_table
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[40, 400])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    dm = DirichletPartitionDataModule(
        "fashion_mnist",
        num_clients=10,
        alpha=0.01,
        image_size=16,
        num_train=6000,
        num_test=2000,
        min_client_size=10,
        seed=args.seed,
    )
    dm.setup("fit")
    x, y = dm.client_data(0)
    union = [dm.client_data(k) for k in range(dm.num_clients)]
    global_model = trained_model(torch.cat([u[0] for u in union]), torch.cat([u[1] for u in union]), args.seed)
    rows = []
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
                    rows.append(
                        {
                            "teacher": resample,
                            "loss": "FedUSD 0.01/0.01" if loss == "hob_w1" else "DM",
                            "packed": packed,
                            "steps": steps,
                            "loss at step 1": float(first.detach()),
                            "grad RMS / pixel": grad_rms,
                            "pixel RMS": float(start.pow(2).mean().sqrt()),
                            "rel. pixel change": float((d.synthetic.detach() - start).norm() / start.norm()),
                            "HOB gap before -> after": f"{before[0]:.3g} -> {after[0]:.3g}",
                            "var gap before -> after": f"{before[1]:.3g} -> {after[1]:.3g}",
                            "mean gap before -> after": f"{before[2]:.3g} -> {after[2]:.3g}",
                        }
                    )
                    print(markdown_table(rows[-1:]), flush=True)
    print("\n" + markdown_table(rows))


if __name__ == "__main__":
    main()
