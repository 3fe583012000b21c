"""``data.learnability_sampling``: fresh task families drawn by p (1 - p) of their recent success
rate (navrl.rl.learnability), the rates decayed per visit, observed from each collection and
checkpointed with the run."""
from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

import pytest

from navrl.rl.config import ConfigError, TrainConfig
from navrl.rl.learnability import FamilyLearnability, task_family


@dataclass(frozen=True)
class _T:
    id: str
    template: str


def test_rates_and_weights_by_hand():
    f = FamilyLearnability(decay=0.5, floor=0.02)
    assert f.rate("new") == 0.5 and f.weight("new") == pytest.approx(0.27)      # unvisited: the largest weight
    f.observe([("solved", True)] * 4 + [("half", True), ("half", False)] + [("hopeless", False)] * 4)
    assert f.counts == {"solved": [4.0, 4.0], "half": [1.0, 2.0], "hopeless": [0.0, 4.0]}
    assert f.rate("solved") == pytest.approx(4.5 / 5) and f.weight("solved") == pytest.approx(0.9 * 0.1 + 0.02)
    assert f.rate("half") == pytest.approx(0.5) and f.weight("half") == pytest.approx(0.27)
    assert f.rate("hopeless") == pytest.approx(0.5 / 5) and f.weight("hopeless") == pytest.approx(0.1 * 0.9 + 0.02)
    # the next visit decays that family's counts once (0.5 x [4, 4] + [0, 4]); the others keep theirs
    f.observe([("solved", False)] * 4)
    assert f.counts["solved"] == [2.0, 6.0] and f.rate("solved") == pytest.approx(2.5 / 7)
    assert f.counts["half"] == [1.0, 2.0]


def test_decay_one_counts_every_visit_and_zero_only_the_last():
    keep, last = FamilyLearnability(decay=1.0), FamilyLearnability(decay=0.0)
    for f in (keep, last):
        f.observe([("a", True)] * 3)
        f.observe([("a", False)] * 1)
    assert keep.counts["a"] == [3.0, 4.0] and last.counts["a"] == [0.0, 1.0]


def test_select_keeps_k_in_the_candidates_order_without_replacement():
    f = FamilyLearnability()
    cands = [_T(f"t{i}", f"fam{i % 5}") for i in range(20)]
    got = f.select(cands, 7, random.Random(0))
    assert len(got) == 7 and len(set(got)) == 7
    assert [cands.index(t) for t in got] == sorted(cands.index(t) for t in got)
    assert f.select(cands[:3], 7, random.Random(0)) == cands[:3]


def test_one_draw_follows_the_families_weights():
    """k = 1 of Efraimidis-Spirakis picks candidate i with probability w_i / sum(w)."""
    f = FamilyLearnability(floor=0.02)
    f.observe([("solved", True)] * 40 + [("half", True), ("half", False)] * 20)
    cands = [_T("a", "solved"), _T("b", "half"), _T("c", "solved")]
    rng = random.Random(1)
    n = 20000
    got = Counter(f.select(cands, 1, rng)[0].template for _ in range(n))
    w_solved, w_half = f.weight("solved"), f.weight("half")
    assert got["half"] / n == pytest.approx(w_half / (w_half + 2 * w_solved), abs=0.01)
    assert w_half > 5 * w_solved


def test_a_family_never_solved_keeps_the_largest_weight_for_its_first_visits():
    """unsolved_visits 3: a family at 0% weighs 1/4 + floor for three visits (p (1 - p) + floor
    after one would be 0.11 with four failures), then falls to p (1 - p) + floor; one success
    ends the budget at once; 0 is the plain p (1 - p)."""
    f, plain = FamilyLearnability(floor=0.02, unsolved_visits=3), FamilyLearnability(floor=0.02)
    for g in (f, plain):
        g.observe([("hard", False)] * 4 + [("lucky", False)] * 4)
    assert f.weight("hard") == pytest.approx(0.27) and plain.weight("hard") == pytest.approx(0.1 * 0.9 + 0.02)
    for _ in range(2):
        f.observe([("hard", False)] * 4)
    p = f.rate("hard")                                               # 0.5 / (1 + 4 + 2 + 1)
    assert f.visits["hard"] == 3 and p == pytest.approx(0.5 / 8) and f.weight("hard") == pytest.approx(p * (1 - p) + 0.02)
    f.observe([("lucky", True)] + [("lucky", False)] * 3)            # solved on its 2nd visit: p (1 - p)
    assert "lucky" in f.solved and f.weight("lucky") == pytest.approx(f.rate("lucky") * (1 - f.rate("lucky")) + 0.02)
    assert f.weight("never seen") == pytest.approx(0.27)
    with pytest.raises(ValueError, match="unsolved_visits"):
        FamilyLearnability(unsolved_visits=-1)


