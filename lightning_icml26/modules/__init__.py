"""LightningModules, one sub-package per method that trains a model, plus shared building blocks."""

from __future__ import annotations

from lightning_icml26.metrics.functional import support_f1
from lightning_icml26.modules.arm import ARMDecoder, DecodeState
from lightning_icml26.modules.causal_lm import (
    CausalLMModule,
    TinyCausalTransformer,
    TinyDecoderBlock,
    build_hf_causal_lm,
)
from lightning_icml26.modules.classifier import ClassifierModule
from lightning_icml26.modules.complementarity import HumanAICombiner
from lightning_icml26.modules.fedusd import (
    AggregationFreeServer,
    ConvNet,
    FedAvgClient,
    SyntheticSetDistiller,
)
from lightning_icml26.modules.g_substrate import (
    SubstrateSFTModule,
    answer_only_loss,
    evaluate_graph_tasks,
    tiny_byte_llama,
)
from lightning_icml26.modules.isa_edit import EditBlock, InContextEditor
from lightning_icml26.modules.itc import TokenWorldModel, VQTokenizer, rollout
from lightning_icml26.modules.nets import MLP
from lightning_icml26.modules.novelty import SelfPlayModule
from lightning_icml26.modules.probe import LayerFeatureExtractor, LayerFusion, MultiLayerProbe
from lightning_icml26.modules.resnet import BasicBlock, CifarResNet
from lightning_icml26.modules.sparse_regression import SparseRegressionModule
from lightning_icml26.modules.valueflow import HashedBagEncoder, HiVESModule, MiniLMEncoder

__all__ = [
    "ARMDecoder",
    "DecodeState",
    "SubstrateSFTModule",
    "answer_only_loss",
    "evaluate_graph_tasks",
    "tiny_byte_llama",
    "SelfPlayModule",
    "HashedBagEncoder",
    "HiVESModule",
    "MiniLMEncoder",
    "AggregationFreeServer",
    "ConvNet",
    "EditBlock",
    "InContextEditor",
    "FedAvgClient",
    "SyntheticSetDistiller",
    "BasicBlock",
    "build_hf_causal_lm",
    "CausalLMModule",
    "CifarResNet",
    "ClassifierModule",
    "HumanAICombiner",
    "LayerFeatureExtractor",
    "LayerFusion",
    "MLP",
    "MultiLayerProbe",
    "rollout",
    "SparseRegressionModule",
    "support_f1",
    "TinyCausalTransformer",
    "TinyDecoderBlock",
    "TokenWorldModel",
    "VQTokenizer",
]
