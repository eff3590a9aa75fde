"""SelfPlayModule: one GRPO step against its closed form, stop-and-resume, the pipeline with fakes, bad inputs."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pytest
import torch
from lightning.pytorch import Trainer
from lightning.pytorch.callbacks import ModelCheckpoint

from lightning_icml26.algorithms.novelty import CalibratedSeenDetector, KNNDistanceDetector, NoveltyReward
from lightning_icml26.callbacks import SeenDetectorCallback
from lightning_icml26.data.selfplay import CategoricalQuestioner, SelfPlayDataModule, ToySolver, ToyWorld
from lightning_icml26.modules.novelty import SelfPlayModule


class FakeSolver:
    """Deterministic: on a question of cell c it gets ``c % 5`` of its 4 answers right; records every call."""

    def __init__(self, world: ToyWorld) -> None:
        self.world, self.asked, self.trained = world, [], []

    def answer(self, questions, m, generator):
        self.asked.append(list(questions))
        out = []
        for q, c in zip(questions, self.world.cells(questions).tolist(), strict=True):
            right = c % 5
            out.append([self.world.answer(q)] * right + ["wrong"] * (m - right))
        return out

    def reference(self, questions):
        return [self.world.answer(q) for q in questions]

    def train_on(self, questions):
        self.trained.append(list(questions))

    def evaluate(self):
        return 0.0


def _trainer(epochs: int, callbacks: list | None = None, ckpt_dir: Path | None = None) -> Trainer:
    cbs = list(callbacks or [])
    if ckpt_dir is not None:
        cbs.append(ModelCheckpoint(dirpath=ckpt_dir, filename="last"))
    return Trainer(
        max_epochs=epochs,
        logger=False,
        enable_checkpointing=ckpt_dir is not None,
        callbacks=cbs,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
    )


def test_one_grpo_step_equals_closed_form() -> None:
    dm = SelfPlayDataModule(num_difficulties=3, num_variants=2, num_prompts=3)
    world = dm.world
    policy = CategoricalQuestioner(world)
    with torch.no_grad():
        policy.logits.copy_(torch.randn(world.num_cells, generator=torch.Generator().manual_seed(0)))
    theta0 = policy.logits.detach().clone()
    solver = FakeSolver(world)
    lr, group = 0.7, 4
    module = SelfPlayModule(
        policy,
        solver,
        world.embed,
        NoveltyReward(beta=0.0, lambda_rep=0.0),
        group_size=group,
        num_samples=4,
        optimizer=partial(torch.optim.SGD, lr=lr),
        seed=3,
    )
    _trainer(1).fit(module, dm)
    questions = solver.asked[0]
    cells = world.cells(questions).numpy()
    p = (cells % 5) / 4
    r = 1 - 2 * np.abs(np.clip(p, 0, 1) - 0.5)
    rg = r.reshape(-1, group)
    adv = ((rg - rg.mean(1, keepdims=True)) / (rg.std(1, keepdims=True) + 1e-6)).reshape(-1)
    pi = torch.softmax(theta0, 0).numpy()
    grad = np.zeros_like(pi)  # d/dtheta of mean_i A_i log pi(c_i) = mean_i A_i (e_{c_i} - pi)
    for a, c in zip(adv, cells, strict=True):
        grad += a * (np.eye(len(pi))[c] - pi)
    expected = theta0.numpy() + lr * grad / len(cells)
    np.testing.assert_allclose(policy.logits.detach().numpy(), expected, rtol=1e-9, atol=1e-12)
    assert not np.allclose(expected, theta0.numpy())
    # the solver trained on exactly the questions whose agreement lies in the band [0.25, 0.75]
    assert solver.trained[0] == [q for q, pp in zip(questions, p, strict=True) if 0.25 <= pp <= 0.75]


def _run(epochs: int, resume: Path | None = None, ckpt_dir: Path | None = None):
    dm = SelfPlayDataModule(num_difficulties=4, num_variants=4, num_prompts=3, buffer_capacity=40, seed=1)
    world = dm.world
    det = CalibratedSeenDetector(KNNDistanceDetector(k=3), min_buffer=8, seed=2)
    reward = NoveltyReward(det, beta=1.0, lambda_rep=0.5, n_gram=2)
    module = SelfPlayModule(
        CategoricalQuestioner(world),
        ToySolver(world),
        world.embed,
        reward,
        categories=world.categories,
        num_categories=6,
        group_size=6,
        num_samples=6,
        optimizer=partial(torch.optim.SGD, lr=4.0),
        seed=5,
    )
    cb = SeenDetectorCallback()
    _trainer(epochs, [cb], ckpt_dir).fit(module, dm, ckpt_path=str(resume) if resume else None)
    return module, dm, det


def test_stop_and_resume_equals_uninterrupted(tmp_path: Path) -> None:
    full, full_dm, full_det = _run(5)
    stopped, _, _ = _run(3, ckpt_dir=tmp_path)
    assert not torch.equal(stopped.questioner.logits, full.questioner.logits)
    resumed, resumed_dm, resumed_det = _run(5, resume=tmp_path / "last.ckpt")
    torch.testing.assert_close(resumed.questioner.logits, full.questioner.logits)
    torch.testing.assert_close(resumed.solver.skill, full.solver.skill)
    torch.testing.assert_close(resumed.solver.practice, full.solver.practice)
    assert resumed_dm.buffer.items() == full_dm.buffer.items()
    assert resumed.history == full.history
    assert full_det.fitted
    assert resumed_det.num_fits == full_det.num_fits
    probe = full_dm.world.embed([full_dm.world.question(t, 0, 0) for t in range(6)])
    torch.testing.assert_close(resumed_det.novelty(probe), full_det.novelty(probe))


def test_callback_buffers_the_used_questions_and_fits_the_detector() -> None:
    dm = SelfPlayDataModule(num_difficulties=3, num_variants=3, num_prompts=4, buffer_capacity=1000)
    world = dm.world
    det = CalibratedSeenDetector(KNNDistanceDetector(k=2), min_buffer=4)
    solver = FakeSolver(world)
    module = SelfPlayModule(
        CategoricalQuestioner(world),
        solver,
        world.embed,
        NoveltyReward(det, beta=1.0, lambda_rep=0.0),
        group_size=4,
        num_samples=4,
    )
    _trainer(3, [SeenDetectorCallback()]).fit(module, dm)
    assert dm.buffer.items() == [q for batch in solver.trained for q in batch]
    assert det.fitted
    assert det.num_fits >= 1
    assert [set(r) >= {"score", "seen_rate", "distinct_2"} for r in module.history] == [True] * 3


def test_bad_inputs() -> None:
    world = ToyWorld(2, 2)
    make = partial(SelfPlayModule, CategoricalQuestioner(world), ToySolver(world), world.embed)
    with pytest.raises(ValueError, match="group_size"):
        make(NoveltyReward(beta=0.0), group_size=1)
    with pytest.raises(ValueError, match="num_samples"):
        make(NoveltyReward(beta=0.0), num_samples=1)
    with pytest.raises(ValueError, match="band"):
        make(NoveltyReward(beta=0.0), band=(0.8, 0.2))
    with pytest.raises(TypeError, match="reward"):
        make(lambda p: p)
    with pytest.raises(TypeError, match="solver"):
        SelfPlayModule(CategoricalQuestioner(world), object(), world.embed, NoveltyReward(beta=0.0))
