"""``SubstrateSFTModule``: answer-only supervised fine-tuning of a causal LM on G-Substrate samples.

The module trains any transformers-style causal LM (``model(input_ids=..., attention_mask=...).logits``)
on batches from :class:`~lightning_icml26.data.graph_substrate.GraphSubstrateDataModule`: the loss is
the next-token cross-entropy on answer tokens only (prompt and padding labels are ``ignore_index``).
LoRA adapters come from ``peft`` when ``lora`` is given. Evaluation generates greedily through the
:class:`~lightning_icml26.llm.LanguageModel` protocol and scores exact match per task and edge
micro-F1, BLEU and ROUGE-L of extraction (:func:`evaluate_graph_tasks`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule
from torch import nn
from torchmetrics.text import BLEUScore, ROUGEScore

from lightning_icml26._optional import require
from lightning_icml26._requirements import Requirement, declare_requirements
from lightning_icml26.data.graph_substrate import GraphTask, final_answer
from lightning_icml26.llm import ByteTokenizer, HFCausalLM, LanguageModel
from lightning_icml26.metrics import EdgeMicroF1, GraphExactMatch
from lightning_icml26.modules.causal_lm import build_hf_causal_lm

__all__ = ["SubstrateSFTModule", "answer_only_loss", "evaluate_graph_tasks", "tiny_byte_llama"]

OptimizerFactory = Callable[[Iterable[Any]], torch.optim.Optimizer]


def _default_optimizer(params: Iterable[Any]) -> torch.optim.Optimizer:
    return torch.optim.AdamW(params, lr=1e-3)


def tiny_byte_llama(
    seed: int = 0, hidden_size: int = 128, num_layers: int = 2, num_heads: int = 4, max_positions: int = 2048
) -> nn.Module:
    """A random-weight Llama-config causal LM over :class:`~lightning_icml26.llm.ByteTokenizer` ids (CPU-sized).

    Args:
        seed: weight seed.
        hidden_size: model width (MLP width is 4x).
        num_layers: decoder layers.
        num_heads: attention heads (2 KV heads).
        max_positions: longest sequence.

    Example:
        >>> model = tiny_byte_llama(hidden_size=32, num_layers=1, num_heads=2)
        >>> model(input_ids=torch.zeros(1, 3, dtype=torch.long)).logits.shape
        torch.Size([1, 3, 258])
    """
    tok = ByteTokenizer()
    return build_hf_causal_lm(
        "llama",
        seed=seed,
        vocab_size=tok.vocab_size,
        hidden_size=hidden_size,
        intermediate_size=4 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=min(2, num_heads),
        max_position_embeddings=max_positions,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )


def answer_only_loss(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int = -100) -> torch.Tensor:
    """Mean next-token cross-entropy over the positions whose (unshifted) label is not ``ignore_index``.

    ``logits[:, t]`` predicts ``labels[:, t + 1]``.

    Example:
        >>> logits = torch.zeros(1, 3, 4)
        >>> answer_only_loss(logits, torch.tensor([[-100, -100, 2]]))  # one scored token, uniform: log 4
        tensor(1.3863)
    """
    return F.cross_entropy(
        logits[:, :-1].reshape(-1, logits.shape[-1]).float(), labels[:, 1:].reshape(-1), ignore_index=ignore_index
    )


def evaluate_graph_tasks(
    lm: LanguageModel, tasks: Sequence[GraphTask], max_new_tokens: int = 64, use_chat_template: bool = False
) -> dict[str, float]:
    """Greedy answers of ``lm`` to ``tasks``, scored per task.

    Exact match (:class:`~lightning_icml26.metrics.GraphExactMatch`) compares the final answer
    (``final_answer``) with the target for every task but extraction; extraction is scored by edge
    micro-F1 (:class:`~lightning_icml26.metrics.EdgeMicroF1`), its own exact match, and the two text-overlap
    scores of torchmetrics on the extracted fact list against the target: corpus BLEU-4
    (``torchmetrics.text.BLEUScore``, whitespace tokens, no smoothing) and the mean ROUGE-L F-measure
    (``torchmetrics.text.ROUGEScore``, lower-cased alphanumeric tokens).

    Args:
        lm: any :class:`~lightning_icml26.llm.LanguageModel`.
        tasks: the evaluation samples.
        max_new_tokens: generation budget.
        use_chat_template: format each prompt with ``lm.format_chat`` first.

    Returns:
        ``{"<task>": exact match, ..., "extraction_edge_f1": f1, "extraction_bleu": bleu,
        "extraction_rouge_l": rouge-L F, "mean_exact_match": mean over the non-extraction tasks}`` (keys only
        for the tasks present).

    Example:
        >>> class Oracle:  # answers every question right
        ...     def __init__(self, tasks): self.answers = {t.prompt: t.answer for t in tasks}
        ...     def generate(self, prompts, max_new_tokens=32): return [self.answers[p] for p in prompts]
        >>> task = GraphTask("algorithm", "cycle", "Q? A: ", "No", "No")
        >>> evaluate_graph_tasks(Oracle([task]), [task])
        {'cycle': 1.0, 'mean_exact_match': 1.0}
    """
    prompts = [
        lm.format_chat([{"role": "user", "content": t.prompt}]) if use_chat_template else t.prompt for t in tasks
    ]
    outputs = lm.generate(prompts, max_new_tokens=max_new_tokens)
    exact: dict[str, GraphExactMatch] = {}
    f1, bleu, rouge = EdgeMicroF1(), BLEUScore(n_gram=4), ROUGEScore(rouge_keys="rougeL")
    for task, out in zip(tasks, outputs, strict=True):
        pred = final_answer(out)
        exact.setdefault(task.task, GraphExactMatch()).update([pred], [task.target])
        if task.task == "extraction":
            f1.update([pred], [task.target])
            bleu.update([pred], [[task.target]])
            rouge.update([pred], [task.target])
    scores = {name: float(metric.compute()) for name, metric in sorted(exact.items())}
    if "extraction" in exact:
        scores["extraction_edge_f1"] = float(f1.compute())
        scores["extraction_bleu"] = float(bleu.compute())
        scores["extraction_rouge_l"] = float(rouge.compute()["rougeL_fmeasure"])
    others = [v for k, v in scores.items() if not k.startswith("extraction")]
    if others:
        scores["mean_exact_match"] = sum(others) / len(others)
    return scores


@declare_requirements(
    lambda args: (
        [Requirement("peft", "graphs", "LoRA fine-tuning in SubstrateSFTModule")] if args["lora"] is not None else []
    )
)
class SubstrateSFTModule(LightningModule):
    """Answer-only SFT of a causal LM on G-Substrate batches, with optional LoRA.

    Args:
        model: a transformers-style causal LM (e.g. :func:`tiny_byte_llama`, or ``smollm2().model``).
        tokenizer: its tokenizer (used by :meth:`language_model` for generation).
        optimizer: factory over the trainable parameters (Hydra ``_partial_: true``); ``AdamW(lr=1e-3)``
            by default.
        lora: ``peft.LoraConfig`` keyword arguments (e.g. ``{"r": 8, "lora_alpha": 16, "target_modules":
            ["q_proj", "v_proj"]}``); the base weights are then frozen. Needs the ``graphs`` extra.
        ignore_index: label value of unscored positions.

    Example:
        >>> module = SubstrateSFTModule(tiny_byte_llama(hidden_size=32, num_layers=1, num_heads=2), ByteTokenizer())
        >>> batch = {"input_ids": torch.tensor([[65, 66, 67]]), "labels": torch.tensor([[-100, 66, 67]]),
        ...          "attention_mask": torch.ones(1, 3, dtype=torch.long)}
        >>> float(module.training_step(batch, 0).detach()) > 0
        True
    """

    def __init__(
        self,
        model: nn.Module,
        tokenizer: Any,
        optimizer: OptimizerFactory | None = None,
        lora: Mapping[str, Any] | None = None,
        ignore_index: int = -100,
    ) -> None:
        super().__init__()
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module causal LM, got {type(model).__name__}")
        if lora is not None:
            peft = require("peft", extra="graphs", purpose="LoRA fine-tuning in SubstrateSFTModule")
            model = peft.get_peft_model(model, peft.LoraConfig(task_type="CAUSAL_LM", **dict(lora)))
        self.model = model
        self.tokenizer = tokenizer
        self.optimizer_factory = optimizer or _default_optimizer
        self.ignore_index = ignore_index

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Logits ``(batch, seq, vocab)``."""
        out = self.model(input_ids=input_ids, attention_mask=attention_mask)
        return out if isinstance(out, torch.Tensor) else out.logits

    def on_fit_start(self) -> None:
        """Put the wrapped model in training mode (loaded checkpoints often arrive in eval mode)."""
        self.model.train()

    def _loss(self, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        for key in ("input_ids", "labels"):
            if key not in batch:
                raise ValueError(f"batch must hold '{key}', got keys {sorted(batch)}")
        logits = self(batch["input_ids"], batch.get("attention_mask"))
        return answer_only_loss(logits, batch["labels"], self.ignore_index)

    def training_step(self, batch: Mapping[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        """Answer-only loss of a training batch."""
        loss = self._loss(batch)
        self.log("train_loss", loss, on_step=True, prog_bar=True, batch_size=batch["input_ids"].shape[0])
        return loss

    def validation_step(self, batch: Mapping[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        """Answer-only loss of a validation batch."""
        loss = self._loss(batch)
        self.log("val_loss", loss, on_epoch=True, sync_dist=True, batch_size=batch["input_ids"].shape[0])
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        """The factory's optimizer over the trainable parameters."""
        return self.optimizer_factory([p for p in self.parameters() if p.requires_grad])

    def language_model(self, batch_size: int = 8) -> HFCausalLM:
        """The trained model behind the :class:`~lightning_icml26.llm.LanguageModel` protocol."""
        return HFCausalLM(self.model, self.tokenizer, batch_size=batch_size)

    def evaluate(self, tasks: Sequence[GraphTask], max_new_tokens: int = 64, batch_size: int = 8) -> dict[str, float]:
        """Greedy-generation scores of the current model on ``tasks`` (see :func:`evaluate_graph_tasks`)."""
        was_training = self.model.training
        self.model.eval()
        try:
            return evaluate_graph_tasks(self.language_model(batch_size), tasks, max_new_tokens)
        finally:
            self.model.train(was_training)
