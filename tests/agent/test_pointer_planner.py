"""The pointer planner (docs/design.md §3a): decisions round-trip through the Step text, log-probs
are the sum of the factors' and re-score exactly at any temperature, legality masks hold,
one PPO step moves decisions the way their advantages say, entity identity does not leak."""
from __future__ import annotations

import json
import random
import re
import string

import pytest
import numpy as np
import torch

from navrl.agent.planner import PlannerContext
from navrl.agent.plan import parse_plan
from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
from navrl.agent.policy.pointer.features import (KIND_ID, KINDS, MAX_NODES, NODE_KINDS, Decision, decision_for,
                                                 drag_targets, render_step,
                                                 render_text)
from navrl.agent.policy.pointer.vocab import entity_words
from navrl.agent.steps import parse_step
from navrl.observation import Observation, UINode
from navrl.rl.losses import ppo_policy_loss
from navrl.rl.sft import SFTConfig, TemplateTeacher, collect_demonstrations, train_sft
from navrl.worlds.phone.task import make_task

SMALL = PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64)


@pytest.fixture(scope="module")
def vocab():
    return phone_world_vocabulary(n_tasks=40)


@pytest.fixture(scope="module")
def trained(vocab):
    """A pointer planner after a short SFT, and the demonstrations it saw."""
    torch.manual_seed(0)
    p = PointerPlanner(vocab, PointerConfig(d_model=48, n_layers=2, n_heads=4, d_ff=96), seed=0)
    demos = collect_demonstrations(p, 60, TemplateTeacher(compact=True), seed=0)
    train_sft(p, demos, SFTConfig(n_tasks=60, epochs=6, lr=4e-3, batch_size=32))
    return p, demos


def _ctx(nodes, goal="Send $150.00 to Oak Street Apartments from my checking account.", answers=()):
    task = make_task("bank_pay_payee", 3)
    task = task.with_(goal=goal)
    obs = Observation(tuple(nodes), "Bank", (390, 844), "ios")
    return PlannerContext(task, obs, history=[("", 'Tap "Bank"')], answers=list(answers))


NODES = [
    UINode("1", "header", "Transfer", (0, 0, 390, 40)),
    UINode("2", "textfield", "Amount", (10, 50, 380, 90), focused=True, value="", actions=("tap",)),
    UINode("3", "cell", "To", (10, 100, 380, 140), value="Choose", actions=("tap",)),
    UINode("4", "cell", "Recipe 2", (10, 150, 380, 190), actions=("tap", "long_press", "swipe")),
    UINode("5", "button", "Confirm", (10, 200, 380, 240), actions=("tap",), enabled=False),
    UINode("6", "text", "Balance $3,482.17", (10, 250, 380, 290)),
]


def test_every_kind_round_trips_through_the_step_text(vocab):
    p = PointerPlanner(vocab, SMALL, frames=["What is your {}?"])
    # two alike draggable shapes (told apart by their place) and a drop box beside the nodes
    drags = [UINode("7", "image", "small red circle", (10, 300, 40, 330), actions=("tap", "drag")),
             UINode("8", "image", "small red circle", (60, 300, 90, 330), actions=("tap", "drag")),
             UINode("9", "image", "large black square", (100, 300, 380, 400))]
    e = p.state(p.prompt_text(_ctx(NODES + drags, answers=[("What is your size?", "9")])))
    seen = set()
    for k in KINDS:
        kid = KIND_ID[k]
        if k in NODE_KINDS:
            args = [i for i, acc in enumerate(e.node_accept) if acc[kid]]
        elif k in ("type", "answer", "ask"):
            use = {"type": 0, "answer": 1, "ask": 2}[k]
            args = [i for i, c in enumerate(e.cands) if c.usable[use]][:40]
        else:
            args = [-1]
        assert args, k
        for a in args:
            if k == "drag":   # to every legal destination: each node but itself, each direction
                ds = [Decision(kid, a, int(j)) for j in np.flatnonzero(drag_targets(e, a))]
                assert len(ds) == len(NODES) + len(drags) - 1 + 4
            else:
                ds = [Decision(kid, a, 0 if k == "ask" else -1)]
            for d in ds:
                _round_trip(d, e, p, k)
            seen.add(k)
    assert seen == set(KINDS)
    # typed text and answers are verbatim substrings: "$150.00" -> "150" is expressible
    assert decision_for('Type "150"', e, p.frames) is not None
    assert decision_for("Complete: $3,482.17", e, p.frames) is not None
    # a drag's Step names the second of two alike shapes by its place, and its destination
    d = Decision(KIND_ID["drag"], len(NODES) + 1, len(NODES) + 2)
    assert render_step(d, e, p.frames) == 'Drag the 2nd "small red circle" to "large black square"'
    assert render_step(Decision(KIND_ID["drag"], len(NODES), MAX_NODES + 1), e, p.frames) == \
        'Drag "small red circle" down'
    assert decision_for('Drag "Amount" up', e, p.frames) is None      # a field takes no drag


