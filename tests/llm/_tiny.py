"""A tiny randomly initialised Llama and a word-level tokenizer, built offline for the adapter tests."""

from __future__ import annotations

import torch
import transformers
from tokenizers import Tokenizer, models, pre_tokenizers

from lightning_icml26.llm import HFCausalLM

WORDS = [
    "the",
    "a",
    "judge",
    "score",
    "rates",
    "text",
    "good",
    "bad",
    "is",
    "1",
    "2",
    "3",
    "4",
    "5",
    ":",
    ".",
    "?",
    "user",
    "assistant",
]
SPECIAL = ["<pad>", "<unk>", "<s>", "</s>"]
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} . {% endfor %}"
    "{% if add_generation_prompt %}assistant :{% endif %}"
)


def tiny_lm(seed: int = 0, batch_size: int = 3) -> HFCausalLM:
    vocab = {w: i for i, w in enumerate(SPECIAL + WORDS)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", bos_token="<s>", eos_token="</s>"
    )
    tok.chat_template = CHAT_TEMPLATE
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=0,
        bos_token_id=2,
        eos_token_id=3,
    )
    model = transformers.LlamaForCausalLM(config).eval()
    return HFCausalLM(model, tok, batch_size=batch_size)