def test_state_round_trips():
    f = FamilyLearnability(decay=0.3, floor=0.1, unsolved_visits=4)
    f.observe([("a", True), ("b", False)])
    g = FamilyLearnability(decay=0.3, floor=0.1, unsolved_visits=4)
    g.load(f.state())
    assert g.counts == f.counts and g.visits == f.visits == {"a": 1, "b": 1} and g.solved == {"a"}
    assert g.weight("a") == f.weight("a") and g.weight("b") == f.weight("b") == pytest.approx(0.35)
    old = {k: v for k, v in f.state().items() if k in ("decay", "floor", "counts")}    # a checkpoint from before
    g.load(old)
    assert g.visits == {"a": 1, "b": 1} and g.solved == {"a"}


def test_a_tasks_family_is_its_template():
    assert task_family(_T("x:1", "click-menu")) == "click-menu"
    assert task_family({"id": "x:1", "template": "click-menu"}) == "click-menu"
    assert task_family({"id": "x:1"}) == "x:1"


def test_the_config_fields_are_checked():
    TrainConfig().override({"data.learnability_sampling": 4}).validate()
    for bad, match in [({"data.learnability_sampling": 1}, "learnability_sampling"),
                       ({"data.learnability_sampling": -2}, "learnability_sampling"),
                       ({"data.learnability_sampling": 4, "data.task_pool": 32}, "task_pool"),
                       ({"data.learnability_floor": -0.1}, "learnability_floor"),
                       ({"data.learnability_decay": 1.5}, "learnability_decay")]:
        with pytest.raises(ConfigError, match=match):
            TrainConfig().override(bad).validate()


def _trainer(tmp_path, **over):
    from navrl.agent.policy.pointer import PointerConfig, PointerPlanner
    from navrl.rl.trainer import Trainer
    p = PointerPlanner(["tap", "the"], PointerConfig(d_model=16, n_layers=1, n_heads=2, d_ff=16))
    cfg = TrainConfig().override({"rollout.tasks_per_update": 16, "rollout.rollouts_per_task": 2,
                                  "run.num_updates": 1, **over})
    return Trainer(p, cfg, tmp_path, log=False)


def test_the_trainer_draws_the_learnable_families_more_often(tmp_path):
    """Phone world's train suite (47 templates): three families at half success, the rest solved;
    kept from 4 x 16 candidates the three make ~a quarter of the draws (uniform: 3 / 47)."""
    tr = _trainer(tmp_path, **{"data.learnability_sampling": 4})
    fams = sorted({t.template for _ in range(20) for t in tr.tasks.sample(64, random.Random(_))})
    learnable = set(fams[:3])
    tr.learnability.observe([(f, True) for f in fams for _ in range(40)])
    tr.learnability.observe([(f, i % 2 == 0) for f in learnable for i in range(40)])
    drawn = [t.template for _ in range(20) for t in tr._next_tasks()]
    assert len(drawn) == 20 * 16
    share = sum(f in learnable for f in drawn) / len(drawn)
    off = _trainer(tmp_path / "off")
    uniform = sum(t.template in learnable for _ in range(20) for t in off._next_tasks()) / (20 * 16)
    assert share > 0.18 and uniform < 0.12, (share, uniform)


def test_one_update_observes_its_rollouts_and_the_checkpoint_keeps_the_rates(tmp_path):
    tr = _trainer(tmp_path, **{"data.learnability_sampling": 2, "rollout.tasks_per_update": 3,
                               "rollout.max_steps": 3, "critic.critic_warmup_updates": 0})
    tr.train_step()
    n = sum(c[1] for c in tr.learnability.counts.values())
    assert n == 3 * 2 and tr.collection_record()["learnability/families"] == len(tr.learnability.counts)
    path = tr.save_checkpoint()
    again = _trainer(tmp_path / "again", **{"data.learnability_sampling": 2, "rollout.tasks_per_update": 3})
    again.load_checkpoint(path)
    assert again.learnability.counts == tr.learnability.counts