def _round_trip(d, e, p, k):
    """Decision -> Reasoning/Step/Remaining text -> the same Step (and, for a drag, the same decision)."""
    text = render_text(d, e, p.frames)
    plan = parse_plan(text)
    assert plan and plan.step == render_step(d, e, p.frames)
    cmd = parse_step(plan.step)
    back = decision_for(plan.step, e, p.frames)
    assert back is not None, (k, plan.step)
    # the same command: identical Step text (ties between equal labels/spans pick the first)
    assert render_step(back, e, p.frames) == plan.step
    if k == "drag":
        assert back == d, (d, back)
    assert cmd.kind != "unknown"


def _contexts(demos, n):
    rng = random.Random(1)
    return [d.prompt for d in rng.sample(demos, n)]


@pytest.mark.parametrize("T", [0.6, 1.7])
def test_logprob_is_the_sum_of_factors_and_rescoring_agrees(trained, T):
    p, demos = trained
    p.sample, p.temperature = True, T
    prompts = _contexts(demos, 48)
    states = [p.state(pr) for pr in prompts]
    # sample decisions through the same forward pass plan() uses
    with torch.no_grad():
        kind, arg, frame, logp, _, mask, _, _ = p._forward(states, None, None, None, T, choose=True)
    outs = [Decision(int(k), int(a), int(f)).ids() for k, a, f in zip(kind, arg, frame)]
    rec = [logp[i, :len(o)].tolist() for i, o in enumerate(outs)]
    sb = p.score(prompts, outs, temperature=T)
    for i, o in enumerate(outs):
        assert sb.mask[i].sum().item() == len(o)
        assert sb.logprobs[i].sum().item() == pytest.approx(sum(rec[i]), abs=1e-5)
        assert sb.logprobs[i, :len(o)].tolist() == pytest.approx(rec[i], abs=1e-5)
    # the output log-prob is the sum of its factors: kind, then node/text given kind, then frame
    assert (sb.logprobs <= 1e-6).all()
    # a different temperature gives different log-probs (the scorer really uses T)
    sb1 = p.score(prompts, outs, temperature=1.0)
    assert not torch.allclose(sb1.logprobs, sb.logprobs)


def test_kind_exploration_records_the_behaviour_mixture(trained):
    """With ``explore`` eps the kind is sampled from (1 - eps) pi + eps uniform(legal kinds)
    and that mixture's log-prob is recorded (the node/text factors are pi's own)."""
    p, demos = trained
    T, eps = 0.7, 0.3
    prompts = _contexts(demos, 48)
    states = [p.state(pr) for pr in prompts]
    p.sample, p.explore = True, eps
    try:
        with torch.no_grad():
            kind, arg, frame, logp, _, mask, _, own = p._forward(states, None, None, None, T, choose=True)
    finally:
        p.explore = 0.0
    outs = [Decision(int(k), int(a), int(f)).ids() for k, a, f in zip(kind, arg, frame)]
    sb = p.score(prompts, outs, temperature=T)
    # the planner's own log-probs of the same choices are returned beside the mixture's
    # (policy.off_policy_ratio takes PPO's ratio against them)
    assert torch.allclose(own * mask, sb.logprobs[:, :3] * mask, atol=1e-5)
    assert not torch.allclose(own[:, 0], logp[:, 0])
    legal = torch.from_numpy(np.stack([s.kind_mask for s in states]))
    if not p.frames:
        legal[:, KIND_ID["ask"]] = False
    n_legal = legal.sum(-1).float()
    pi = sb.logprobs[:, 0].exp()
    assert torch.allclose(logp[:, 0].exp(), (1 - eps) * pi + eps / n_legal, atol=1e-5)
    assert torch.allclose(logp[:, 1:] * mask[:, 1:], sb.logprobs[:, 1:], atol=1e-5)
    # greedy decoding (evaluation) ignores it
    p.sample, p.explore = False, eps
    try:
        assert p.decide(prompts[0]) == Decision(*[int(x[0]) for x in p._forward(states[:1], None, None, None, 1.0,
                                                                                  choose=True)[:3]])
    finally:
        p.sample, p.explore = True, 0.0


