"""A byte-level tokenizer with the small part of the transformers tokenizer interface the project uses.

Ids 0..255 are the UTF-8 bytes; :attr:`ByteTokenizer.pad_token_id` and :attr:`ByteTokenizer.eos_token_id`
follow. It has no chat template, so :meth:`HFCausalLM.format_chat` refuses it with a clear error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["ByteTokenizer"]


class ByteTokenizer:
    """UTF-8 bytes as token ids, plus a padding and an end-of-sequence token.

    Calling it returns ``{"input_ids": [...]}`` like a transformers tokenizer; ``add_special_tokens``
    appends nothing (there is no BOS), so prompts and answers tokenise independently.

    Example:
        >>> tok = ByteTokenizer()
        >>> tok("hé")["input_ids"], tok.vocab_size
        ([104, 195, 169], 258)
        >>> tok.decode([104, 195, 169, tok.eos_token_id], skip_special_tokens=True)
        'hé'
    """

    pad_token_id = 256
    eos_token_id = 257
    vocab_size = 258
    chat_template: str | None = None

    def __call__(self, text: str, add_special_tokens: bool = True, **_: Any) -> dict[str, list[int]]:
        """``{"input_ids": <the UTF-8 bytes of text>}``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        return {"input_ids": list(text.encode("utf-8"))}

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        """Text of ``ids``; special tokens are dropped when ``skip_special_tokens`` (else written as names)."""
        out = bytearray()
        for i in ids:
            i = int(i)
            if i < 256:
                out.append(i)
            elif not skip_special_tokens:
                out += b"<pad>" if i == self.pad_token_id else b"</s>"
        return out.decode("utf-8", errors="replace")

    def __len__(self) -> int:
        return self.vocab_size
