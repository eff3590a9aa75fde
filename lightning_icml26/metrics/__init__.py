"""torchmetrics Metric classes; functional twins live in :mod:`lightning_icml26.metrics.functional`.

Never imports lightning or :mod:`lightning_icml26.modules`."""

from __future__ import annotations

__all__: list[str] = []

from lightning_icml26.metrics.fairness import (  # noqa: E402
    BinaryDemographicParity,
    BinaryEqualizedOdds,
    BinaryEqualOpportunity,
    BinaryGroupRates,
    MulticlassDemographicParity,
    MulticlassEqualizedOdds,
    MulticlassEqualOpportunity,
    MulticlassGroupRates,
)

__all__ += [
    "BinaryDemographicParity",
    "BinaryEqualOpportunity",
    "BinaryEqualizedOdds",
    "BinaryGroupRates",
    "MulticlassDemographicParity",
    "MulticlassEqualOpportunity",
    "MulticlassEqualizedOdds",
    "MulticlassGroupRates",
]

from lightning_icml26.metrics.sparsity import CompressionRatio, Sparsity

__all__ += ["CompressionRatio", "Sparsity"]

from lightning_icml26.metrics.boltzmann import TICAW2, EffectiveSampleSize, EnergyW2, TorusW2  # noqa: E402

__all__ += ["TICAW2", "EffectiveSampleSize", "EnergyW2", "TorusW2"]

from lightning_icml26.metrics.consistency import RolloutConsistency, TokenAccuracyByHorizon  # noqa: E402

__all__ += ["RolloutConsistency", "TokenAccuracyByHorizon"]

from lightning_icml26.metrics.complementarity import (  # noqa: E402
    ComplementarityGain,
    ErrorCorrelation,
    RobustPoolingWeight,
)

__all__ += ["ComplementarityGain", "ErrorCorrelation", "RobustPoolingWeight"]
