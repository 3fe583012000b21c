"""The agent loop on the phone world: grounder accuracy, oracle judges, rewards, masking."""
from __future__ import annotations

from collections import Counter

import pytest

from navrl.actions import Action
from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.grounders.base import GroundingError
from navrl.agent.plan import Plan
from navrl.agent.planner import ExpertPlanner, Planner, PlannerOutput, RandomPlanner
from navrl.worlds.phone.sim import FaultConfig, PerturbConfig
from navrl.judge.base import PastStep, StepContext, TerminalContext
from navrl.worlds.phone.judges import OracleJudge
from navrl.judge.rewards import DEFAULT_REWARDS, RewardConfig
from navrl.judge.verdicts import AskVerdict, EndReason, StepVerdict, TerminalVerdict
from navrl.rollout.runner import EpisodeRunner, ui_hash
from navrl.rollout.storage import load_trajectories, save_trajectories
from navrl.worlds.phone.expert import Memory, expert_step, intent_action
from navrl.worlds.phone.task import make_task
from navrl.worlds.phone.suites import suite_tasks

JUDGE = OracleJudge()


def runner(planner: Planner, **kw) -> EpisodeRunner:
    return EpisodeRunner(planner, AccessibilityGrounder(), JUDGE, JUDGE, JUDGE, **kw)


class Scripted(Planner):
    """Plays a fixed list of Step lines (then Complete)."""

    def __init__(self, steps: list[str]):
        self.steps = steps
        self.i: dict[int, int] = {}

    def plan(self, contexts):
        out = []
        for c in contexts:
            k = self.i.get(id(c.task), 0)
            self.i[id(c.task)] = k + 1
            s = self.steps[k] if k < len(self.steps) else "Complete"
            out.append(PlannerOutput(f"Reasoning: scripted.\nStep: {s}\nRemaining: -" if s is not None else ""))
        return out


@pytest.mark.parametrize("skin", ["ios", "android"])
def test_grounder_accuracy_on_expert_steps(skin: str) -> None:
    g = AccessibilityGrounder()
    total = ok = 0
    for task in suite_tasks("test-ios", 400):
        task = task.with_(skin=skin)
        w, mem = task.make_device(), Memory()
        for _ in range(task.max_steps):
            s = expert_step(task, w, mem)
            if s.intent[0] in ("complete", "ask"):
                break
            obs = w.observe()
            want = intent_action(obs, s.intent)
            try:
                got = g.ground(s.step, obs)
            except GroundingError:
                got = None
            total += 1
            ok += got == want
            w.act(want)
        if total >= 1000:
            break
    assert total >= 1000
    assert ok / total >= 0.98, f"{ok}/{total}"


def test_expert_eval_reaches_95_percent_and_random_near_zero() -> None:
    tasks = suite_tasks("test-ios", 80)
    ex = runner(ExpertPlanner()).run(tasks)
    assert sum(t.success for t in ex) / len(ex) >= 0.95
    assert all(s.verdict in ("success", "justified") for t in ex for s in t.steps if s.kind != "complete")
    rnd = runner(RandomPlanner(0)).run(tasks)
    assert sum(t.success for t in rnd) / len(rnd) <= 0.05
    c = Counter(s.verdict for t in rnd for s in t.steps if s.verdict)
    assert c["fail"] > c["success"] + c.get("overcomplete", 0)


def _ctx(task, world, step: str, history=(), reasoning="ok", memory=None):
    obs = world.observe()
    before = world.snapshot()
    act = AccessibilityGrounder().ground(step, obs)
    if act.is_device_action:
        world.act(act)
    after_obs = world.observe()
    return StepContext(task, obs, after_obs, Plan(reasoning, step, ""), act, list(history), memory or Memory(),
                       ui_hash(obs), before, world.snapshot())


