"""The step rules (navrl.rollout.step) shared by the batched runner and the Gymnasium env."""
from __future__ import annotations

import random
from io import BytesIO

import pytest
from PIL import Image

from navrl.actions import ActionKind
from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.grounders.base import GroundingError
from navrl.agent.planner import Planner, PlannerOutput
from navrl.worlds.phone.env import PhoneWorldEnv
from navrl.imaging import phash64
from navrl.judge.rewards import DEFAULT_REWARDS
from navrl.worlds.phone.judges import OracleJudge
from navrl.rollout.runner import EpisodeRunner, RunnerConfig
from navrl.worlds.phone.expert import Memory, expert_step
from navrl.worlds.phone.suites import suite_tasks
from navrl.tasks.user import ProfileUser

JUDGE = OracleJudge()
JUDGE_REWARDS = DEFAULT_REWARDS
DETOURS = ['Tap "Nothing here"', "Swipe up", "Go home", "Ask user: what is it?", 'Type "x"']


def step_texts(task, rng: random.Random) -> list[str]:
    """The expert's steps with detours mixed in (off-screen taps, asks, wrong turns), played on a
    world of its own so that the expert recovers from each detour."""
    world, mem, grounder = task.make_device(), Memory(), AccessibilityGrounder()
    texts: list[str] = []
    for _ in range(task.max_steps):
        s = rng.choice(DETOURS) if rng.random() < 0.2 else expert_step(task, world, mem).step
        texts.append(s)
        try:
            a = grounder.ground(s, world.observe())
        except GroundingError:
            continue
        if a.kind is ActionKind.COMPLETE:
            break
        if a.kind is ActionKind.ASK_USER:
            mem.qa.append((a.text, ProfileUser().answer(task, a.text)))
        else:
            world.act(a)
    return texts


class Scripted(Planner):
    """Speaks each task's step texts in the planner protocol, then completes."""

    def __init__(self, texts: dict[str, list[str]]):
        self.texts, self.k = texts, {t: 0 for t in texts}

    def plan(self, contexts):
        out = []
        for c in contexts:
            steps, k = self.texts[c.task.id], self.k[c.task.id]
            self.k[c.task.id] = k + 1
            out.append(PlannerOutput(f"Reasoning: -\nStep: {steps[k] if k < len(steps) else 'Complete'}\nRemaining: -"))
        return out


def play_env(task, texts: list[str]) -> list[tuple[float, bool, bool, dict]]:
    env = PhoneWorldEnv(task=task)
    env.reset(seed=0)
    seen = []
    for k in range(task.max_steps):
        _, r, term, trunc, info = env.step(texts[k] if k < len(texts) else "Complete")
        seen.append((r, term, trunc, info))
        if term or trunc:
            break
    return seen


@pytest.mark.parametrize("suite", ["test-ios", "train"])
def test_env_and_runner_score_the_same_steps_the_same(suite: str) -> None:
    rng = random.Random(5)
    tasks = suite_tasks(suite, 6)
    tasks[0] = tasks[0].with_(max_steps=3)          # one episode that runs out of budget
    texts = {t.id: step_texts(t, rng) for t in tasks}
    trajs = EpisodeRunner(Scripted(texts), AccessibilityGrounder(), JUDGE, JUDGE, JUDGE).run(tasks)
    kinds, ends = set(), set()
    for task, tr in zip(tasks, trajs):
        seen = play_env(task, texts[task.id])
        assert len(seen) == len(tr.steps)
        for st, (r, _, _, info) in zip(tr.steps, seen[:-1]):
            assert (r, info.get("verdict")) == (st.reward, st.verdict)
        r, term, trunc, info = seen[-1]
        last = tr.steps[-1]
        assert r == last.reward + tr.terminal_reward and info.get("verdict") == last.verdict
        assert (info["end"], info["terminal_verdict"], info["success"]) == (tr.end, tr.terminal_verdict, tr.success)
        assert (term, trunc) == (tr.end == "complete", tr.end == "budget")
        kinds |= {s.kind for s in tr.steps}
        ends.add(tr.end)
    # the comparison covered every branch of a step and both ways an episode ends
    assert kinds == {"device", "ungrounded", "ask_user", "complete"} and ends == {"complete", "budget"}


