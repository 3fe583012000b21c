"""Argument exploration of the pointer planner (Sampling.explore_arg): while sampling, the node /
text-span factor is drawn from (1 - eps) pi + eps uniform(coarse legal choices) — whole texts and
quoted goal spans for text, nodes accepting the kind for nodes — and the recorded log-prob is
that mixture's, so PPO's ratio corrects for it; greedy decoding and scoring are untouched."""
from __future__ import annotations

import json
import math

import torch

from navrl.agent.policy.base import Sampling
from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
from navrl.agent.policy.pointer.features import KIND_ID

PROMPT = json.dumps({
    "g": "Send the text of my note \"Groceries\" to Leo Brandt in Messages.", "a": [],
    "h": ["Go home", "Tap \"Messages\"", "Tap \"Leo Brandt\"", "Tap \"Message\""], "app": "Messages", "t": 6,
    "n": [["button", "Back", "", 1, 0, "t", [0, 0, .1, .05]], ["text", "Leo Brandt", "", 1, 0, "t", [0, .1, 1, .15]],
          ["textfield", "Message", "", 1, 1, "t", [0, .8, .8, .85]], ["button", "Send", "", 1, 0, "t", [.8, .8, 1, .85]]],
    "m": ["Back", "Groceries", "Milk, eggs, spinach, rice and coffee beans", "Pin", "Delete Note"]},
    separators=(",", ":"))


def _planner():
    torch.manual_seed(0)
    return PointerPlanner(phone_world_vocabulary(n_tasks=40), PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64),
                          seed=0)


def test_text_exploration_mixes_in_the_whole_texts_and_records_the_mixture():
    pol = _planner()
    e = pol.state(PROMPT)
    typ = KIND_ID["type"]
    usable = e.cand_use[:, 0]
    coarse = usable & ((e.cand_feats[:, 5] > 0.5) | (e.cand_feats[:, 6] > 0.5))
    whole_texts = {t for t, c in zip(e.cand_text, coarse) if c}
    assert "Milk, eggs, spinach, rice and coffee beans" in whole_texts and "Groceries" in whole_texts
    assert coarse.sum() < usable.sum() / 4          # a few whole texts among many sub-spans
    N, eps = 400, 0.5
    with pol.using(Sampling(temperature=1.0, explore_arg=eps)):
        _, arg, _, logp, _, _, _ = pol._forward([e] * N, torch.full((N,), typ), None, None, 1.0, choose=True)
    pi = pol.score([PROMPT] * N, [[typ, int(a)] for a in arg]).logprobs[:, 1].detach().exp()
    want = (1 - eps) * pi + eps * torch.tensor([float(coarse[int(a)]) for a in arg]) / int(coarse.sum())
    assert torch.allclose(logp[:, 1].exp(), want, rtol=1e-4, atol=1e-7)
    # about eps of the draws land on the coarse choices through the uniform part (plus pi's own share)
    share = sum(bool(coarse[int(a)]) for a in arg) / N
    pi_coarse = float(torch.softmax(_arg_logits(pol, e, typ), -1)[torch.from_numpy(coarse)].sum())
    expect = eps + (1 - eps) * pi_coarse
    assert abs(share - expect) < 4 * math.sqrt(expect * (1 - expect) / N), (share, expect)


def _arg_logits(pol, e, kind):
    cap = {}
    orig = pol.model.cand_logits

    def wrap(*a, **k):
        cap["l"] = r = orig(*a, **k)
        return r
    pol.model.cand_logits = wrap
    try:
        with torch.no_grad():
            pol._forward([e], torch.tensor([kind]), torch.tensor([0]), torch.tensor([0]), 1.0, choose=False)
    finally:
        pol.model.cand_logits = orig
    return cap["l"][0][0][:len(e.cand_text)]


def test_node_exploration_is_uniform_over_nodes_accepting_the_kind_and_greedy_is_untouched():
    pol = _planner()
    e = pol.state(PROMPT)
    tap = KIND_ID["tap"]
    legal = e.node_accept[:, tap]
    N = 300
    with pol.using(Sampling(temperature=1.0, explore_arg=0.999)):
        _, arg, _, logp, _, _, _ = pol._forward([e] * N, torch.full((N,), tap), None, None, 1.0, choose=True)
    assert all(legal[int(a)] for a in arg)
    assert len({int(a) for a in arg}) == int(legal.sum())        # every accepting node is tried
    g1 = pol.decide(PROMPT)
    with pol.using(Sampling(greedy=True, explore_arg=0.9)):
        g2 = pol.decide(PROMPT)
    assert g1 == g2
