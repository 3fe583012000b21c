"""Guided starts: the guide plays the first k steps of a guided task's episodes (never trained
on), the learner the rest; the guide hands over instead of completing; the trainer guides
only multi-app task groups, with the same k for all siblings."""
from __future__ import annotations

import pytest

from navrl.agent.guided import GuidedPlanner
from navrl.agent.planner import ExpertPlanner, Planner
from navrl.planning import PlannerOutput
from navrl.rl.config import ConfigError, TrainConfig
from navrl.rl.trainer import Trainer
from navrl.worlds.phone.expert import expert_length as _expert_length
from navrl.rollout.runner import EpisodeRunner
from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.worlds.phone.judges import OracleJudge
from navrl.worlds.phone.task import make_task


class _Marked(Planner):
    """Swipes up (a harmless step) and marks its outputs with token ids."""

    name = "marked"

    def __init__(self):
        self.calls = 0

    def plan(self, contexts):
        self.calls += len(contexts)
        return [PlannerOutput('Reasoning: x\nStep: Swipe up\nRemaining: x', token_ids=[1], logprobs=[-0.1],
                              prompt="p") for _ in contexts]


def _run(planner, tasks, max_steps=8):
    j = OracleJudge()
    from navrl.rollout.runner import RunnerConfig
    runner = EpisodeRunner(planner, AccessibilityGrounder(), j, j, j, config=RunnerConfig(max_steps=max_steps))
    return runner.run(tasks)


def test_the_guide_plays_the_first_k_steps_then_the_learner():
    task = make_task("multi_contact_email", 11)
    other = make_task("contacts_phone", 12)
    learner = _Marked()
    g = GuidedPlanner(learner, ExpertPlanner())
    g.reset({task.id: 3})
    a, b, c = _run(g, [task, task, other])
    for t in (a, b):                      # both siblings: 3 guide steps (no token ids), then the learner
        assert [s.token_ids is None for s in t.steps[:4]] == [True, True, True, False]
        assert all(s.token_ids == [1] for s in t.steps[3:])
        assert t.steps[0].verdict == "success"          # the expert's first step makes progress
    assert all(s.token_ids == [1] for s in c.steps)      # an unguided task: the learner throughout
    assert learner.calls == sum(len(t.steps) for t in (a, b, c)) - 6


def test_the_guide_hands_over_instead_of_completing():
    task = make_task("contacts_phone", 5)
    n = _expert_length(task)
    learner = _Marked()
    g = GuidedPlanner(learner, ExpertPlanner())
    g.reset({task.id: n + 5})             # more than the whole expert episode
    (t,) = _run(g, [task], max_steps=n + 2)
    kinds = [s.token_ids is None for s in t.steps]
    assert kinds[:n - 1] == [True] * (n - 1)             # the expert up to its final Complete ...
    assert kinds[n - 1:] == [False] * (len(kinds) - n + 1) and len(kinds) > n - 1   # ... which the learner replaces
    assert not t.success


def test_trainer_guides_multi_app_groups_only_and_never_trains_on_guide_steps(tmp_path):
    from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
    from navrl.rl.batch import Batch
    from navrl.rl.presets import get_preset
    pol = PointerPlanner(phone_world_vocabulary(n_tasks=40), PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64))
    cfg = get_preset("demo").train.override({"rollout.tasks_per_update": 4, "rollout.rollouts_per_task": 2,
                                             "rollout.max_steps": 6, "run.num_updates": 1, "data.task_pool": 0,
                                             "policy.sft_coef": 0.0, "run.torch_threads": 1,
                                             "exploration.guided_start": 1.0})

    class Tasks:
        def sample(self, k, rng):
            return [make_task("multi_note_to_message", 3), make_task("notes_read", 4),
                    make_task("email_food_total", 5), make_task("mail_send", 6)][:k]
    tr = Trainer(pol, cfg, tmp_path / "run", log=False, tasks=Tasks(), guide=ExpertPlanner(), guide_length=_expert_length)
    trajs, _ = tr.collect()
    guided = {t.task["id"]: t.info.get("guided_steps") for t in trajs}
    multi = {t.task["id"] for t in trajs if len(t.task["apps"]) > 1}
    assert {k for k, v in guided.items() if v} == multi and len(multi) == 2
    for t in trajs:
        k = t.info.get("guided_steps", 0)
        assert 1 <= k < _expert_length(make_task(t.task["template"], t.task["seed"])) if t.task["id"] in multi else k == 0
        assert all(s.token_ids is None for s in t.steps[:k])
        assert all(s.token_ids is not None for s in t.steps[k:] if s.kind != "unparseable")
    sibling_k = {}
    for t in trajs:
        sibling_k.setdefault(t.task["id"], set()).add(t.info.get("guided_steps", 0))
    assert all(len(v) == 1 for v in sibling_k.values())
    batch = Batch.from_trajectories(trajs)
    n_learner = sum(1 for t in trajs for s in t.steps if s.token_ids)
    assert len(batch.samples) == n_learner
    st = tr.learn(trajs)
    assert st.metrics["guided"] == 4
    # success split by start: the guided ones and those from the first screen (its mean is the whole's)
    g = [bool(t.success) for t in trajs if t.valid and t.info.get("guided_steps")]
    u = [bool(t.success) for t in trajs if t.valid and not t.info.get("guided_steps")]
    assert st.metrics["guided_success"] == sum(g) / len(g) and st.metrics["unguided_success"] == sum(u) / len(u)
    assert abs(st.metrics["success"] - (sum(g) + sum(u)) / (len(g) + len(u))) < 1e-12


def test_guided_start_is_checked_and_needs_a_guide_off_the_phone_world(tmp_path):
    with pytest.raises(ConfigError):
        TrainConfig().override({"exploration.guided_start": 1.5}).validate()
    from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
    pol = PointerPlanner(phone_world_vocabulary(n_tasks=40), PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64))

    class Web:
        def sample(self, k, rng):
            return []
    guided = TrainConfig().override({"exploration.guided_start": 0.5})
    with pytest.raises(ConfigError, match="needs a guide"):
        Trainer(pol, guided, tmp_path / "r", log=False, tasks=Web())
    with pytest.raises(ConfigError, match="needs a guide"):     # a guide, but how long its prefixes are is unknown
        Trainer(pol, guided, tmp_path / "r", log=False, tasks=Web(), guide=ExpertPlanner())
