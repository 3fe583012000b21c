"""Phone worlds, screens, expert runs and oracle verdicts pinned to f0ad593's behaviour.

The world's creation, snapshots and the oracle judge were rewritten for speed (issue #27);
the worlds must stay exactly what they were for the same (template, seed): the same app
data, rng state, screens and screenshots, the same expert trajectories, and the same
oracle verdicts and rewards — also for planners that stray from the expert and ask. The
digests below were computed with the code of f0ad593 (``python tests/worlds/phone/test_world_pin.py``
prints them); a change of any world, screen or verdict changes a digest.
"""
from __future__ import annotations

import hashlib
import random

from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.planner import Planner, PlannerContext, RandomPlanner
from navrl.worlds.phone.sim import PerturbConfig, PhoneWorld
from navrl.worlds.phone.judges import OracleJudge
from navrl.planning import Memory, PlannerOutput
from navrl.rollout.runner import EpisodeRunner
from navrl.worlds.phone.expert import ExpertStuck, expert_step
from navrl.worlds.phone.task import templates
from navrl.worlds.phone.suites import suite_tasks

PINNED_SUITES = ("train", "test-ios", "test-android", "test-unseen")
"""f0ad593's suites (``val``, added later, draws train's templates on other seeds)."""

PINNED = {
    "worlds": "f412ce0ee24f46b2a81927272fa2c7f66a35480acc514a209776b641e0a03a92",
    "screens": "793ad855366c802f5c3fe99cb8593c155bdf890df0e161652649beb8dfd3b77f",
    "episodes": "14ba56bbed96c8b67c1a5c957a73dba30883d354c617431615a6ac8bae0b1904",
}


def _state_text(w: PhoneWorld) -> str:
    st = w.state
    data = {k: st.data[k] for k in st.data}
    return repr((st.skin, st.layout, st.seed, list(st.installed), data, st.rng.getstate(), st.profile, st.fg,
                 st.stacks, st.fields, st.focus, st.scroll, st.overlay, st.overflow, st.toast, st.loading,
                 st.opened, st.events, st.steps, st.flags, w._fault_rng.getstate()))


def _pin_tasks() -> list:
    """Every template of every suite, twice (two seeds), plus perturbation-free copies."""
    out = []
    for suite in PINNED_SUITES:
        n = 2 * len({t.template for t in suite_tasks(suite)})
        out += suite_tasks(suite, n, seed=5)
    return out


def worlds_digest() -> str:
    h = hashlib.sha256()
    for t in _pin_tasks():
        h.update(_state_text(t.make_device()).encode())
    for seed in (0, 1, 17, 123_456):
        for skin in ("ios", "android"):
            for layout in ("default", "alt"):
                for perturb in (None, PerturbConfig.off(), PerturbConfig(1.0, 1.0, 1.0, 1.0, 1.0)):
                    h.update(_state_text(PhoneWorld(skin=skin, seed=seed, layout=layout, perturb=perturb)).encode())
    return h.hexdigest()


def screens_digest() -> str:
    """Screenshots and UI trees along the expert's run of every third pinned task."""
    h = hashlib.sha256()
    for t in _pin_tasks()[::3]:
        w, mem = t.make_device(), Memory()
        for _ in range(t.max_steps):
            obs = w.observe()
            h.update(repr(obs.nodes).encode())
            h.update(w.screenshot().tobytes())
            s = expert_step(t, w, mem)
            h.update(s.text().encode())
            if s.intent[0] == "complete":
                break
            if s.intent[0] == "ask":
                mem.qa.append((s.intent[1], "x"))
                continue
            from navrl.worlds.phone.expert import intent_action
            w.act(intent_action(obs, s.intent))
    return h.hexdigest()


class MixedPlanner(Planner):
    """The expert most of the time, a seeded random step otherwise: the oracle judges see
    progress, no progress, detours the expert recovers from, asks, and hallucinated quotes."""

    def __init__(self, seed: int, p_random: float):
        self.rng, self.p = random.Random(seed), p_random
        self.rand = RandomPlanner(seed + 1)

    def plan(self, contexts: list[PlannerContext]) -> list[PlannerOutput]:
        out = []
        for c in contexts:
            if self.rng.random() < self.p:
                out += self.rand.plan([c])
            elif self.rng.random() < 0.05:
                out.append(PlannerOutput('Reasoning: I see "Nowhere Button".\nStep: Go home\nRemaining: all'))
            else:
                try:
                    out.append(PlannerOutput(expert_step(c.task, c.device, Memory(list(c.answers))).text()))
                except ExpertStuck:   # a detour made the task impossible
                    out += self.rand.plan([c])
        return out


def _episodes(planner: Planner, tasks: list) -> list:
    j = OracleJudge()
    r = EpisodeRunner(planner, AccessibilityGrounder(), j, j, j)
    out = [(t.valid, t.success, t.end, t.terminal_verdict, t.terminal_reward,
             [(s.kind, s.action, s.verdict, s.reward, s.judge_reason) for s in t.steps]) for t in r.run(tasks)]
    assert j.replays == 0, "the oracle judge rebuilt a world: a snapshot came without oracle facts"
    return out


def episodes_digest() -> str:
    tasks = _pin_tasks()
    h = hashlib.sha256()
    h.update(repr(_episodes(MixedPlanner(0, 0.0), tasks)).encode())
    h.update(repr(_episodes(MixedPlanner(1, 0.25), tasks[::8])).encode())
    h.update(repr(_episodes(MixedPlanner(2, 0.6), tasks[1::16])).encode())
    return h.hexdigest()


def test_worlds_are_those_of_f0ad593() -> None:
    assert len(templates()) == 67
    assert worlds_digest() == PINNED["worlds"]


def test_screens_and_expert_runs_are_those_of_f0ad593() -> None:
    assert screens_digest() == PINNED["screens"]


def test_oracle_verdicts_and_rewards_are_those_of_f0ad593() -> None:
    assert episodes_digest() == PINNED["episodes"]


if __name__ == "__main__":
    import time
    for name, fn in (("worlds", worlds_digest), ("screens", screens_digest), ("episodes", episodes_digest)):
        t0 = time.perf_counter()
        print(f'    "{name}": "{fn()}",  # {time.perf_counter() - t0:.1f} s')