def test_plan_records_the_logprobs_score_recomputes(trained):
    p, demos = trained
    p.sample, p.temperature = True, 0.8
    from navrl.worlds.phone.suites import suite_tasks
    from navrl.agent.grounders.accessibility import AccessibilityGrounder
    from navrl.worlds.phone.judges import OracleJudge
    from navrl.rollout.runner import EpisodeRunner
    j = OracleJudge()
    trajs = EpisodeRunner(p, AccessibilityGrounder(), j, j, j).run(suite_tasks("train", 6, seed=3))
    steps = [s for t in trajs for s in t.steps if s.token_ids]
    assert len(steps) >= 6
    sb = p.score([s.prompt for s in steps], [s.token_ids for s in steps], temperature=0.8)
    for i, s in enumerate(steps):
        assert sb.logprobs[i].sum().item() == pytest.approx(sum(s.logprobs), abs=1e-5)
        # the text it wrote parses back to the decision it made
        assert render_step(Decision.from_ids(s.token_ids), p.state(s.prompt), p.frames) == parse_plan(s.output).step
        assert s.policy_logprobs is None      # nothing mixed in: the behaviour is the planner


def test_exploring_rollouts_record_the_planners_own_logprobs_beside_the_behaviours(trained):
    """With exploration on, each step records the behaviour mixture's log-probs (``logprobs``)
    and the planner's own (``policy_logprobs``: what score recomputes), which differ."""
    p, demos = trained
    p.sample, p.temperature, p.explore, p.explore_arg = True, 1.0, 0.2, 0.3
    from navrl.worlds.phone.suites import suite_tasks
    from navrl.agent.grounders.accessibility import AccessibilityGrounder
    from navrl.worlds.phone.judges import OracleJudge
    from navrl.rollout.runner import EpisodeRunner
    j = OracleJudge()
    try:
        trajs = EpisodeRunner(p, AccessibilityGrounder(), j, j, j).run(suite_tasks("train", 6, seed=3))
    finally:
        p.explore = p.explore_arg = 0.0
    steps = [s for t in trajs for s in t.steps if s.token_ids]
    assert len(steps) >= 6 and all(s.policy_logprobs is not None for s in steps)
    sb = p.score([s.prompt for s in steps], [s.token_ids for s in steps], temperature=1.0)
    differ = 0
    for i, s in enumerate(steps):
        assert sb.logprobs[i, :len(s.token_ids)].tolist() == pytest.approx(s.policy_logprobs, abs=1e-5)
        differ += any(abs(a - b) > 1e-4 for a, b in zip(s.logprobs, s.policy_logprobs))
    assert differ == len(steps)     # the kind factor mixes on every step


def test_nodes_that_do_not_accept_a_kind_are_never_chosen(vocab):
    p = PointerPlanner(vocab, SMALL, seed=3)
    p.sample, p.temperature = True, 3.0   # flat: every legal choice is likely
    prompt = p.prompt_text(_ctx(NODES))
    e = p.state(prompt)
    chosen = {k: set() for k in NODE_KINDS}
    kinds_seen = set()
    for _ in range(60):
        with torch.no_grad():
            kind, arg, *_ = p._forward([e] * 32, None, None, None, 3.0, choose=True)
        kinds_seen |= {KINDS[k] for k in kind.tolist()}
        for k, a in zip(kind.tolist(), arg.tolist()):
            if KINDS[k] in NODE_KINDS:
                chosen[KINDS[k]].add(a)
    assert chosen["tap"] == {1, 2, 3}            # not the header, not the disabled Confirm, not plain text
    assert chosen["long_press"] == {3}
    assert chosen["swipe_left"] == {3} and chosen["swipe_right"] == {3}
    assert "ask" not in kinds_seen and "type" in kinds_seen   # no question frame learnt: never asks
    # a kind with no legal node has probability 0
    e2 = p.state(p.prompt_text(_ctx([NODES[0], NODES[5]])))
    with torch.no_grad():
        kind, *_ = p._forward([e2] * 64, None, None, None, 3.0, choose=True)
    assert not any(KINDS[k] in NODE_KINDS for k in kind.tolist())


