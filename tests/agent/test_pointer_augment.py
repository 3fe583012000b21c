"""Screen augmentation of the pointer planner's demonstrations: the expert's decision survives
(same Step, pointing at the same node), distractors are new nodes the expert never uses,
bounds stay on screen, and SFT/PPO-ptx apply it only at the share they are given."""
from __future__ import annotations

import json
import random

import pytest

from navrl.agent.plan import parse_plan
from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
from navrl.agent.policy.pointer.augment import AugmentConfig, augment_prompt
from navrl.agent.policy.base import Policy
from navrl.agent.policy.pointer.features import KIND_ID, NODE_KINDS, decision_for, render_step
from navrl.rl.sft import SFTConfig, TemplateTeacher, augment_batch, collect_demonstrations

NODE_K = {KIND_ID[k] for k in NODE_KINDS}
SMALL = PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64)


@pytest.fixture(scope="module")
def planner_and_demos():
    p = PointerPlanner(phone_world_vocabulary(n_tasks=40), SMALL, seed=0)
    demos = collect_demonstrations(p, 30, TemplateTeacher(compact=True), seed=0)
    p.prepare_sft(demos)
    return p, [d for d in demos if p.encode_demo(d.prompt, d.target) is not None]


def test_augmented_states_keep_the_experts_decision(planner_and_demos):
    p, demos = planner_and_demos
    rng = random.Random(0)
    added = 0
    for d in demos:
        a = p.augment_prompt(d.prompt, rng)
        before, after = json.loads(d.prompt)["n"], json.loads(a)["n"]
        added += len(after) - len(before)
        # the original nodes, in order, with their labels; distractors carry new labels
        old_labels = [n[1] for n in before]
        assert [n[1] for n in after if n[1] in old_labels] == old_labels
        assert len({n[1].lower() for n in after}) >= len({n[1].lower() for n in before})
        for n in after:
            assert all(0.0 <= v <= 1.0 for v in n[6]), n
        step = parse_plan(d.target).step
        e0, e1 = p.state(d.prompt), p.state(a)
        d0, d1 = decision_for(step, e0, p.frames), decision_for(step, e1, p.frames)
        assert d0 is not None and d1 is not None
        assert d1.kind == d0.kind and render_step(d1, e1, p.frames) == render_step(d0, e0, p.frames)
        if d0.kind in NODE_K:   # the same node, now at its new index
            assert after[d1.arg][:6] == before[d0.arg][:6]
    # about 1.5 distractors per screen at the default (uniform 0..3)
    assert 1.0 * len(demos) < added < 2.0 * len(demos)


def test_augmentation_is_seeded_and_moves_the_geometry(planner_and_demos):
    p, demos = planner_and_demos
    d = demos[3]
    a1 = augment_prompt(d.prompt, p.vocab.words, random.Random(5))
    a2 = augment_prompt(d.prompt, p.vocab.words, random.Random(5))
    a3 = augment_prompt(d.prompt, p.vocab.words, random.Random(6))
    assert a1 == a2 and a1 != a3
    none = augment_prompt(d.prompt, p.vocab.words, random.Random(5), AugmentConfig(distractors=0, geometry=0.0))
    assert json.loads(none)["n"] == json.loads(d.prompt)["n"]


def test_augment_batch_applies_the_share_it_is_given(planner_and_demos):
    p, demos = planner_and_demos
    batch = demos[:200]
    for share, lo, hi in ((0.0, 0, 0), (0.5, 0.35, 0.65), (1.0, 0.95, 1.0)):
        out = augment_batch(p, batch, share, random.Random(1))
        assert [o.target for o in out] == [d.target for d in batch]
        changed = sum(o.prompt != d.prompt for o, d in zip(out, batch)) / len(batch)
        assert lo <= changed <= hi, (share, changed)


def test_policies_without_augmentation_return_the_prompt_and_bad_shares_are_refused():
    from navrl.rl.config import ConfigError, TrainConfig
    assert Policy.augment_prompt(None, "a prompt", random.Random(0)) == "a prompt"
    with pytest.raises(ConfigError):
        SFTConfig(augment=1.5).validate()
    with pytest.raises(ConfigError):
        TrainConfig().override({"policy.sft_augment": -0.1}).validate()
