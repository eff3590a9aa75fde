"""VALUEFLOW data: hierarchies, generator, HierarchicalBatchSampler (positives, same theory, ranks, resume)."""

from __future__ import annotations

import pytest
import torch

from lightning_icml26.data.valueflow import (
    ADVERBS,
    CROSS_THEORY_CONCEPTS,
    THEORIES,
    HierarchicalBatchSampler,
    ValueTextDataModule,
    check_label,
    label_paths,
    make_value_texts,
    node_ids,
)
from tests._support.distributed import run_on_ranks


@pytest.fixture(scope="module")
def corpus():
    return make_value_texts(per_label=5, seed=3)


def _sampler(corpus, **kw):
    args = {
        "individual_ids": corpus.individual_ids,
        "concept_ids": corpus.concept_ids,
        "num_replicas": 1,
        "rank": 0,
        "seed": 11,
    }
    args.update(kw)
    return HierarchicalBatchSampler(corpus.levels, corpus.directions, corpus.theory_ids, **args)


def test_generator_is_seeded_labelled_and_split(corpus):
    again = make_value_texts(per_label=5, seed=3)
    assert again.texts == corpus.texts
    assert torch.equal(again.intensities, corpus.intensities)
    assert len(corpus) == 5 * 2 * sum(len(label_paths(t)) for t in THEORIES)
    sign = torch.where(corpus.directions == 0, 1.0, -1.0)
    assert bool((corpus.intensities * sign > 0).all())
    assert bool((corpus.intensities.abs() <= 10).all())
    for text, value, path in zip(corpus.texts, corpus.intensities.tolist(), corpus.paths, strict=True):
        bucket = min(int(-(-abs(value) // 2)) - 1, 4)
        assert f" {ADVERBS[bucket]} " in text
        assert path[2] in text
    held = make_value_texts(per_label=2, seed=3, split="heldout")
    templates = {t.split(",")[0].split(" ")[0] for t in held.texts} & {"When", "She", "The", "My", "This"}
    assert "When" not in templates
    assert "She" not in templates
    # global node ids: equal prefixes give equal ids, different theories never share a level-1 id
    for theory in ("mft", "duty"):
        paths = label_paths(theory)
        for p in paths:
            for q in paths:
                for level in range(3):
                    assert (node_ids(theory, p)[level] == node_ids(theory, q)[level]) == (
                        p[: level + 1] == q[: level + 1]
                    )
    firsts = {node_ids(t, label_paths(t)[0])[0] for t in THEORIES}
    assert len(firsts) == len(THEORIES)


def test_batches_hold_positives_and_only_same_theory(corpus):
    positives = 3
    sampler = _sampler(corpus, batch_size=16, positives=positives)
    plan = sampler._plan()
    batches = list(sampler)
    assert len(batches) == len(sampler) == len(plan) > 0
    group = sampler.group_of
    for anchors, batch in zip(plan, batches, strict=True):
        idx = [i for i, part in batch]
        assert len(idx) == 16
        assert len(set(idx)) == 16
        assert len(set(corpus.theory_ids[idx].tolist())) == 1  # anchors, positives and negatives: one theory
        for a in anchors.tolist():
            assert a in idx
            size = int((group == group[a]).sum())
            mates = sum(1 for i in idx if i != a and group[i] == group[a])
            assert mates >= min(positives, size - 1)
            same = (corpus.levels[a] == corpus.levels[idx]).all(1) & (corpus.directions[idx] == corpus.directions[a])
            assert int(same.sum()) - 1 == mates  # the group key is the label path plus direction


def test_two_ranks_get_disjoint_anchors_and_equal_lengths(corpus):
    plans = [_sampler(corpus, batch_size=10, positives=4, num_replicas=2, rank=r)._plan() for r in (0, 1)]
    anchors = [{int(a) for chunk in plan for a in chunk} for plan in plans]
    assert len(plans[0]) == len(plans[1]) > 0
    assert anchors[0].isdisjoint(anchors[1])
    # together they cover every text except the per-theory remainders cut for equal lengths
    assert len(anchors[0] | anchors[1]) >= len(corpus) - 2 * 2 * len(THEORIES)
    one = _sampler(corpus, batch_size=10, positives=4, num_replicas=2, rank=0)
    one.set_epoch(1)
    assert [c.tolist() for c in one._plan()] != [c.tolist() for c in plans[0]]  # a new split each epoch


def test_resume_mid_epoch_equals_uninterrupted(corpus):
    full = _sampler(corpus, batch_size=16, fractions=(0.5, 0.25, 0.25))
    full.set_epoch(2)
    expected = list(full)
    resumed = _sampler(corpus, batch_size=16, fractions=(0.5, 0.25, 0.25))
    resumed.load_state_dict({"epoch": 2, "start_batch": 5})
    assert list(resumed) == expected[5:]
    assert list(resumed) == expected  # the start applies to one iteration only


def test_stage2_parts(corpus):
    sampler = _sampler(corpus, batch_size=16, fractions=(0.5, 0.25, 0.25))
    for batch in list(sampler)[:20]:
        parts = [p for _, p in batch]
        assert parts.count(0) == 8
        assert parts.count(1) == 4
        assert parts.count(2) == 4
        ind = [i for i, p in batch if p == 1]
        the = [i for i, p in batch if p == 2]
        for k in range(0, len(ind), 2):
            assert corpus.individual_ids[ind[k]] == corpus.individual_ids[ind[k + 1]]
        for k in range(0, len(the), 2):
            assert corpus.concept_ids[the[k]] == corpus.concept_ids[the[k + 1]] >= 0
            assert corpus.theory_ids[the[k]] != corpus.theory_ids[the[k + 1]]
    assert len(CROSS_THEORY_CONCEPTS) >= 5


def test_datamodule_masks_parts():
    dm = ValueTextDataModule(per_label=3, heldout_per_label=1, batch_size=16, stage=2, seed=0)
    dm.setup("fit")
    batch = next(iter(dm.train_dataloader()))
    assert bool((batch["levels"][:8] >= 0).all())
    assert bool((batch["levels"][8:] == -1).all())
    assert bool((batch["individual_id"][8:12] >= 0).all())
    assert bool((batch["individual_id"][:8] == -1).all())
    assert bool((batch["concept_id"][12:] >= 0).all())
    val = next(iter(dm.val_dataloader()))
    assert bool((val["levels"] >= 0).all())


def test_bad_inputs(corpus):
    with pytest.raises(ValueError, match="path="):
        check_label("pvq", ("conservation", "power", "modesty"), "supports")
    with pytest.raises(ValueError, match="direction"):
        check_label("pvq", label_paths("pvq")[0], "neutral")
    with pytest.raises(ValueError, match="theory"):
        label_paths("kant")
    with pytest.raises(ValueError, match="split"):
        make_value_texts(split="test")
    with pytest.raises(ValueError, match="batch_size"):
        _sampler(corpus, batch_size=1)
    with pytest.raises(ValueError, match="rank"):
        _sampler(corpus, batch_size=8, num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="fractions"):
        _sampler(corpus, batch_size=8, fractions=(0.5, 0.5, 0.5))
    with pytest.raises(TypeError, match="directions"):
        HierarchicalBatchSampler(corpus.levels, corpus.directions.float(), corpus.theory_ids, batch_size=8)
    with pytest.raises(ValueError, match="stage"):
        ValueTextDataModule(stage=3)


def _ranks_plan(rank, world):
    corpus = make_value_texts(per_label=3, seed=1, theories=("mft", "duty"))
    sampler = HierarchicalBatchSampler(corpus.levels, corpus.directions, corpus.theory_ids, batch_size=10)
    return {"rank": sampler.rank, "world": sampler.num_replicas, "anchors": [c.tolist() for c in sampler._plan()]}


@pytest.mark.distributed
def test_sampler_reads_rank_and_world_from_the_process_group():
    results = run_on_ranks(_ranks_plan, 2)
    assert [r["rank"] for r in results] == [0, 1]
    assert {r["world"] for r in results} == {2}
    mine = [{a for chunk in r["anchors"] for a in chunk} for r in results]
    assert mine[0].isdisjoint(mine[1])
    assert len(results[0]["anchors"]) == len(results[1]["anchors"]) > 0
