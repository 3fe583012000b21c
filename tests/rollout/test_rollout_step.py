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
from navrl.worlds.phone.judges import OracleJudge
from navrl.rollout.runner import EpisodeRunner, RunnerConfig
from navrl.worlds.phone.expert import Memory, expert_step
from navrl.worlds.phone.suites import suite_tasks
from navrl.tasks.user import ProfileUser

JUDGE = OracleJudge()
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
