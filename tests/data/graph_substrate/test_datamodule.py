"""GraphSubstrateDataModule: answer-only labels, mixtures, role ratios, cutoff accounting and errors."""

from __future__ import annotations

from collections import Counter

import pytest

from lightning_icml26.data.graph_substrate import GraphSubstrateDataModule, build_mixture, encode_sample, role_counts
from lightning_icml26.llm import ByteTokenizer

_TASKS = ["connectivity", "cycle", "consistency", "extraction"]
_RATIOS = {"algorithm": 0.5, "consistency": 0.25, "extraction": 0.25}


def test_labels_mask_every_prompt_token() -> None:
    tok = ByteTokenizer()
    dm = GraphSubstrateDataModule(tok, "interleaved", _TASKS, _RATIOS, num_train=12, num_val=4, batch_size=4)
    dm.setup()
    rows = dm._rows["train"]
    for task, row in zip(dm.train_tasks, rows, strict=True):
        prompt = tok(task.prompt)["input_ids"]
        n = len(prompt)
        assert row["input_ids"][:n] == prompt
        assert all(label == -100 for label in row["labels"][:n])
        assert row["labels"][n:] == tok(task.answer)["input_ids"] + [tok.eos_token_id]
    batch = next(iter(dm.train_dataloader()))
    pad = batch["attention_mask"] == 0
    assert (batch["labels"][pad] == -100).all()
    assert (batch["input_ids"][pad] == tok.pad_token_id).all()


def test_mixtures_share_task_counts_and_differ_in_graph_sharing() -> None:
    multi = build_mixture("multitask", _TASKS, _RATIOS, 40, seed=0)
    inter = build_mixture("interleaved", _TASKS, _RATIOS, 40, seed=0)
    assert Counter(t.role for t in multi) == Counter(t.role for t in inter) == Counter(role_counts(40, _RATIOS))

    def schema(task) -> str:  # the facts of the task's graph, whatever the role
        if task.role == "extraction":
            return task.target
        return task.prompt.split("[Graph Facts]\n")[1].split("\nQ: ")[0].split("\nCandidate facts:")[0]

    def shared(samples) -> int:
        return sum(c - 1 for c in Counter(schema(t) for t in samples).values() if c > 1)

    assert shared(inter) >= 15  # 20 consistency + extraction samples re-use the algorithm graphs
    assert shared(inter) > 2 * shared(multi) + 5
    iso = build_mixture("isolated", ["cycle"], {"algorithm": 1.0}, 10, seed=0)
    assert {t.task for t in iso} == {"cycle"}


def test_role_counts_follow_ratios() -> None:
    assert role_counts(7, {"algorithm": 0.6, "consistency": 0.2, "extraction": 0.2}) == {
        "algorithm": 4,
        "consistency": 2,
        "extraction": 1,
    }
    assert sum(role_counts(101, _RATIOS).values()) == 101


def test_over_cutoff_samples_are_counted_not_cut() -> None:
    tok = ByteTokenizer()
    dm = GraphSubstrateDataModule(tok, "multitask", _TASKS, _RATIOS, num_train=20, num_val=4, max_length=300)
    with pytest.warns(UserWarning, match="exceed max_length=300 tokens and were dropped"):
        dm.setup()
    lengths = [len(encode_sample(tok, t.prompt, t.answer)["input_ids"]) for t in build_mixture(
        "multitask", _TASKS, _RATIOS, 20, seed=0)]  # fmt: skip
    assert dm.over_cutoff["train"] == sum(n > 300 for n in lengths) > 0
    assert len(dm.train_tasks) == 20 - dm.over_cutoff["train"]
    assert all(len(r["input_ids"]) <= 300 for r in dm._rows["train"])
    strict = GraphSubstrateDataModule(
        tok, "multitask", _TASKS, _RATIOS, num_train=20, max_length=300, over_cutoff="error"
    )
    with pytest.raises(ValueError, match="over max_length=300"):
        strict.setup()


def test_errors() -> None:
    tok = ByteTokenizer()
    with pytest.raises(ValueError, match="role_ratios must sum to 1"):
        GraphSubstrateDataModule(tok, "interleaved", _TASKS, {"algorithm": 0.5, "consistency": 0.2, "extraction": 0.2})
    with pytest.raises(ValueError, match="exactly one task"):
        GraphSubstrateDataModule(tok, "isolated", _TASKS, _RATIOS)
    with pytest.raises(ValueError, match="mixture must be one of"):
        GraphSubstrateDataModule(tok, "curriculum", _TASKS, _RATIOS)
    with pytest.raises(ValueError, match="no task in"):
        GraphSubstrateDataModule(tok, "multitask", ["cycle"], _RATIOS)
    chat = GraphSubstrateDataModule(tok, "isolated", ["cycle"], {"algorithm": 1.0}, num_train=2, use_chat_template=True)
    with pytest.raises(ValueError, match="has no chat_template"):
        chat.setup()
