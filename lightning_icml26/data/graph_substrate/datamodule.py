"""``GraphSubstrateDataModule``: tokenised answer-only SFT batches of a G-Substrate mixture.

Each sample is ``prompt + answer + EOS``. ``labels`` copy the answer's ids (and EOS) and hold
``ignore_index`` on every prompt token and on padding, in the transformers convention (unshifted: the
model shifts). Samples longer than ``max_length`` are dropped whole, never truncated, and counted per
split in :attr:`GraphSubstrateDataModule.over_cutoff` (a warning names the count), or raise with
``over_cutoff="error"``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import torch
from lightning.pytorch import LightningDataModule
from torch.utils.data import DataLoader, Sampler

from lightning_icml26.data.graph_substrate.mixtures import build_mixture
from lightning_icml26.data.graph_substrate.roles import GraphTask

__all__ = ["EpochShuffleSampler", "GraphSubstrateDataModule", "encode_sample", "pad_collate"]


def _chat_prompt(tokenizer: Any, prompt: str) -> str:
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(
            f"use_chat_template=True but tokenizer {type(tokenizer).__name__} has no chat_template; "
            "set use_chat_template=False or give a tokenizer with a chat template"
        )
    return str(
        tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True)
    )


def encode_sample(tokenizer: Any, prompt: str, answer: str, ignore_index: int = -100) -> dict[str, list[int]]:
    """Token ids of ``prompt + answer + EOS`` and labels that score only the answer and EOS.

    Example:
        >>> from lightning_icml26.llm import ByteTokenizer
        >>> out = encode_sample(ByteTokenizer(), "Q?", "A")
        >>> out["input_ids"], out["labels"]
        ([81, 63, 65, 257], [-100, -100, 65, 257])
    """
    prompt_ids = [int(i) for i in tokenizer(prompt, add_special_tokens=True)["input_ids"]]
    answer_ids = [int(i) for i in tokenizer(answer, add_special_tokens=False)["input_ids"]]
    eos = getattr(tokenizer, "eos_token_id", None)
    if not isinstance(eos, int):
        raise ValueError(f"tokenizer {type(tokenizer).__name__} needs an int eos_token_id, got {eos!r}")
    answer_ids.append(eos)
    return {"input_ids": prompt_ids + answer_ids, "labels": [ignore_index] * len(prompt_ids) + answer_ids}


def pad_collate(
    rows: Sequence[Mapping[str, list[int]]], pad_id: int, ignore_index: int = -100
) -> dict[str, torch.Tensor]:
    """Right-pad ``input_ids`` (with ``pad_id``) and ``labels`` (with ``ignore_index``); add ``attention_mask``."""
    width = max(len(r["input_ids"]) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    labels = torch.full((len(rows), width), ignore_index, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        n = len(r["input_ids"])
        ids[i, :n] = torch.tensor(r["input_ids"])
        labels[i, :n] = torch.tensor(r["labels"])
        mask[i, :n] = 1
    return {"input_ids": ids, "labels": labels, "attention_mask": mask}


class EpochShuffleSampler(Sampler[int]):
    """A permutation of ``range(n)`` drawn from ``(seed, epoch)``; Lightning calls :meth:`set_epoch`.

    Because the order depends on the epoch number only, a run resumed from a checkpoint at an epoch
    boundary sees the same batches as an uninterrupted run.

    Example:
        >>> s = EpochShuffleSampler(4, seed=0)
        >>> first = list(s); s.set_epoch(1); sorted(list(s)) == sorted(first)
        True
    """

    def __init__(self, n: int, seed: int = 0) -> None:
        self.n, self.seed, self.epoch = n, seed, 0

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch whose permutation :meth:`__iter__` yields."""
        self.epoch = int(epoch)

    def __iter__(self) -> Iterator[int]:
        generator = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch)
        return iter(torch.randperm(self.n, generator=generator).tolist())

    def __len__(self) -> int:
        return self.n