def test_one_ppo_update_moves_decisions_with_their_advantages(trained):
    p0, demos = trained
    p = PointerPlanner.from_state(p0.state_dict_all())
    p.sample, p.temperature = True, 1.0
    prompts = _contexts(demos, 32)
    states = [p.state(x) for x in prompts]
    with torch.no_grad():
        kind, arg, frame, logp, _, mask, _, _ = p._forward(states, None, None, None, 1.0, choose=True)
    outs = [Decision(int(k), int(a), int(f)).ids() for k, a, f in zip(kind, arg, frame)]
    old = logp.clone()
    adv = torch.tensor([1.0 if i % 2 == 0 else -1.0 for i in range(len(outs))])
    opt = torch.optim.Adam(p.policy_parameters(), lr=1e-3)
    sb = p.score(prompts, outs)
    out = ppo_policy_loss(sb.logprobs, old * sb.mask, adv, sb.mask, 0.2)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    with torch.no_grad():
        new = p.score(prompts, outs).logprobs.sum(1)
    delta = new - old.sum(1)
    assert delta[adv > 0].mean() > 0.0
    assert delta[adv < 0].mean() < 0.0
    assert float((delta * adv).mean()) > 0.0


_WORD = re.compile(r"[A-Za-z]+")


def test_entity_identity_does_not_leak(trained):
    """Rename every entity word (any word of a task's parameters outside the UI vocabulary)
    consistently in goal, answers, history and screen to strings never seen in training: the
    greedy decisions on a fixture of demonstration states do not change."""
    p, demos = trained
    protocol = {"ask", "user", "tap", "type", "swipe", "long", "press", "complete", "go", "home", "on"}
    ents = entity_words() - set(p.vocab.index) - protocol   # the Step verbs in the history are not entities
    rng = random.Random(7)
    prompts = _contexts(demos, 120)
    changed, renamed_states = 0, 0
    for pr in prompts:
        d = json.loads(pr)
        words = {w.lower() for w in _WORD.findall(pr)} & ents
        if not words:
            continue
        renamed_states += 1
        new = {w: "".join(rng.choice("qxzjvk") for _ in range(3)) + "".join(rng.choice(string.ascii_lowercase)
                                                                            for _ in range(5)) for w in words}

        def sub(s: str) -> str:
            def one(m):
                w = m.group(0)
                r = new.get(w.lower())
                if r is None:
                    return w
                return r.capitalize() if w[0].isupper() else r
            return _WORD.sub(one, s)
        d["g"] = sub(d["g"])
        d["a"] = [[sub(q), sub(a)] for q, a in d["a"]]
        d["h"] = [sub(h) for h in d["h"]]
        d["n"] = [[n[0], sub(n[1]), sub(n[2]), *n[3:]] for n in d["n"]]
        pr2 = json.dumps(d, separators=(",", ":"))
        a, b = p.decide(pr), p.decide(pr2)
        ta = render_step(a, p.state(pr), p.frames)
        tb = render_step(b, p.state(pr2), p.frames)
        if a != b or sub(ta) != tb:
            changed += 1
    assert renamed_states >= 40
    assert changed == 0


def test_kind_weights_balance_rare_decisions():
    from navrl.rl.sft import Demo, kind_weights
    demos = [Demo("p", 'Reasoning: r\nStep: Tap "A"\nRemaining: x')] * 90 + \
            [Demo("p", "Reasoning: r\nStep: Ask user: What is your size?\nRemaining: x")] * 10
    w = kind_weights(demos, 0.5)
    # frequency^-0.5: 0.9^-0.5 = 1.054, 0.1^-0.5 = 3.162; mean over demos normalised to 1
    mean = (90 * 0.9 ** -0.5 + 10 * 0.1 ** -0.5) / 100
    assert w["tap"] == pytest.approx(0.9 ** -0.5 / mean)
    assert w["ask_user"] == pytest.approx(0.1 ** -0.5 / mean)
    assert w["ask_user"] / w["tap"] == pytest.approx(3.0)
    assert sum(w[k] * n for k, n in (("tap", 90), ("ask_user", 10))) / 100 == pytest.approx(1.0)
    assert kind_weights(demos, 0.0) == {}


def test_episode_memory_makes_text_from_the_previous_app_typable(vocab):
    """A fact read in the previous app (PlannerContext.seen) becomes a text candidate: without
    it the Type step that copies it has no decision; with it, it has one that renders back."""
    from dataclasses import replace as dc_replace
    from navrl.agent.policy.pointer.features import decision_for, render_step
    p = PointerPlanner(vocab, SMALL, seed=0)
    ctx = _ctx(NODES, goal="Text Nina Petrova's email address to Olivia Chen.")
    step = 'Type "nina.p@example.org"'
    assert decision_for(step, p.state(p.prompt_text(ctx)), p.frames) is None
    mem = dc_replace(ctx, seen=("Nina Petrova", "Email", "nina.p@example.org", "Back"))
    e = p.state(p.prompt_text(mem))
    d = decision_for(step, e, p.frames)
    assert d is not None and render_step(d, e, p.frames) == step
    # UI words alone ("Email", "Back") are not memory: only texts with an entity or a number
    assert not any(c.text == "Back" and c.src == 1 for c in e.cands)


