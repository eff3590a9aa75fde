"""FedUSD: aggregation-free federated learning with unbiased synthetic data.

Clients send synthetic images whose features match the real features' leading direction and variances;
the baselines (DM, FedAF, FedAvg) are client types of the same simulation.
"""

from __future__ import annotations

from lightning_icml26.modules.fedusd.augment import siamese_augment
from lightning_icml26.modules.fedusd.convnet import ConvNet, perturbed_copy, reinitialised_copy
from lightning_icml26.modules.fedusd.distiller import LOSSES, SyntheticSetDistiller
from lightning_icml26.modules.fedusd.fedavg import FedAvgClient, average_state_dicts
from lightning_icml26.modules.fedusd.formation import pack_quadrants, unpack_quadrants
from lightning_icml26.modules.fedusd.server import AggregationFreeServer, soft_cross_entropy

__all__ = [
    "AggregationFreeServer",
    "average_state_dicts",
    "ConvNet",
    "FedAvgClient",
    "LOSSES",
    "pack_quadrants",
    "perturbed_copy",
    "reinitialised_copy",
    "siamese_augment",
    "soft_cross_entropy",
    "SyntheticSetDistiller",
    "unpack_quadrants",
]
