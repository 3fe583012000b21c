"""The oracle's ``progress="best"`` rule: a step is progress only when it takes the expert's
remaining steps below the episode's best so far, so undoing one's own regression earns nothing,
while a regression the world brings between steps does not lower the bar."""
from __future__ import annotations

import pytest

from navrl.judge.base import PastStep
from navrl.worlds.phone.judges import OracleJudge, best_so_far


def _h(*pairs):
    return [PastStep("s", "tap(1, 1)", f"h{i}", "x", p) for i, p in enumerate(pairs)]


def test_best_so_far_by_hand():
    assert best_so_far([], 7) == 7                                    # first step: its own count
    assert best_so_far(_h((7, 6), (6, 5)), 5) == 5                    # plain progress
    # the agent regressed (5 -> 7: typed into the wrong field), then undid one step of it: the bar stays at 5
    assert best_so_far(_h((7, 6), (6, 5), (5, 7), (7, 6)), 6) == 5
    # the world added 2 steps between two steps (a pop-up on the next screen): the bar rises with it
    assert best_so_far(_h((7, 6), (6, 5)), 7) == 7
    # an ask-user answer shortened the count between steps: the bar follows it down
    assert best_so_far(_h((7, 6), (6, 5)), 4) == 4
    # steps a judge counted nothing for (asks) are skipped
    assert best_so_far(_h((7, 6)) + [PastStep("ask", None, "h", "justified")], 6) == 6


def test_undo_loops_earn_nothing_under_best_but_do_under_step():
    """The loop RL found at multi-app junctions (docs/results/exploration.md §13): leave the form
    (5 -> 7), come back (7 -> 6 -> 5), leave again: every return is progress under the design's
    rule, none under ``best``."""
    from navrl.judge.base import StepContext
    from navrl.judge.verdicts import StepVerdict
    from navrl.planning import Memory
    from navrl.actions import Action
    from navrl.worlds.phone.task import make_task
    task = make_task("transfer_shop_receipt", 0)

    class Plan:
        reasoning = ""
    hist = _h((6, 5), (5, 7))

    def ctx():
        return StepContext(task=task, before=type("O", (), {"nodes": []})(), after=None, plan=Plan(),
                           action=Action.tap(1, 1), history=hist, memory=Memory(), screen_hash="z")
    verdicts = {}
    for rule in ("step", "best"):
        j = OracleJudge(progress=rule)
        verdicts[rule] = [j._progress(ctx(), 7, 6).verdict, j._progress(ctx(), 6, 5).verdict,
                          j._progress(ctx(), 5, 4).verdict]
    assert verdicts["step"] == [StepVerdict.SUCCESS] * 3
    # back to 6 and to 5 are undoing; 4 is past the best (5): progress
    assert verdicts["best"][:1] == [StepVerdict.FAIL] and verdicts["best"][2] == StepVerdict.SUCCESS
    with pytest.raises(ValueError):
        OracleJudge(progress="most")


def test_potential_rewards_make_a_detour_and_its_return_sum_to_zero():
    """``step_regress`` -1 (the ``potential`` preset): the loop of a failed detour (5 -> 7) and the
    two successes that undo it (7 -> 6 -> 5) sums to 0 dense reward; the design's table pays it 2.
    A step that makes the task impossible (the count jumps to the cap) is charged at most 2."""
    from navrl.judge.rewards import DEFAULT_REWARDS, reward_preset
    from navrl.judge.verdicts import StepVerdict
    pot = reward_preset("potential")

    def loop(rw):
        return (rw.step(StepVerdict.FAIL) + rw.regress(7 - 5)) + 2 * rw.step(StepVerdict.SUCCESS) \
            if rw.step_regress else rw.step(StepVerdict.FAIL) + 2 * rw.step(StepVerdict.SUCCESS)
    assert loop(DEFAULT_REWARDS) == 2.0
    assert loop(pot) == 0.0
    assert pot.regress(60 - 5) == -2.0 and pot.regress(-1) == 0.0 and DEFAULT_REWARDS.regress(3) == 0.0


def test_the_runner_charges_a_regressing_step_under_the_potential_table():
    """A real episode: the expert's first step (Tap "Mail"), then `Go home` back out of the app
    (the count goes up by one), then the expert again: the `Go home` step's reward is -(added steps) under ``potential``,
    0 under the default, and the expert's steps earn +1 under both."""
    from navrl.agent.grounders.accessibility import AccessibilityGrounder
    from navrl.agent.planner import ExpertPlanner, Planner, PlannerOutput
    from navrl.judge.rewards import reward_preset
    from navrl.judge.sets import make_judges
    from navrl.rollout.runner import EpisodeRunner, RunnerConfig
    from navrl.worlds.phone.task import make_task

    class Detour(Planner):
        def __init__(self):
            self.expert = ExpertPlanner()

        def plan(self, contexts):
            outs = self.expert.plan(contexts)
            return [PlannerOutput('Reasoning: out.\nStep: Go home\nRemaining: back') if len(c.history) == 1 else o
                    for c, o in zip(contexts, outs)]
    rewards = {}
    for preset in ("default", "potential"):
        runner = EpisodeRunner(Detour(), AccessibilityGrounder(), *make_judges("oracle")[:3],
                               rewards=reward_preset(preset), config=RunnerConfig(max_steps=6))
        tr = runner.run([make_task("transfer_shop_receipt", 0)])[0]
        rewards[preset] = [(s.step, s.verdict, s.reward) for s in tr.steps[:4]]
    d, p = rewards["default"], rewards["potential"]
    assert d[1][:2] == ("Go home", "fail") and d[1][2] == 0.0
    assert p[1][:2] == ("Go home", "fail") and p[1][2] == -1.0          # home is one step further than the inbox
    assert [d[0][2], d[2][2]] == [1.0, 1.0] == [p[0][2], p[2][2]]        # Tap "Mail", and again after the detour