def test_runner_gives_the_previous_apps_last_screens_as_memory():
    from navrl.rollout.episode import Episode
    from navrl.worlds.phone.task import make_task as mk

    def obs(app, *labels):
        return Observation(tuple(UINode(str(i), "text", lab, (0, 0, 10, 10)) for i, lab in enumerate(labels)),
                           app, (390, 844), "ios")
    ep = Episode(mk("bank_pay_payee", 3), None, 0)
    ep.obs = obs("Contacts", "Nina Petrova", "nina.p@example.org")
    ep.look()
    assert ep.seen_texts() == ()                    # nothing before the first app
    ep.obs = obs(None, "Messages", "Contacts")              # home screen: the app just left
    ep.look()
    assert ep.seen_texts() == ("Nina Petrova", "nina.p@example.org")
    ep.obs = obs("Messages", "New Message")
    ep.look()
    assert ep.seen_texts() == ("Nina Petrova", "nina.p@example.org")
    assert ep.used_apps() == ("Contacts",)
    # a third app: both earlier apps' last screens, the most recent first
    ep.obs = obs("Bank", "Checking")
    ep.look()
    assert ep.seen_texts() == ("New Message", "Nina Petrova", "nina.p@example.org")
    assert ep.used_apps() == ("Contacts", "Messages")


@pytest.mark.parametrize("text,whole,never", [
    ("Confirmation code: B36KAZ. Check in", "B36KAZ", ["B", "B36", "36KAZ", "KAZ"]),
    ("Confirmation code: DKV3N3.", "DKV3N3", ["DKV3N", "DKV", "3N3"]),
    ("Subtotal $33.75   Total $36.74", "36.74", []),
    ("H:62  L:46", "62", ["H:6"]),
])
def test_text_spans_never_cut_through_a_word(text, whole, never):
    """A code is copied whole or not at all: no span starts or ends inside a run of glued
    letters and digits, and a glued run counts as one unit of the span length."""
    from navrl.agent.policy.pointer.text import pieces, span_text, spans
    ps = pieces(text)
    got = {span_text(text, ps, a, b) for a, b in spans(ps, 1)} | {span_text(text, ps, a, b) for a, b in spans(ps, 8)}
    assert whole in got and not (set(never) & got), sorted(got)
    if whole.isalnum():
        assert whole in {span_text(text, ps, a, b) for a, b in spans(ps, 1)}   # one word, one unit


@pytest.mark.parametrize("text,span,want", [
    # (whole run of capitalised words, cuts one, leaves out a zero fraction, a non-zero one)
    ("walk from Computer History Museum to Stanford University?", "Stanford University", [1, 0, 0, 0]),
    ("walk from Computer History Museum to Stanford University?", "University", [0, 1, 0, 0]),
    ("walk from Computer History Museum to Stanford University?", "Computer History", [0, 1, 0, 0]),
    ("walk from Computer History Museum to Stanford University?", "History Museum to Stanford", [0, 1, 0, 0]),
    ("Send $40.00 to Mom", "40", [0, 0, 1, 0]),
    ("Send $40.00 to Mom", "40.00", [0, 0, 0, 0]),
    ("Transfer $19.99 from my checking", "19", [0, 0, 0, 1]),
    ("Transfer $19.99 from my checking", "19.99", [0, 0, 0, 0]),
    ("How much does Sunglasses cost in the Shop app?", "Sunglasses", [1, 0, 0, 0]),
    ("How much does Sunglasses cost in the Shop app?", "Sunglasses cost", [0, 0, 0, 0]),
])
def test_span_boundary_features(text, span, want):
    """The cues for copying a value whole: a span's edges against runs of capitalised words
    and against a number's fraction (entities and digits are otherwise placeholders)."""
    from navrl.agent.policy.pointer.text import boundary_features, pieces, span_text, spans
    ps = pieces(text)
    found = [(a, b) for a, b in spans(ps, 16) if span_text(text, ps, a, b) == span]
    assert len(found) == 1
    assert boundary_features(ps, *found[0]) == [float(w) for w in want]
