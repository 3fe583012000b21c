"""DAgger's collection: the learner's own screens, each labelled with the expert's step; screens
the expert has no step for are counted, not guessed; β mixes the expert's steps in."""
from __future__ import annotations

import pytest

from navrl.agent.plan import parse_plan
from navrl.agent.planner import ExpertPlanner, Planner, PlannerOutput
from navrl.experiments.pipeline import build_policy
from navrl.judge.sets import make_judges
from navrl.rl.dagger import collect_corrections
from navrl.rl.presets import get_preset
from navrl.rl.sft import TemplateTeacher, collect_demonstrations, sft_tasks
from navrl.tasks.registry import get_suite


@pytest.fixture(scope="module")
def policy():
    return build_policy(get_preset("quick-pointer"), 0)


@pytest.fixture(scope="module")
def judges():
    s = get_suite("train")
    return tuple(make_judges(s.default_judge(s.devices[0]))[:3])


class _GoesHome(Planner):
    """A learner that always leaves the app: every screen after its first step is one no expert
    episode shows."""
    name = "home"

    def plan(self, contexts):
        return [PlannerOutput("Reasoning: leave.\nStep: Go home\nRemaining: unknown") for _ in contexts]


class _Flaky(Planner):
    """The expert, except that it has no step (raises) on every second screen of an episode."""
    name = "flaky"

    def plan(self, contexts):
        if any(len(c.history) % 2 for c in contexts):
            raise LookupError("off the script's path")
        return ExpertPlanner().plan(contexts)


def test_the_expert_as_learner_agrees_everywhere_and_finishes_its_episodes(policy, judges):
    tasks = sft_tasks(4, seed=3)
    got = collect_corrections(policy, tasks, judges=judges, learner=ExpertPlanner())
    assert (got.episodes, got.successes, got.masked, got.unlabelled, got.disagreements) == (4, 4, 0, 0, 0)
    # ... and its labels are BC's demonstrations of the same episodes, step for step
    demos = collect_demonstrations(policy, 0, TemplateTeacher(compact=True), tasks=tasks, judges=judges,
                                   with_task_ids=True)
    assert [(t, d.prompt, d.target) for t, d in got.steps] == [(t, d.prompt, d.target) for t, d in demos]


def test_each_screen_the_learner_reaches_gets_the_experts_step(policy, judges):
    tasks = sft_tasks(3, seed=3)
    got = collect_corrections(policy, tasks, judges=judges, learner=_GoesHome())
    expert_prompts = {d.prompt for d in collect_demonstrations(policy, 0, TemplateTeacher(compact=True),
                                                               tasks=tasks, judges=judges)}
    assert got.episodes == 3 and got.successes == 0
    steps = [parse_plan(d.target).step for _, d in got.steps]
    assert len(steps) >= 6 and "Go home" not in steps      # the expert never leaves; the learner always did
    assert got.disagreements == len(steps)
    # screens after the first are the learner's own: none of them is in the expert's episodes
    assert sum(d.prompt not in expert_prompts for _, d in got.steps) >= len(steps) - 3


def test_screens_without_an_expert_step_are_counted_and_not_trained_on(policy, judges):
    tasks = sft_tasks(2, seed=3)
    got = collect_corrections(policy, tasks, judges=judges, learner=_GoesHome(), expert=_Flaky())
    assert got.unlabelled >= 2 and len(got.steps) >= 2 and got.episodes == 2


def test_with_expert_share_one_the_expert_plays_and_the_episodes_succeed(policy, judges):
    tasks = sft_tasks(3, seed=3)
    got = collect_corrections(policy, tasks, judges=judges, learner=_GoesHome(), expert_share=1.0)
    assert got.successes == got.episodes == 3 and got.disagreements == len(got.steps)
    with pytest.raises(ValueError, match="expert_share"):
        collect_corrections(policy, tasks, judges=judges, expert_share=1.5)