def test_oracle_step_verdicts_hand_labelled() -> None:
    task = make_task("shop_add_to_bag", 0, perturb=PerturbConfig.off())
    w = task.make_device()
    # progress with grounded reasoning: success (+1)
    j = JUDGE.judge_step(_ctx(task, w, 'Tap "Shop"', reasoning='I see "Shop" on the home screen.'))
    assert j.verdict is StepVerdict.SUCCESS and DEFAULT_REWARDS.step(j.verdict) == 1.0
    # progress, but the reasoning quotes something that is not on screen: fail (0)
    w2 = task.make_device()
    j = JUDGE.judge_step(_ctx(task, w2, 'Tap "Shop"', reasoning='The "Buy Now" banner is showing.'))
    assert j.verdict is StepVerdict.FAIL and DEFAULT_REWARDS.step(j.verdict) == 0.0
    # no progress: fail
    w3 = task.make_device()
    j = JUDGE.judge_step(_ctx(task, w3, 'Tap "Settings"'))
    assert j.verdict is StepVerdict.FAIL


def test_repeating_a_failed_tap_is_fail_even_when_it_would_help() -> None:
    task = make_task("shop_add_to_bag", 0, perturb=PerturbConfig.off())
    w = task.make_device()
    obs = w.observe()
    n = next(x for x in obs.nodes if x.label == "Shop")
    hist = [PastStep('Tap "Shop"', Action.tap(*n.center).to_text(), ui_hash(obs), "fail")]
    j = JUDGE.judge_step(_ctx(task, w, 'Tap "Shop"', history=hist))
    assert j.verdict is StepVerdict.FAIL and "repeat" in j.reason


def test_runner_expert_that_repeats_a_failed_tap_gets_fail() -> None:
    task = make_task("shop_add_to_bag", 0, perturb=PerturbConfig.off())
    tr = runner(Scripted(['Tap "Settings"', 'Go home', 'Tap "Settings"'])).run([task])[0]
    v = [s.verdict for s in tr.steps]
    assert v[0] == "fail" and v[2] == "fail" and "repeat" in tr.steps[2].judge_reason


def test_overcomplete_after_goal() -> None:
    task = make_task("settings_toggle", 0, perturb=PerturbConfig.off())
    w = task.make_device()
    from navrl.worlds.phone.expert import run_expert
    run = run_expert(task, w)
    assert run.success
    j = JUDGE.judge_step(_ctx(task, w, "Go home"))
    assert j.verdict is StepVerdict.OVERCOMPLETE and DEFAULT_REWARDS.step(j.verdict) == -2.0


def test_terminal_rewards_every_row() -> None:
    r = DEFAULT_REWARDS
    assert r.terminal(TerminalVerdict.SUCCESS, EndReason.COMPLETE) == 2.0
    assert r.terminal(TerminalVerdict.BLOCKED_COMPLETE, EndReason.COMPLETE) == 0.5
    assert r.terminal(TerminalVerdict.FAIL, EndReason.BUDGET) == -0.75
    assert r.terminal(TerminalVerdict.FAIL, EndReason.COMPLETE) == -1.0
    assert r.terminal(TerminalVerdict.FAIL, EndReason.INVALID) == 0.0
    assert r.unparseable == -1.0 and r.ask(AskVerdict.JUSTIFIED) == 1.0 and r.ask(AskVerdict.UNJUSTIFIED) == 0.0


def test_claiming_completion_early_gets_minus_one() -> None:
    task = make_task("shop_add_to_bag", 0, perturb=PerturbConfig.off())
    tr = runner(Scripted(['Tap "Shop"', "Complete"])).run([task])[0]
    assert tr.end == "complete" and tr.terminal_verdict == "fail" and tr.terminal_reward == -1.0


def test_budget_exhausted_gets_minus_three_quarters() -> None:
    task = make_task("shop_add_to_bag", 0, perturb=PerturbConfig.off())
    tr = runner(Scripted(['Tap "Settings"', "Go home"] * 20)).run([task])[0]
    assert tr.end == "budget" and tr.length == task.max_steps and tr.terminal_reward == -0.75
    assert tr.loops > 0


def test_unparseable_output_is_charged_at_the_step() -> None:
    task = make_task("shop_add_to_bag", 0, perturb=PerturbConfig.off())
    tr = runner(Scripted([None, "Complete"])).run([task])[0]
    assert tr.steps[0].kind == "unparseable" and tr.steps[0].reward == -1.0


