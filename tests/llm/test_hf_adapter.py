"""HFCausalLM against direct ``model(...)`` computations on a tiny random Llama (no downloads)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from lightning_icml26.llm import HFCausalLM, LanguageModel, continuation_scores

pytest.importorskip("transformers")
from tests.llm._tiny import tiny_lm

PROMPTS = ["the judge rates text :", "score :", "a good text is", "the text is bad . score"]
CONTS = ["4", "1 2", "good . 5", "3"]


@pytest.fixture(scope="module")
def lm() -> HFCausalLM:
    return tiny_lm()


def _direct(lm: HFCausalLM, prompt: str, cont: str) -> torch.Tensor:
    p = lm.tokenizer(prompt)["input_ids"]
    c = lm.tokenizer(cont, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([p + c])
    with torch.no_grad():
        logits = lm.model(ids).logits[0]
    logp = F.log_softmax(logits.float(), -1)
    return torch.stack([logp[len(p) - 1 + i, c[i]] for i in range(len(c))])


def test_is_a_language_model(lm: HFCausalLM) -> None:
    assert isinstance(lm, LanguageModel)


def test_logprobs_match_unpadded_forward(lm: HFCausalLM) -> None:
    got = lm.logprobs(PROMPTS, CONTS)  # batch_size 3: two batches, right padding in each
    assert [len(g) for g in got] == lm.count_tokens(CONTS) == [1, 2, 3, 1]
    for g, p, c in zip(got, PROMPTS, CONTS, strict=True):
        torch.testing.assert_close(g, _direct(lm, p, c), atol=1e-5, rtol=1e-5)
        assert bool((g < 0).all())


def test_continuation_scores_sum_and_normalise(lm: HFCausalLM) -> None:
    options = [str(k) for k in range(1, 6)]
    scores = continuation_scores(lm, PROMPTS[0], options)
    ids = lm.tokenizer(PROMPTS[0])["input_ids"]
    with torch.no_grad():
        last = F.log_softmax(lm.model(torch.tensor([ids])).logits[0, -1].float(), -1)
    option_ids = [lm.tokenizer(o, add_special_tokens=False)["input_ids"][0] for o in options]
    torch.testing.assert_close(scores, last[option_ids], atol=1e-5, rtol=1e-5)
    # the full vocabulary sums to one
    assert float(last.exp().sum()) == pytest.approx(1.0, abs=1e-5)


def test_generate_matches_manual_greedy(lm: HFCausalLM) -> None:
    steps = 4
    got = lm.generate(PROMPTS, max_new_tokens=steps)  # left padding in batches of 3
    for text, prompt in zip(got, PROMPTS, strict=True):
        ids = list(lm.tokenizer(prompt)["input_ids"])
        new: list[int] = []
        for _ in range(steps):
            with torch.no_grad():
                nxt = int(lm.model(torch.tensor([ids])).logits[0, -1].argmax())
            ids.append(nxt)
            new.append(nxt)
            if nxt == lm.tokenizer.eos_token_id:
                break
        assert text == lm.tokenizer.decode(new, skip_special_tokens=True)


def test_count_tokens_and_chat(lm: HFCausalLM) -> None:
    assert lm.count_tokens(["the judge", "", "score : 5 ."]) == [2, 0, 4]
    chat = lm.format_chat([{"role": "user", "content": "score the text"}])
    assert chat == "user : score the text . assistant :"


def test_bad_input(lm: HFCausalLM) -> None:
    with pytest.raises(ValueError, match="same length"):
        lm.logprobs(["a"], ["1", "2"])
    with pytest.raises(ValueError, match="continuations must tokenise"):
        lm.logprobs(["a"], [""])
    with pytest.raises(TypeError, match="prompts must be a sequence of strings"):
        lm.logprobs("a", ["1"])
    with pytest.raises(ValueError, match="max_new_tokens"):
        lm.generate(["a"], max_new_tokens=0)
    with pytest.raises(ValueError, match="messages"):
        lm.format_chat([])
    with pytest.raises(ValueError, match="batch_size"):
        HFCausalLM(lm.model, lm.tokenizer, batch_size=0)
    with pytest.raises(ValueError, match="options"):
        continuation_scores(lm, "a", [])