def test_runner_records_the_perceptual_hash_of_each_before_screen() -> None:
    tasks = suite_tasks("test-ios", 2)
    texts = {t.id: step_texts(t, random.Random(0))[:4] for t in tasks}
    runner = EpisodeRunner(Scripted(texts), AccessibilityGrounder(), JUDGE, JUDGE, JUDGE,
                           config=RunnerConfig(phash=True, record_frames=True))
    for tr in runner.run(tasks):
        # frames hold each before-screen and then the final screen
        assert len(tr.frames) == len(tr.steps) + 1
        for st, png in zip(tr.steps, tr.frames):
            assert st.phash == phash64(Image.open(BytesIO(png)).convert("RGB"))


def test_a_run_paces_the_garbage_collector_and_restores_it():
    """RunnerConfig.gc_gen0 raises the youngest generation's threshold during a run only;
    trajectories do not depend on it."""
    import gc

    from navrl.agent.planner import ExpertPlanner

    class Watch(ExpertPlanner):
        seen: list = []

        def plan(self, ctxs):
            self.seen.append(gc.get_threshold()[0])
            return super().plan(ctxs)

    tasks = suite_tasks("train", 3, seed=7)
    before = gc.get_threshold()
    out = {}
    for gen0 in (None, 100_000):
        planner = Watch()
        planner.seen = []
        trajs = EpisodeRunner(planner, AccessibilityGrounder(), JUDGE, JUDGE, JUDGE,
                              config=RunnerConfig(gc_gen0=gen0)).run(tasks)
        out[gen0] = [[(s.action, s.reward) for s in t.steps] for t in trajs]
        assert gc.get_threshold() == before
        assert set(planner.seen) == ({before[0]} if gen0 is None else {max(before[0], gen0)})
    assert out[None] == out[100_000]


def test_a_world_that_ends_itself_and_takes_only_its_step_kinds() -> None:
    """A task with ``step_kinds`` and ``ended`` (navrl.tasks.task): a step of another kind acts on
    nothing (ungrounded, failed, the screen unchanged), and the step after which the world reports
    the episode over ends it (``done``), judged on its merits by the terminal judge."""
    import dataclasses
    from navrl.worlds.phone.task import TaskSpec

    @dataclasses.dataclass(frozen=True)
    class EndsInApp(TaskSpec):
        end_app: str = ""
        step_kinds: tuple[str, ...] | None = ("tap", "swipe")

        def ended(self, obs) -> bool:
            return obs.app == self.end_app

    grounder = AccessibilityGrounder()
    for base in suite_tasks("test-ios", 20):      # the first task whose expert starts with a tap
        world = base.make_device()
        first = expert_step(base, world, Memory()).step
        if first.startswith("Tap"):
            break
    home = world.observe()
    world.act(grounder.ground(first, home))
    app = world.observe().app
    assert app and app != home.app
    task = EndsInApp(**{f.name: getattr(base, f.name) for f in dataclasses.fields(base)}, end_app=app)
    (tr,) = EpisodeRunner(Scripted({task.id: ['Type "x"', "Go home", first, "Swipe up"]}), grounder,
                          JUDGE, JUDGE, JUDGE).run([task])
    assert [s.kind for s in tr.steps] == ["ungrounded", "ungrounded", "device"]
    assert "takes no type steps (it takes swipe, tap)" in tr.steps[0].judge_reason
    assert "takes no home steps" in tr.steps[1].judge_reason
    assert tr.steps[0].screen_hash == tr.steps[1].screen_hash == tr.steps[2].screen_hash   # nothing acted
    assert tr.steps[0].verdict == "fail" and tr.steps[2].verdict == "success"
    # the world ended it one step into a longer task: judged, not done -> as a budget run-out
    assert tr.end == "done" and tr.terminal_verdict == "fail" and not tr.success
    assert tr.terminal_reward == JUDGE_REWARDS.ended_fail == JUDGE_REWARDS.budget_exhausted
    # the Gymnasium env reports the world's end as terminated
    env = PhoneWorldEnv(task=task)
    env.reset(seed=0)
    _, _, term, trunc, info = env.step(first)
    assert (term, trunc, info["end"]) == (True, False, "done")
