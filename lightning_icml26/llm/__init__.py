"""A small language-model protocol (generate, log-probabilities, token counts) for the methods that call an LLM.

:class:`LanguageModel` is the protocol; :class:`HFCausalLM` adapts any transformers causal LM to it and
:func:`smollm2` loads the offline SmolLM2-135M-Instruct behind it.
"""

from __future__ import annotations

from lightning_icml26.llm.byte_tokenizer import ByteTokenizer
from lightning_icml26.llm.hf import HFCausalLM
from lightning_icml26.llm.protocol import ChatMessage, LanguageModel, continuation_scores
from lightning_icml26.llm.smollm2 import SMOLLM2_GGUF, smollm2, smollm2_cache_dir

__all__ = [
    "ByteTokenizer",
    "ChatMessage",
    "continuation_scores",
    "HFCausalLM",
    "LanguageModel",
    "SMOLLM2_GGUF",
    "smollm2",
    "smollm2_cache_dir",
]