def test_ask_user_judged_and_answered() -> None:
    task = make_task("shop_ask_size", 0, perturb=PerturbConfig.off())
    tr = runner(Scripted(["Ask user: What is your shoe size?", "Ask user: What is your shoe size?",
                          "Ask user: What is your favourite colour?"])).run([task])[0]
    assert [s.verdict for s in tr.steps[:3]] == ["justified", "unjustified", "unjustified"]
    assert tr.steps[0].user_answer == task.profile["shoe size"]
    assert tr.steps[2].user_answer == "I don't know."


def test_blocked_complete_terminal() -> None:
    blocked = [t for t in suite_tasks("test-unseen", 200) if t.family.value == "blocked"]
    if not blocked:
        pytest.skip("no blocked templates registered yet")
    tr = runner(ExpertPlanner()).run(blocked[:4])
    assert all(t.terminal_verdict == "blocked_complete" and t.terminal_reward == 0.5 for t in tr)


def test_fault_injected_device_gives_invalid_trajectory_with_no_reward() -> None:
    task = make_task("shop_checkout", 0, perturb=PerturbConfig.off(), faults=FaultConfig(lose_at_step=3))
    ok = make_task("shop_checkout", 1, perturb=PerturbConfig.off())
    trs = runner(ExpertPlanner()).run([task, ok])
    bad = trs[0]
    assert not bad.valid and bad.invalid_reason == "device_lost"
    assert bad.total_reward == 0.0 and all(s.reward == 0.0 for s in bad.steps)
    assert trs[1].valid and trs[1].success
    never = make_task("shop_checkout", 2, faults=FaultConfig(app_never_loads=1.0))
    tr = runner(ExpertPlanner()).run([never])[0]
    assert not tr.valid and tr.invalid_reason == "app_never_loads"


def test_trajectories_round_trip_and_replay(tmp_path) -> None:
    from navrl.rollout.runner import RunnerConfig
    tasks = suite_tasks("test-ios", 4)
    trs = runner(ExpertPlanner(), config=RunnerConfig(record_frames=True)).run(tasks)
    save_trajectories(trs, tmp_path)
    back = load_trajectories(tmp_path)
    assert [t.to_json() for t in back] == [t.to_json() for t in trs]
    assert all(len(b.frames) == len(t.frames) > 0 for b, t in zip(back, trs))
    # replay: executing the recorded actions on a fresh device reproduces the recorded screens
    for task, tr in zip(tasks, back):
        w = task.make_device()
        for s, png in zip(tr.steps, tr.frames):
            assert w.observe().png == png
            if s.kind == "device" and s.action:
                w.act(Action.from_text(s.action))


class _NoShortcut(OracleJudge):
    """The oracle judge that always replays the expert from the after-state."""

    def _expert(self, task, snapshot, answers):
        return super()._expert(task, snapshot, answers)[0], ()


class _Mixed(Planner):
    """The expert 70% of the time, a random step otherwise (seeded: two runs are identical)."""

    def __init__(self, seed: int):
        self.expert, self.random = ExpertPlanner(), RandomPlanner(seed)
        import random
        self.rng = random.Random(seed)

    def plan(self, contexts):
        return [(self.expert if self.rng.random() < 0.7 else self.random).plan([c])[0] for c in contexts]


def test_oracle_one_fewer_after_the_experts_own_action_agrees_with_replaying_it() -> None:
    """The judge skips replaying the expert after the agent took the expert's own next action
    (remaining after = before - 1); on mixed expert/random rollouts with perturbations every
    step's verdict and remaining-step counts equal a full replay's."""
    tasks = suite_tasks("train", 24, seed=5) + suite_tasks("test-android", 8, seed=5)
    runs = []
    for judge in (OracleJudge(), _NoShortcut()):
        r = EpisodeRunner(_Mixed(3), AccessibilityGrounder(), judge, judge, judge)
        runs.append(r.run(tasks))
    fast, full = runs
    n_steps = n_shortcut = 0
    for a, b in zip(fast, full):
        assert [s.step for s in a.steps] == [s.step for s in b.steps]
        assert [(s.verdict, s.reward) for s in a.steps] == [(s.verdict, s.reward) for s in b.steps]
        assert a.success == b.success
        for s in a.steps:
            n_steps += 1
            n_shortcut += "no progress" not in s.judge_reason and "progress" in s.judge_reason
    assert n_steps > 150 and n_shortcut > 50
