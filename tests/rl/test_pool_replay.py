"""Prioritised replay of the task pool: unvisited tasks first, then rank-by-score mixed with
staleness; distinct draws; scores are the rollouts' mean |advantage|; checkpointed."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from navrl.rl.config import ConfigError, TrainConfig
from navrl.rl.replay import PoolReplay


def test_unvisited_tasks_come_first_in_pool_order():
    r = PoolReplay(10)
    assert r.draw(4, 0, random.Random(0)) == [0, 1, 2, 3]
    assert r.draw(4, 1, random.Random(0))[:4] == [0, 1, 2, 3]   # none scored yet: still unseen
    for i in range(4):
        r.update(i, 0.1 * i)
    assert r.draw(6, 2, random.Random(0))[:6] == [4, 5, 6, 7, 8, 9]


def test_probabilities_follow_the_score_rank_and_staleness():
    r = PoolReplay(4, temperature=0.5, staleness_share=0.0)
    for i, s in enumerate([0.0, 0.3, 0.1, 0.2]):
        r.update(i, s)
        r.last_drawn[i] = 0
    p = r.probabilities(now=1)
    assert sum(p) == pytest.approx(1.0)
    # ranks 1..4 -> weights 1, 1/4, 1/9, 1/16 (temperature 0.5: rank^-2)
    w = [1 / 16, 1.0, 1 / 9, 1 / 4]
    assert p == pytest.approx([x / sum(w) for x in w])
    # staleness alone: proportional to updates since the last draw
    s = PoolReplay(3, staleness_share=1.0)
    for i in range(3):
        s.update(i, 1.0)
    s.last_drawn = [9, 5, 0]
    assert s.probabilities(now=10) == pytest.approx([1 / 16, 5 / 16, 10 / 16])


def test_draws_are_distinct_seeded_and_favour_high_scores():
    r = PoolReplay(8, temperature=0.3, staleness_share=0.3)
    for i in range(8):
        r.update(i, 1.0 if i == 5 else 0.01 * i)
    counts: Counter = Counter()
    for u in range(200):
        d = r.draw(3, u, random.Random(u))
        assert len(set(d)) == 3
        counts.update(d)
    assert counts[5] >= 190                       # the task with the most to learn: nearly always
    assert all(counts[i] < 170 for i in range(8) if i != 5) and min(counts[i] for i in range(8)) > 0  # stale ones too
    a = PoolReplay(8); b = PoolReplay(8)
    for x in (a, b):
        for i in range(8):
            x.update(i, float(i % 3))
    assert a.draw(3, 4, random.Random(7)) == b.draw(3, 4, random.Random(7))


def test_state_round_trips_and_bad_temperature_is_refused():
    r = PoolReplay(5)
    r.draw(2, 0, random.Random(0))
    r.update(1, 0.4)
    q = PoolReplay(5)
    q.load(r.state())
    assert q.scores == r.scores and q.last_drawn == r.last_drawn
    with pytest.raises(ConfigError):
        TrainConfig().override({"data.pool_replay": -1.0}).validate()


def test_trainer_scores_the_tasks_it_drew(tmp_path):

    from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
    from navrl.rl.presets import get_preset
    from navrl.rl.trainer import Trainer
    pol = PointerPlanner(phone_world_vocabulary(n_tasks=40), PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64))
    cfg = get_preset("demo").train.override({"rollout.tasks_per_update": 2, "rollout.rollouts_per_task": 3,
                                             "rollout.max_steps": 4, "run.num_updates": 4, "data.task_pool": 5,
                                             "data.pool_replay": 0.3, "policy.sft_coef": 0.0, "run.torch_threads": 1})
    tr = Trainer(pol, cfg, tmp_path / "run", log=False)
    drawn = []
    for _ in range(4):
        tr.train_step()
        drawn.append(sorted(tr._drawn.values()))
    assert drawn[:2] == [[0, 1], [2, 3]]          # unvisited first
    assert all(s is not None and s >= 0 for s in tr.replay.scores)
    st = tr.checkpoint_state()
    assert st["replay"]["scores"] == tr.replay.scores
