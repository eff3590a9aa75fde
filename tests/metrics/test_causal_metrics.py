"""Causal graph metrics against direct pair-by-pair counts; 2-rank DDP equals one process."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from lightning_icml26.metrics import LatentPairF1, OrientationAccuracy, SkeletonF1, StructuralHammingDistance
from lightning_icml26.metrics.functional import (
    latent_pair_f1,
    orientation_accuracy,
    skeleton_f1,
    structural_hamming_distance,
)
from tests._support.distributed import run_on_ranks


def _random_code(p: int, rng: np.random.Generator) -> np.ndarray:
    code = np.zeros((p, p), dtype=np.int64)
    for i, j in itertools.combinations(range(p), 2):
        kind = rng.integers(0, 5)  # none, i->j, j->i, unoriented, latent pair
        if kind == 1:
            code[i, j] = 1
        elif kind == 2:
            code[j, i] = 1
        elif kind == 3:
            code[i, j] = code[j, i] = 1
        elif kind == 4:
            code[i, j] = code[j, i] = 2
    return code


def _direct(preds: list[np.ndarray], target: list[np.ndarray]) -> dict[str, float]:
    sk = {"tp": 0, "fp": 0, "fn": 0}
    lat = {"tp": 0, "fp": 0, "fn": 0}
    correct = counted = distance = 0
    for p_, t_ in zip(preds, target, strict=True):
        for i, j in itertools.combinations(range(p_.shape[0]), 2):
            pe, te = p_[i, j] > 0 or p_[j, i] > 0, t_[i, j] > 0 or t_[j, i] > 0
            sk["tp"] += pe and te
            sk["fp"] += pe and not te
            sk["fn"] += te and not pe
            pl, tl = p_[i, j] == 2, t_[i, j] == 2
            lat["tp"] += pl and tl
            lat["fp"] += pl and not tl
            lat["fn"] += tl and not pl
            distance += (p_[i, j], p_[j, i]) != (t_[i, j], t_[j, i])
            for a, b in ((i, j), (j, i)):
                if t_[a, b] == 1 and t_[b, a] == 0 and pe:
                    counted += 1
                    correct += p_[a, b] == 1 and p_[b, a] == 0

    def f1(c: dict[str, int]) -> float:
        return 2 * c["tp"] / (2 * c["tp"] + c["fp"] + c["fn"])

    return {"skeleton": f1(sk), "latent": f1(lat), "orientation": correct / counted, "shd": distance / len(preds)}


def _batches(seed: int = 0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [_random_code(6, rng) for _ in range(4)], [_random_code(6, rng) for _ in range(4)]


def test_functional_and_modular_match_direct_counts() -> None:
    preds, target = _batches()
    ref = _direct(preds, target)
    pt, tt = torch.from_numpy(np.stack(preds)), torch.from_numpy(np.stack(target))
    assert float(skeleton_f1(pt, tt)) == pytest.approx(ref["skeleton"])
    assert float(latent_pair_f1(pt, tt)) == pytest.approx(ref["latent"])
    assert float(orientation_accuracy(pt, tt)) == pytest.approx(ref["orientation"])
    assert float(structural_hamming_distance(pt, tt)) == pytest.approx(ref["shd"])
    metrics = {
        "skeleton": SkeletonF1(),
        "latent": LatentPairF1(),
        "orientation": OrientationAccuracy(),
        "shd": StructuralHammingDistance(),
    }
    for p_, t_ in zip(preds, target, strict=True):  # one graph per update
        for metric in metrics.values():
            metric.update(torch.from_numpy(p_), torch.from_numpy(t_))
    for name, metric in metrics.items():
        assert float(metric.compute()) == pytest.approx(ref[name]), name


def test_perfect_and_empty_graphs() -> None:
    code = torch.tensor([[0, 1, 2], [0, 0, 0], [2, 0, 0]])
    assert float(skeleton_f1(code, code)) == 1.0
    assert float(latent_pair_f1(code, code)) == 1.0
    assert float(structural_hamming_distance(code, code)) == 0.0
    assert torch.isnan(skeleton_f1(torch.zeros(3, 3), torch.zeros(3, 3)))


def test_bad_edge_codes() -> None:
    with pytest.raises(ValueError, match="edge codes in"):
        skeleton_f1(torch.full((3, 3), 3), torch.zeros(3, 3))
    with pytest.raises(ValueError, match="same shape"):
        skeleton_f1(torch.zeros(3, 3), torch.zeros(4, 4))
    with pytest.raises(ValueError, match=r"shape \(p, p\)"):
        SkeletonF1().update(torch.zeros(3, 4), torch.zeros(3, 4))
    with pytest.raises(TypeError, match="torch.Tensor"):
        latent_pair_f1(np.zeros((3, 3)), torch.zeros(3, 3))  # type: ignore[arg-type]


def _ddp(rank: int, world_size: int, preds: list[np.ndarray], target: list[np.ndarray]) -> list[float]:
    metrics = [SkeletonF1(), LatentPairF1(), OrientationAccuracy(), StructuralHammingDistance()]
    for p_, t_ in list(zip(preds, target, strict=True))[rank::world_size]:
        for metric in metrics:
            metric.update(torch.from_numpy(p_), torch.from_numpy(t_))
    return [float(m.compute()) for m in metrics]


@pytest.mark.distributed
@pytest.mark.slow
def test_two_ranks_equal_one_process() -> None:
    preds, target = _batches(1)
    ref = _direct(preds, target)
    expected = [ref["skeleton"], ref["latent"], ref["orientation"], ref["shd"]]
    for result in run_on_ranks(_ddp, 2, preds, target):
        assert result == pytest.approx(expected)