class GraphSubstrateDataModule(LightningDataModule):
    """Isolated, naive multi-task or interleaved G-Substrate SFT data for a causal LM.

    Args:
        tokenizer: a transformers-style tokenizer (callable returning ``input_ids``, with ``eos_token_id``;
            ``pad_token_id`` or EOS pads).
        mixture: ``isolated``, ``multitask`` or ``interleaved`` (see :func:`build_mixture`).
        tasks: task names.
        role_ratios: fraction of samples per role (must sum to 1).
        num_train: training samples.
        num_val: validation samples (same mixture, another seed).
        num_nodes: inclusive range of graph sizes.
        edge_prob: edge probability.
        style: ``simple`` or ``reasoning`` answers.
        max_length: cutoff in tokens; longer samples are dropped and counted, never cut.
        over_cutoff: ``"drop"`` (warn with the count) or ``"error"``.
        use_chat_template: wrap each prompt in the tokenizer's chat template (a tokenizer without one raises).
        batch_size: rows per batch.
        seed: seed of the training data (validation uses ``seed + 1``).
        ignore_index: label value of unscored positions.
        kinds: graph kinds of consistency and extraction samples without an algorithm graph (see
            :func:`build_mixture`).

    Attributes:
        over_cutoff: ``{"train": n, "val": n}`` samples dropped for exceeding ``max_length``.
        train_tasks: the kept training samples (``GraphTask``), after :meth:`setup`.

    Example:
        >>> from lightning_icml26.llm import ByteTokenizer
        >>> dm = GraphSubstrateDataModule(ByteTokenizer(), "isolated", ["cycle"], {"algorithm": 1.0},
        ...                               num_train=4, num_val=2, batch_size=2)
        >>> dm.setup()
        >>> batch = next(iter(dm.train_dataloader()))
        >>> sorted(batch), batch["input_ids"].shape[0], dm.over_cutoff
        (['attention_mask', 'input_ids', 'labels'], 2, {'train': 0, 'val': 0})
    """

    def __init__(
        self,
        tokenizer: Any,
        mixture: str = "interleaved",
        tasks: Sequence[str] = ("connectivity", "cycle", "shortest_path", "matching", "consistency", "extraction"),
        role_ratios: Mapping[str, float] | None = None,
        num_train: int = 512,
        num_val: int = 64,
        num_nodes: tuple[int, int] = (5, 8),
        edge_prob: float = 0.3,
        style: str = "simple",
        max_length: int = 1024,
        over_cutoff: str = "drop",
        use_chat_template: bool = False,
        batch_size: int = 8,
        seed: int = 0,
        ignore_index: int = -100,
        kinds: Sequence[str] | None = None,
    ) -> None:
        super().__init__()
        if over_cutoff not in ("drop", "error"):
            raise ValueError(f"over_cutoff must be 'drop' or 'error', got {over_cutoff!r}")
        for name, value in (("num_train", num_train), ("max_length", max_length), ("batch_size", batch_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        self.tokenizer = tokenizer
        self.mixture = mixture
        self.tasks = list(tasks)
        self.role_ratios = dict(role_ratios or {"algorithm": 0.6, "consistency": 0.2, "extraction": 0.2})
        self.num_train, self.num_val = num_train, num_val
        self.num_nodes = (int(num_nodes[0]), int(num_nodes[1]))
        self.edge_prob, self.style, self.seed = edge_prob, style, seed
        self.max_length, self.over_cutoff_policy = max_length, over_cutoff
        self.use_chat_template, self.batch_size, self.ignore_index = use_chat_template, batch_size, ignore_index
        self.kinds = None if kinds is None else list(kinds)
        self.over_cutoff: dict[str, int] = {"train": 0, "val": 0}
        self.train_tasks: list[GraphTask] = []
        self.val_tasks: list[GraphTask] = []
        self._rows: dict[str, list[dict[str, list[int]]]] = {}
        # fail early on bad mixture arguments, before any Trainer starts
        build_mixture(mixture, self.tasks, self.role_ratios, 0, self.num_nodes, edge_prob, seed, style, self.kinds)

    @property
    def pad_id(self) -> int:
        """Padding id: the tokenizer's pad token, else its EOS."""
        pad = getattr(self.tokenizer, "pad_token_id", None)
        return int(pad) if isinstance(pad, int) else int(self.tokenizer.eos_token_id)

    def encode_tasks(
        self, tasks: Sequence[GraphTask], split: str
    ) -> tuple[list[GraphTask], list[dict[str, list[int]]]]:
        """Tokenise ``tasks``; drop (and count under ``split``) or refuse those longer than ``max_length``."""
        kept, rows, dropped = [], [], 0
        for task in tasks:
            prompt = _chat_prompt(self.tokenizer, task.prompt) if self.use_chat_template else task.prompt
            row = encode_sample(self.tokenizer, prompt, task.answer, self.ignore_index)
            if len(row["input_ids"]) > self.max_length:
                if self.over_cutoff_policy == "error":
                    raise ValueError(
                        f"a {task.task!r} sample has {len(row['input_ids'])} tokens, over max_length="
                        f"{self.max_length}; raise max_length or use over_cutoff='drop'"
                    )
                dropped += 1
                continue
            kept.append(task)
            rows.append(row)
        self.over_cutoff[split] = dropped
        if dropped:
            warnings.warn(
                f"{dropped} of {len(tasks)} {split} samples exceed max_length={self.max_length} tokens and were "
                "dropped (never truncated)",
                stacklevel=2,
            )
        return kept, rows

    def setup(self, stage: str | None = None) -> None:
        """Generate and tokenise the training and validation samples (once)."""
        if self._rows:
            return
        args = (self.tasks, self.role_ratios)
        rest = (self.num_nodes, self.edge_prob)
        train = build_mixture(self.mixture, *args, self.num_train, *rest, self.seed, self.style, self.kinds)
        val = build_mixture(self.mixture, *args, self.num_val, *rest, self.seed + 1, self.style, self.kinds)
        self.train_tasks, self._rows["train"] = self.encode_tasks(train, "train")
        self.val_tasks, self._rows["val"] = self.encode_tasks(val, "val")

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        rows = self._rows[split]
        return DataLoader(
            rows,  # type: ignore[arg-type]
            batch_size=self.batch_size,
            sampler=EpochShuffleSampler(len(rows), self.seed) if shuffle else None,
            collate_fn=lambda batch: pad_collate(batch, self.pad_id, self.ignore_index),
        )

    def train_dataloader(self) -> DataLoader:
        """Training batches, shuffled by :class:`EpochShuffleSampler` (seeded, per epoch)."""
        return self._loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        """Validation batches in order."""
        return self._loader("val", shuffle=False)
