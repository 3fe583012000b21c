"""The hand-over schedule (navrl.rl.curriculum): a fixed hand-over k steps before the end of the
guide's episode, and the reverse curriculum that moves it earlier only when success from the
current point reaches the threshold; and the trainer's use of it."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from navrl.rl.config import ConfigError, TrainConfig
from navrl.rl.curriculum import HandoverSchedule


@dataclass
class T:
    id: str
    template: str
    n: int = 8


def _length(t):
    return t.n


def test_fixed_handover_starts_k_steps_before_the_end_and_never_moves():
    s = HandoverSchedule(3, threshold=0.0, window=4)
    tasks = [T("a", "x", 8), T("b", "y", 5), T("c", "y", 3)]
    assert s.starts(tasks, _length) == {"a": 5, "b": 2}     # c: 3 - 3 = 0 steps of guide: from the start
    for _ in range(10):
        s.starts(tasks, _length)
        assert s.observe([("a", True), ("b", True), ("c", True)]) == []
    assert s.summary() == {"x": 3, "y": 3}


def test_reverse_curriculum_moves_earlier_only_when_success_passes_the_threshold():
    s = HandoverSchedule(1, threshold=0.75, window=4)
    x = [T(f"x{i}", "x", 6) for i in range(4)]
    y = [T(f"y{i}", "y", 6) for i in range(4)]
    # x: 3 of 4 succeed (0.75 >= 0.75) -> moves to k 2; y: 2 of 4 (0.5) -> stays at k 1
    assert s.starts(x + y, _length) == {**{t.id: 5 for t in x}, **{t.id: 5 for t in y}}
    moved = s.observe([(t.id, i < 3) for i, t in enumerate(x)] + [(t.id, i < 2) for i, t in enumerate(y)])
    assert moved == [("x", 1, 2)]
    assert s.summary() == {"x": 2, "y": 1}
    # the window restarts at the new point: 3 successes there are not enough (window 4)
    assert s.starts(x[:3] + y, _length) == {**{t.id: 4 for t in x[:3]}, **{t.id: 5 for t in y}}
    assert s.observe([(t.id, True) for t in x[:3]] + [(t.id, False) for t in y]) == []
    assert s.summary() == {"x": 2, "y": 1}
    # y's window now holds the last 4 outcomes only (all failures): still below the threshold
    s.starts(x[:1] + y, _length)
    assert s.observe([(x[0].id, True)] + [(t.id, True) for t in y[:2]]) == [("x", 2, 3)]
    assert s.summary() == {"x": 3, "y": 1}


def test_reverse_curriculum_stops_at_the_beginning_and_ignores_unknown_episodes():
    s = HandoverSchedule(1, threshold=0.5, window=2)
    t = [T("a", "x", 3), T("b", "x", 3)]
    for want in (2, 3, 3, 3):      # length 3: k 3 is "from the start"; it never moves beyond
        s.starts(t, _length)
        s.observe([("a", True), ("b", True), ("zzz", False)])
        assert s.summary() == {"x": want}
    assert s.starts(t, _length) == {}     # from the start: no guided prefix
    st = s.state()
    s2 = HandoverSchedule(1, threshold=0.5, window=2)
    s2.load(st)
    assert s2.summary() == {"x": 3} and s2.longest == {"x": 3}


def test_shared_key_moves_every_template_together_and_step_moves_by_a_share_of_the_episode():
    from navrl.rl.curriculum import shared_key
    s = HandoverSchedule(1, threshold=0.75, window=4, key=shared_key, step=0.25)
    tasks = [T("a", "x", 8), T("b", "y", 16), T("c", "y", 16), T("d", "z", 12)]
    assert s.starts(tasks, _length) == {"a": 7, "b": 15, "c": 15, "d": 11}
    # 3 of 4 episodes of *different* templates pass the threshold: one shared move of
    # round(0.25 x 16) = 4 steps (the longest guide episode seen under the key)
    assert s.observe([("a", True), ("b", True), ("c", False), ("d", True)]) == [("all", 1, 5)]
    assert s.summary() == {"all": 5}
    assert s.starts(tasks, _length) == {"a": 3, "b": 11, "c": 11, "d": 7}
    s.observe([(t.id, True) for t in tasks])    # 5 -> 9: x (8 steps) starts from the beginning
    assert s.starts(tasks, _length) == {"b": 7, "c": 7, "d": 3}
    for _ in range(3):
        s.starts(tasks, _length)
        s.observe([(t.id, True) for t in tasks])
    assert s.summary() == {"all": 16}            # never past the longest episode
    assert [m[2] for m in s.moves] == [5, 9, 13, 16]
    # per template, step 0.25: an 8-step template moves 2 steps at a time
    p = HandoverSchedule(1, threshold=0.5, window=2, step=0.25)
    t8 = [T("a", "x", 8), T("b", "x", 8)]
    p.starts(t8, _length)
    assert p.observe([("a", True), ("b", True)]) == [("x", 1, 3)]
    with pytest.raises(ValueError):
        HandoverSchedule(1, step=1.5)


def test_curriculum_fields_are_checked():
    with pytest.raises(ConfigError):
        TrainConfig().override({"exploration.handover_k": -1}).validate()
    with pytest.raises(ConfigError):
        TrainConfig().override({"exploration.curriculum_threshold": 1.5}).validate()
    with pytest.raises(ConfigError):
        TrainConfig().override({"exploration.curriculum_window": 0}).validate()
    with pytest.raises(ConfigError):
        TrainConfig().override({"exploration.dynamic_sampling": -1}).validate()
    with pytest.raises(ConfigError):
        TrainConfig().override({"exploration.curriculum_step": 2.0}).validate()
    with pytest.raises(ConfigError):
        TrainConfig().override({"exploration.handover_share": 1.2}).validate()


def test_trainer_hands_over_k_steps_before_the_end_for_every_multi_app_group(tmp_path):
    from navrl.agent.planner import ExpertPlanner
    from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
    from navrl.rl.presets import get_preset
    from navrl.rl.trainer import Trainer
    from navrl.worlds.phone.expert import expert_length
    from navrl.worlds.phone.task import make_task
    pol = PointerPlanner(phone_world_vocabulary(n_tasks=40), PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64))
    cfg = get_preset("demo", {"rollout.tasks_per_update": 3, "rollout.rollouts_per_task": 2, "rollout.max_steps": 6,
                              "run.num_updates": 1, "data.task_pool": 0, "policy.sft_coef": 0.0, "run.torch_threads": 1,
                              "exploration.handover_k": 2, "exploration.curriculum_threshold": 0.5,
                              "exploration.curriculum_window": 2}).train

    class Tasks:
        def sample(self, k, rng):
            return [make_task("multi_note_to_message", 3), make_task("notes_read", 4),
                    make_task("email_food_total", 5)][:k]
    tr = Trainer(pol, cfg, tmp_path / "run", log=False, tasks=Tasks(), guide=ExpertPlanner(), guide_length=expert_length)
    trajs, _ = tr.collect()
    for t in trajs:
        n = expert_length(make_task(t.task["template"], t.task["seed"]))
        assert t.info.get("guided_steps", 0) == (n - 2 if len(t.task["apps"]) > 1 else 0)
    st = tr.learn(trajs)
    assert set(st.metrics["curriculum/handover_k"]) == {"multi_note_to_message", "email_food_total"}
    # an untrained planner fails from 2 steps before the end: the point stays
    assert all(k == 2 for k in st.metrics["curriculum/handover_k"].values())
    assert tr.checkpoint_state()["curriculum"]["k"] == st.metrics["curriculum/handover_k"]


def test_trainer_shares_the_curriculum_across_templates_when_asked(tmp_path):
    from navrl.agent.planner import ExpertPlanner
    from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
    from navrl.rl.curriculum import shared_key
    from navrl.rl.presets import get_preset
    from navrl.rl.trainer import Trainer
    from navrl.worlds.phone.expert import expert_length
    pol = PointerPlanner(phone_world_vocabulary(n_tasks=40), PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64))
    cfg = get_preset("demo", {"rollout.tasks_per_update": 2, "rollout.rollouts_per_task": 2, "rollout.max_steps": 4,
                              "data.task_pool": 0, "policy.sft_coef": 0.0, "run.torch_threads": 1,
                              "exploration.handover_k": 1, "exploration.curriculum_threshold": 0.5,
                              "exploration.curriculum_shared": True, "exploration.curriculum_step": 0.25}).train
    tr = Trainer(pol, cfg, tmp_path / "run", log=False, guide=ExpertPlanner(), guide_length=expert_length)
    assert tr.curriculum.key is shared_key and tr.curriculum.step == 0.25


def test_handover_share_starts_the_other_multi_app_groups_at_the_beginning(tmp_path):
    """handover_share 0.5: about half the multi-app groups start after the guide's prefix, the
    rest at the beginning; the curriculum counts only the groups it started."""
    import random as _random

    from navrl.rl.curriculum import HandoverSchedule
    from navrl.rl.trainer import Trainer
    from navrl.worlds.phone.expert import expert_length
    from navrl.worlds.phone.task import make_task
    from navrl.agent.policy.pointer import PointerConfig, PointerPlanner
    pol = PointerPlanner(["tap"], PointerConfig(d_model=16, n_layers=1, n_heads=2, d_ff=16))
    cfg = TrainConfig().override({"exploration.handover_k": 2, "exploration.handover_share": 0.5})
    from navrl.agent.planner import ExpertPlanner
    tr = Trainer(pol, cfg, tmp_path / "run", log=False, guide=ExpertPlanner(), guide_length=expert_length)
    tasks = [make_task("multi_note_to_message", s) for s in range(200)] + [make_task("notes_read", 1)]
    tr.rng = _random.Random(0)
    starts = tr._guided_starts(tasks)
    assert 70 <= len(starts) <= 130                      # ~half of 200, never the single-app task
    assert all(v == expert_length(make_task("multi_note_to_message", int(k.split(":")[-1]))) - 2
               for k, v in starts.items())
    assert isinstance(tr.curriculum, HandoverSchedule) and set(tr.curriculum._issued) == set(starts)
    # share 1 (the default): every multi-app group
    tr.cfg = TrainConfig().override({"exploration.handover_k": 2})
    assert len(tr._guided_starts(tasks)) == 200


def test_practice_starts_some_groups_at_passed_points_and_only_the_current_point_moves():
    import random as _random
    from types import SimpleNamespace
    sched = HandoverSchedule(1, threshold=0.5, window=2, step=0.0)
    tasks = [SimpleNamespace(id=f"t{i}", template="a") for i in range(400)]
    sched.k["a"] = 4
    rng = _random.Random(0)
    starts = sched.starts(tasks, lambda t: 10, rng, practice=0.5)
    ks = [10 - v for v in starts.values()]
    assert set(ks) == {1, 2, 3, 4}
    assert 150 <= sum(k < 4 for k in ks) <= 250                     # ~half practise passed points
    assert all(150 / 3 * 0.5 < ks.count(k) for k in (1, 2, 3))       # ... drawn uniformly from 1..3
    # successes at passed points do not move the current one; successes at it do
    passed = [t.id for t in tasks if 10 - starts[t.id] < 4]
    assert sched.observe((tid, True) for tid in passed) == []
    current = [t.id for t in tasks if 10 - starts[t.id] == 4][:2]
    assert sched.observe((tid, True) for tid in current) == [("a", 4, 5)]
    # practice 0 (the default): every start at the current point
    assert set(sched.starts(tasks, lambda t: 10, rng).values()) == {10 - 5}


def test_frontier_starts_hand_over_where_the_learner_leaves_the_path_alone():
    import random as _random
    from types import SimpleNamespace
    sched = HandoverSchedule(2, threshold=0.5, window=3)
    tasks = [SimpleNamespace(id=f"t{i}", template="a") for i in range(400)]
    assert sched.frontier(tasks[0]) is None
    sched.observe_forward([(tasks[0], 1), (tasks[1], 5), (tasks[2], 3)])
    assert sched.frontier(tasks[0]) == 5                      # the furthest of the window
    sched.observe_forward([(tasks[0], 2), (tasks[0], 2), (tasks[0], 4)])
    assert sched.frontier(tasks[0]) == 4                      # 5 left the window of 3
    rng = _random.Random(0)
    starts = sched.starts(tasks, lambda t: 10, rng, practice=0.0, frontier=0.5)
    guided = sorted(set(starts.values()))
    assert guided == [4, 8]                                   # the guide plays 4 (frontier) or 8 (k 2)
    assert 150 <= sum(v == 4 for v in starts.values()) <= 250
    # frontier starts do not move the curriculum; the current point's do
    assert sched.observe((t.id, True) for t in tasks if starts[t.id] == 4) == []
    assert sched.observe((t.id, True) for t in tasks if starts[t.id] == 8) == [("a", 2, 3)]
    # a frontier at or after the current point is no earlier start: the current point is used
    sched.reach["a"].clear()
    sched.observe_forward([(tasks[0], 8)])                     # 10 - 8 = 2 steps before the end < k 3
    assert set(sched.starts(tasks, lambda t: 10, rng, frontier=1.0).values()) == {7}
    st = sched.state()
    other = HandoverSchedule(2, threshold=0.5, window=3)
    other.load(st)
    assert other.frontier(tasks[0]) == 8 and other.summary() == sched.summary()


def test_first_failed_step_reads_the_verdicts():
    from navrl.rl.batch import first_failed_step
    from navrl.rollout.records import Step, Trajectory

    def tr(verdicts):
        return Trajectory(task={"id": "x"}, steps=[Step(t=i, output="", parsed=True, verdict=v) for i, v in enumerate(verdicts)])
    assert first_failed_step(tr(["success", "success", "fail", "fail"])) == 2
    assert first_failed_step(tr(["justified", "unjustified"])) == 1
    assert first_failed_step(tr(["success", None])) == 2      # a Complete is not judged a failure
    assert first_failed_step(tr([])) == 0


def test_trainer_feeds_the_forward_frontier_from_episodes_started_at_the_beginning(tmp_path):
    from navrl.agent.planner import ExpertPlanner
    from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
    from navrl.rl.presets import get_preset
    from navrl.rl.trainer import Trainer
    from navrl.worlds.phone.expert import expert_length
    from navrl.worlds.phone.task import make_task

    class Tasks:
        def sample(self, n, rng):
            return [make_task("multi_note_to_message", rng.randrange(10_000)) for _ in range(n)]
    pol = PointerPlanner(phone_world_vocabulary(n_tasks=40), PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64))
    cfg = get_preset("demo", {"rollout.tasks_per_update": 4, "rollout.rollouts_per_task": 2, "rollout.max_steps": 4,
                              "data.task_pool": 0, "policy.sft_coef": 0.0, "run.torch_threads": 1,
                              "exploration.handover_k": 1, "exploration.handover_share": 0.5,
                              "exploration.frontier_share": 0.5}).train
    tr = Trainer(pol, cfg, tmp_path / "run", log=False, tasks=Tasks(), guide=ExpertPlanner(), guide_length=expert_length)
    for _ in range(3):
        tr.train_step()
    reach = tr.curriculum.reach.get("multi_note_to_message")
    assert reach and all(0 <= f <= 4 for f in reach)


def test_probes_start_at_the_current_point_and_move_it_by_their_own_outcomes():
    s = HandoverSchedule(1, threshold=0.75, window=4)
    x = [T(f"x{i}", "x", 6) for i in range(4)]
    short = T("s", "y", 1)
    assert s.probe_starts(x + [short], _length) == {**{t.id: 5 for t in x}, "s": 0}   # 1 step: from the beginning
    # 3 of 4 probes succeed: x moves one step; y has seen one probe (window 4): stays
    assert s.observe_probes([(x[0], True), (x[1], True), (x[2], False), (x[3], True), (short, True)]) == [("x", 1, 2)]
    assert s.probe_starts(x, _length) == {t.id: 4 for t in x}
    # the window restarts at the new point: 3 failures then a success is 0.25, no move
    assert s.observe_probes([(x[0], False), (x[1], False), (x[2], False), (x[3], True)]) == []
    assert s.summary() == {"x": 2, "y": 1}


def test_trainer_probes_greedily_once_per_multi_app_task_and_counts_only_the_probes(tmp_path):
    """curriculum_probe: one greedy episode per multi-app task of the round, started at its key's
    current point; the curriculum's window holds those outcomes, not the sampled rollouts'."""
    from navrl.agent.planner import ExpertPlanner
    from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
    from navrl.rl.presets import get_preset
    from navrl.rl.trainer import Trainer
    from navrl.worlds.phone.expert import expert_length
    from navrl.worlds.phone.task import make_task
    pol = PointerPlanner(phone_world_vocabulary(n_tasks=40), PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64))
    cfg = get_preset("demo", {"rollout.tasks_per_update": 3, "rollout.rollouts_per_task": 4, "rollout.max_steps": 30,
                              "data.task_pool": 0, "policy.sft_coef": 0.0, "run.torch_threads": 1,
                              "exploration.handover_k": 2, "exploration.curriculum_threshold": 0.5,
                              "exploration.curriculum_window": 16, "exploration.curriculum_probe": True}).train

    class Tasks:
        def sample(self, k, rng):
            return [make_task("multi_note_to_message", 3), make_task("notes_read", 4),
                    make_task("email_food_total", 5)][:k]
    tr = Trainer(pol, cfg, tmp_path / "run", log=False, tasks=Tasks(), guide=ExpertPlanner(), guide_length=expert_length)
    modes, plan = [], pol.plan

    def spy(contexts):
        modes.extend([(pol.sample, len(c.history), c.task.template) for c in contexts])
        return plan(contexts)
    pol.plan = spy
    trajs, _ = tr.collect()
    greedy = [m for m in modes if not m[0]]
    assert greedy and {m[2] for m in greedy} == {"multi_note_to_message", "email_food_total"}
    for tpl, seed in (("multi_note_to_message", 3), ("email_food_total", 5)):
        first = min(h for s, h, t in greedy if t == tpl)
        assert first == expert_length(make_task(tpl, seed)) - 2     # the probe's learner starts at the current point
    assert {k: len(d) for k, d in tr.curriculum.recent.items()} == {"multi_note_to_message": 1, "email_food_total": 1}
    st = tr.learn(trajs)
    assert st.metrics["curriculum/probe_episodes"] == 2
    assert 0 <= st.metrics["curriculum/probe_successes"] <= 2
    assert len(trajs) == 12                                          # probes are not in the batch
