"""A :class:`~lightning_icml26.llm.LanguageModel` over any transformers causal LM and its tokenizer.

``transformers`` is not imported here: the adapter works on the objects it is given. Prompts and
continuations are tokenised separately and concatenated, so a continuation's tokens never merge with
the prompt's last token (``"Score: " + "4"`` is scored as the tokens of ``"4"`` after the tokens of
``"Score: "``); batches are padded on the right for scoring and on the left for generation, with an
attention mask, so a batched call gives the same numbers as one call per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F

from lightning_icml26.llm.protocol import ChatMessage

__all__ = ["HFCausalLM"]


def _check_texts(name: str, texts: Sequence[str]) -> None:
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError(f"{name} must be a sequence of strings, got {type(texts).__name__}: {texts!r}")


class HFCausalLM:
    """Adapter from a transformers causal LM (``model(input_ids).logits``) to the ``LanguageModel`` protocol.

    Args:
        model: a causal LM whose forward takes ``input_ids`` and ``attention_mask`` and returns ``.logits``
            ``[batch, time, vocab]``; ``generate`` is used for :meth:`generate`.
        tokenizer: its tokenizer (callable on a string, with ``decode``, ``pad_token_id`` or
            ``eos_token_id``; ``apply_chat_template`` for :meth:`format_chat`).
        batch_size: rows per forward pass.
        add_special_tokens: whether prompts are tokenised with the tokenizer's special tokens (e.g. BOS);
            continuations never are.

    Attributes:
        model: the wrapped model (train it as usual; the adapter runs it under ``torch.no_grad``).
        tokenizer: the wrapped tokenizer.

    Example:
        >>> class Tok:  # one token per character, ids 1..; 0 pads
        ...     pad_token_id, eos_token_id = 0, 0
        ...     def __call__(self, text, add_special_tokens=True):
        ...         return {"input_ids": [ord(c) % 50 + 1 for c in text]}
        >>> class Uniform(torch.nn.Module):
        ...     def forward(self, input_ids, attention_mask=None):
        ...         return type("Out", (), {"logits": torch.zeros(*input_ids.shape, 64)})()
        >>> lm = HFCausalLM(Uniform(), Tok())
        >>> lm.count_tokens(["abc", ""])
        [3, 0]
        >>> lm.logprobs(["ab"], ["cd"])[0].exp()
        tensor([0.0156, 0.0156])
    """

    def __init__(self, model: Any, tokenizer: Any, batch_size: int = 8, add_special_tokens: bool = True) -> None:
        if not callable(model):
            raise TypeError(f"model must be a callable causal LM, got {type(model).__name__}")
        if not callable(tokenizer):
            raise TypeError(f"tokenizer must be a callable tokenizer, got {type(tokenizer).__name__}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.add_special_tokens = bool(add_special_tokens)

    # ----------------------------------------------------------------------------------------- helpers
    @property
    def device(self) -> torch.device:
        """The device of the model's first parameter (CPU for a parameter-free model)."""
        params = getattr(self.model, "parameters", None)
        first = next(iter(params()), None) if callable(params) else None
        return first.device if first is not None else torch.device("cpu")

    @property
    def pad_id(self) -> int:
        """The padding id: the tokenizer's pad token, else its EOS token, else 0."""
        for name in ("pad_token_id", "eos_token_id"):
            value = getattr(self.tokenizer, name, None)
            if isinstance(value, int):
                return value
        return 0

    def encode(self, text: str, special: bool) -> list[int]:
        """Token ids of ``text``, with the tokenizer's special tokens when ``special``."""
        return [int(i) for i in self.tokenizer(text, add_special_tokens=special)["input_ids"]]

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            out = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device))
        return out.logits.float()

    # ---------------------------------------------------------------------------------------- protocol
    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Number of tokens of each text, without special tokens."""
        _check_texts("texts", texts)
        return [len(self.encode(t, special=False)) for t in texts]

    def logprobs(self, prompts: Sequence[str], continuations: Sequence[str]) -> list[torch.Tensor]:
        """Per-token log-probabilities of each continuation after its prompt.

        Args:
            prompts: the prompts; each must tokenise to at least one token.
            continuations: one continuation per prompt; each must tokenise to at least one token.

        Returns:
            One float32 CPU tensor per pair, of length ``count_tokens([continuation])[0]``.

        Raises:
            TypeError: if an argument is not a sequence of strings.
            ValueError: if the lengths differ or a prompt or continuation has no tokens.
        """
        _check_texts("prompts", prompts)
        _check_texts("continuations", continuations)
        if len(prompts) != len(continuations):
            raise ValueError(
                f"prompts and continuations must have the same length, got {len(prompts)} and {len(continuations)}"
            )
        pairs = []
        for prompt, cont in zip(prompts, continuations, strict=True):
            p_ids, c_ids = self.encode(prompt, self.add_special_tokens), self.encode(cont, special=False)
            if not p_ids:
                raise ValueError(f"prompts must tokenise to at least one token, got {prompt!r}")
            if not c_ids:
                raise ValueError(f"continuations must tokenise to at least one token, got {cont!r}")
            pairs.append((p_ids, c_ids))
        results: list[torch.Tensor | None] = [None] * len(pairs)
        # one-token continuations of the same prompt (e.g. the score tokens of a judge) share one forward pass
        prompts_1: dict[tuple[int, ...], list[int]] = {}
        for i, (p, c) in enumerate(pairs):
            if len(c) == 1:
                prompts_1.setdefault(tuple(p), []).append(i)
        unique = list(prompts_1)
        for start in range(0, len(unique), self.batch_size):
            chunk = unique[start : start + self.batch_size]
            logp = self._log_softmax([list(key) for key in chunk])
            for row, key in enumerate(chunk):
                for i in prompts_1[key]:
                    results[i] = logp[row, len(key) - 1, pairs[i][1]]
        rest = [i for i, (_, c) in enumerate(pairs) if len(c) > 1]
        for start in range(0, len(rest), self.batch_size):
            index = rest[start : start + self.batch_size]
            logp = self._log_softmax([pairs[i][0] + pairs[i][1] for i in index])
            for row, i in enumerate(index):
                p, c = pairs[i]
                results[i] = logp[row, torch.arange(len(p) - 1, len(p) + len(c) - 1), torch.tensor(c)]
        return [r for r in results if r is not None]

    def _log_softmax(self, rows: list[list[int]]) -> torch.Tensor:
        """Log-softmax ``[B, T, V]`` (CPU) of right-padded rows of token ids."""
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for row, r in enumerate(rows):
            ids[row, : len(r)] = torch.tensor(r)
            mask[row, : len(r)] = 1
        return F.log_softmax(self._forward(ids, mask), dim=-1).cpu()

    def generate(self, prompts: Sequence[str], max_new_tokens: int = 32) -> list[str]:
        """Greedy continuation of each prompt (new text only, special tokens removed).

        Raises:
            TypeError: if ``prompts`` is not a sequence of strings.
            ValueError: if ``max_new_tokens < 1`` or a prompt has no tokens.
        """
        _check_texts("prompts", prompts)
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}")
        texts: list[str] = []
        for start in range(0, len(prompts), self.batch_size):
            batch = list(prompts[start : start + self.batch_size])
            encoded = [self.encode(p, self.add_special_tokens) for p in batch]
            for prompt, ids_list in zip(batch, encoded, strict=True):
                if not ids_list:
                    raise ValueError(f"prompts must tokenise to at least one token, got {prompt!r}")
            width = max(len(e) for e in encoded)
            ids = torch.full((len(encoded), width), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(encoded), width), dtype=torch.long)
            for row, e in enumerate(encoded):
                ids[row, width - len(e) :] = torch.tensor(e)
                mask[row, width - len(e) :] = 1
            with torch.no_grad():
                out = self.model.generate(
                    input_ids=ids.to(self.device),
                    attention_mask=mask.to(self.device),
                    max_new_tokens=max_new_tokens,
                    do_sample=False,
                    pad_token_id=self.pad_id,
                )
            for row in out[:, width:].cpu():
                texts.append(self.tokenizer.decode(row.tolist(), skip_special_tokens=True))
        return texts

    def format_chat(self, messages: Sequence[ChatMessage]) -> str:
        """The tokenizer's chat template applied to ``messages``, opened for the assistant's answer.

        Raises:
            ValueError: if ``messages`` is empty or the tokenizer has no chat template.
        """
        if len(messages) == 0:
            raise ValueError("messages must hold at least one {'role', 'content'} turn, got []")
        if not getattr(self.tokenizer, "chat_template", None):
            raise ValueError(
                f"tokenizer {type(self.tokenizer).__name__} has no chat_template; set tokenizer.chat_template "
                "or build the prompt string yourself"
            )
        text = self.tokenizer.apply_chat_template(
            [dict(m) for m in messages], tokenize=False, add_generation_prompt=True
        )
        return str(text)
