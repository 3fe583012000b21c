"""The oracle facts a task's phone world ships in its snapshots (navrl.worlds.phone.facts).

They must be what replaying the expert says: the remaining steps for any answers the user
gave, goal met and wall reached; and facts derived after the expert's own action (no replay)
must equal facts computed afresh.
"""
from __future__ import annotations

import random

from navrl.actions import Action
from navrl.worlds.phone.sim.world import PhoneSnapshot
from navrl.planning import Memory
from navrl.worlds.phone.expert import ExpertStuck, expert_remaining, expert_step, intent_action
from navrl.worlds.phone.facts import OracleFacts, TaskOracle
from navrl.worlds.phone.task import Family, make_task, templates
from navrl.tasks.user import ProfileUser


def _walk(task, rng: random.Random, p_random: float, steps: int = 14):
    """(world, memory) at each state of a walk that mostly follows the expert."""
    w, mem, user = task.make_device(), Memory(), ProfileUser()
    for _ in range(steps):
        yield w, mem
        obs = w.observe()
        try:
            s = expert_step(task, w, mem)
        except ExpertStuck:
            s = None
        if s is not None and s.intent[0] == "complete":
            return
        if s is not None and s.intent[0] == "ask" and rng.random() > p_random:
            mem.qa.append((s.intent[1], user.answer(task, s.intent[1])))
            continue
        if s is None or s.intent[0] == "ask" or rng.random() < p_random:
            taps = [n for n in obs.nodes if "tap" in n.actions]
            a = Action.tap(*rng.choice(taps).center) if taps else Action.home()
        else:
            a = intent_action(obs, s.intent)
        w.act(a)


def _tasks(fams: set[Family] | None = None, seeds: int = 2) -> list:
    return [make_task(name, 40 + k) for name, t in sorted(templates().items())
            if fams is None or t.family in fams for k in range(seeds)]


def test_facts_match_the_expert_replayed_for_any_answers() -> None:
    rng = random.Random(3)
    checked = asked = 0
    for task in _tasks({Family.ASK_USER, Family.BLOCKED, Family.ANSWER}, 1) + _tasks({Family.SINGLE}, 1)[::3]:
        for w, mem in _walk(task, rng, 0.3, 8):
            snap = w.snapshot()
            assert isinstance(snap, PhoneSnapshot)
            f = snap.oracle
            assert isinstance(f, OracleFacts) and f.task == task.id
            answers = [(), tuple(mem.answers())] + [(a,) for a in f.asks]
            for ans in answers:
                want, _ = expert_remaining(task, w.scratch(), Memory([("", a) for a in ans]), cap=60)
                assert f.remaining(ans) == want, (task.id, ans, f)
                checked += 1
            asked += bool(f.asks)
            assert f.met == task.tpl.check(w, task.params, None)
            assert f.blocked == task.blocked(w)
    assert checked > 150 and asked > 5, (checked, asked)


def test_facts_after_the_experts_own_action_equal_fresh_facts() -> None:
    rng = random.Random(5)
    derived = 0
    for task in _tasks():
        for w, _ in _walk(task, rng, 0.2):
            got = w._current_facts()       # set by act() when it followed from the previous state's facts
            w.snapshot()                   # computes (or keeps) this state's facts
            fresh = TaskOracle(task)._compute(w, w.state_bytes())
            if got is not None:
                assert got == fresh, (task.id, got, fresh)
                derived += 1
            assert w.oracle_facts() == fresh
    assert derived > 400, derived


def test_snapshot_keeps_its_facts_through_pickle_and_restore() -> None:
    import pickle
    task = make_task("mail_flag", 3)
    w = task.make_device()
    snap = w.snapshot()
    back = pickle.loads(pickle.dumps(snap))
    assert isinstance(back, PhoneSnapshot) and back == snap and back.oracle == snap.oracle
    w2 = task.make_device()
    w2.act(Action.home())
    w2.restore(back)
    assert w2._current_facts() == snap.oracle
    assert dict(w2.state.data.items()) == dict(w.state.data.items()) and w2.observe().nodes == w.observe().nodes
    assert w2.state.rng.getstate() == w.state.rng.getstate()


def test_replays_that_take_the_rest_from_remembered_runs_equal_whole_replays(monkeypatch) -> None:
    """Sibling walks from one start (detours, returns, asks): facts from replays that stop at
    a state an earlier replay passed through equal whole replays', also under step budgets
    small enough that a remembered run does not settle the replay (caps 0 to 6)."""
    import navrl.worlds.phone.facts as oracle_mod
    rng = random.Random(11)
    calls = {"memo": 0, "whole": 0}
    step = oracle_mod.expert_step
    mode = ["memo"]

    def counted(*a, **kw):
        calls[mode[0]] += 1
        return step(*a, **kw)
    monkeypatch.setattr(oracle_mod, "expert_step", counted)
    checked = 0
    for task in _tasks({Family.SINGLE, Family.ASK_USER, Family.BLOCKED, Family.MULTI}, 1)[::4]:
        for _ in range(4):            # sibling walks of one task
            for w, _ in _walk(task, rng, 0.35, 10):
                state = w.state_bytes()
                for cap in (60, 0, 3, 6):
                    o = TaskOracle(task, cap)
                    mode[0] = "memo"
                    got = o._compute(w, state)
                    mode[0] = "whole"
                    want = o._compute(w, state, memo=False)
                    assert got == want, (task.id, cap, got, want)
                    checked += 1
    assert checked > 300, checked
    assert calls["memo"] < 0.6 * calls["whole"], calls     # the remembered runs did save replaying


def test_a_remembered_run_settles_a_replay_only_within_its_step_budget() -> None:
    from navrl.worlds.phone.facts import _FAIL, _use
    ok = ("ok", 4, ("Alice",), (("stage", "tap(1,2)"), ("ask", "Alice"), ("stage", ""), ("end", "")))
    prefix = [("int", "tap(3,4)"), ("stage", "home()")]
    assert _use(None, 2, prefix, 10) is None
    assert _use(ok, 2, prefix, 6) == (6, ("Alice",), tuple(prefix) + ok[3])
    assert _use(ok, 2, prefix, 5) is None           # 6 steps: the budget ends first
    assert _use(("fail", 3), 2, prefix, 5) == _FAIL
    assert _use(("fail", 3), 2, prefix, 4) is None  # the budget ends before the expert gets stuck
    top = ("top", (5, (), (("stage", "x"),) * 5))
    assert _use(top, 0, (), 5) == top[1] and _use(top, 1, prefix[:1], 5) is None
