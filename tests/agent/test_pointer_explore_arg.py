"""Argument exploration of the pointer planner (Sampling.explore_arg): while sampling, the node /
text-span factor is drawn from (1 - eps) pi + eps uniform(coarse legal choices) — whole texts and
quoted goal spans for text, nodes accepting the kind for nodes — and the recorded log-prob is
that mixture's, so PPO's ratio corrects for it; greedy decoding and scoring are untouched."""
from __future__ import annotations

import functools
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


@functools.lru_cache(maxsize=1)
def _vocabulary():
    return phone_world_vocabulary(n_tasks=40)


def _planner(seed: int = 0):
    torch.manual_seed(seed)
    return PointerPlanner(_vocabulary(), PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64), seed=seed)


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
        _, arg, _, logp, _, _, _, _ = pol._forward([e] * N, torch.full((N,), typ), None, None, 1.0, choose=True)
    pi = pol.score([PROMPT] * N, [[typ, int(a)] for a in arg]).logprobs[:, 1].detach().exp()
    want = (1 - eps) * pi + eps * torch.tensor([float(coarse[int(a)]) for a in arg]) / int(coarse.sum())
    assert torch.allclose(logp[:, 1].exp(), want, rtol=1e-4, atol=1e-7)
    # about eps of the draws land on the coarse choices through the uniform part (plus pi's own share)
    share = sum(bool(coarse[int(a)]) for a in arg) / N
    pi_coarse = float(torch.softmax(_arg_logits(pol, e, typ), -1)[torch.from_numpy(coarse)].sum())
    expect = eps + (1 - eps) * pi_coarse
    assert abs(share - expect) < 4 * math.sqrt(expect * (1 - expect) / N), (share, expect)


def _head_logits(pol, e, head: str, kind: int | None = None):
    """The logits head ``head`` ("kind_logits", "cand_logits") of ``pol`` gives at state ``e``
    (for the argument heads, under ``kind``)."""
    cap = {}
    orig = getattr(pol.model, head)

    def wrap(*a, **k):
        cap["l"] = r = orig(*a, **k)
        return r
    setattr(pol.model, head, wrap)
    try:
        with torch.no_grad():
            given = None if kind is None else (torch.tensor([kind]), torch.tensor([0]), torch.tensor([0]))
            pol._forward([e], *(given or (None, None, None)), 1.0, choose=False)
    finally:
        setattr(pol.model, head, orig)
    return cap["l"][0] if head == "kind_logits" else cap["l"][0][0][:len(e.cand_text)]


def _arg_logits(pol, e, kind):
    return _head_logits(pol, e, "cand_logits", kind)


def test_node_exploration_is_uniform_over_nodes_accepting_the_kind_and_greedy_is_untouched():
    pol = _planner()
    e = pol.state(PROMPT)
    tap = KIND_ID["tap"]
    legal = e.node_accept[:, tap]
    N = 300
    with pol.using(Sampling(temperature=1.0, explore_arg=0.999)):
        _, arg, _, logp, _, _, _, _ = pol._forward([e] * N, torch.full((N,), tap), None, None, 1.0, choose=True)
    assert all(legal[int(a)] for a in arg)
    assert len({int(a) for a in arg}) == int(legal.sum())        # every accepting node is tried
    g1 = pol.decide(PROMPT)
    with pol.using(Sampling(greedy=True, explore_arg=0.9)):
        g2 = pol.decide(PROMPT)
    assert g1 == g2


def test_exploration_by_source_gives_each_source_an_equal_share_spread_by_the_policy_within_it():
    pol = _planner()
    e = pol.state(PROMPT)
    typ = KIND_ID["type"]
    N, eps = 600, 0.6
    with pol.using(Sampling(temperature=1.0, explore_arg=eps, explore_arg_by_source=True)):
        _, arg, _, logp, _, _, _, _ = pol._forward([e] * N, torch.full((N,), typ), None, None, 1.0, choose=True)
    pi = torch.softmax(_arg_logits(pol, e, typ), -1)
    usable = torch.from_numpy(e.cand_use[:, 0]) & (pi > 0)
    src = torch.from_numpy(e.cand_src)
    present = sorted({int(s) for s in src[usable]})
    assert {0, 1} <= set(present)                      # the goal's spans and the memory's texts
    # the loop version of the mixture, candidate by candidate
    want = torch.zeros_like(pi)
    for c in range(len(pi)):
        if usable[c]:
            inside = usable & (src == src[c])
            want[c] = (1 - eps) * pi[c] + eps / len(present) * pi[c] / pi[inside].sum()
    assert abs(float(want.sum()) - 1.0) < 1e-4
    assert torch.allclose(logp[:, 1].exp(), want[arg], rtol=1e-4, atol=1e-7)
    # each source is drawn about eps / |sources| of the time plus the policy's own share of it
    for s in present:
        share = sum(int(src[int(a)]) == s for a in arg) / N
        expect = eps / len(present) + (1 - eps) * float(pi[usable & (src == s)].sum())
        assert abs(share - expect) < 4 * math.sqrt(expect * (1 - expect) / N) + 1e-3, (s, share, expect)
    # greedy decoding is untouched
    with pol.using(Sampling(greedy=True, explore_arg=0.9, explore_arg_by_source=True)):
        assert pol.decide(PROMPT) == _planner().decide(PROMPT)


def _kind_probs(pol, e):
    return torch.softmax(_head_logits(pol, e, "kind_logits"), -1)


def test_exploration_from_a_prior_mixes_its_distribution_into_every_factor_and_records_the_mixture():
    pol, prior = _planner(), _planner(seed=7)
    e = pol.state(PROMPT)
    pi, pj = _kind_probs(pol, e), _kind_probs(prior, e)
    assert float((pi - pj).abs().max()) > 0.05                  # two different planners
    pol.prior = prior
    N, r = 500, 0.6
    with pol.using(Sampling(temperature=1.0, explore_prior=r)):
        kind, arg, _, logp, _, _, _, _ = pol._forward([e] * N, None, None, None, 1.0, choose=True)
    want = (1 - r) * pi + r * pj
    assert torch.allclose(logp[:, 0].exp(), want[kind], rtol=1e-4, atol=1e-7)
    for k in set(kind.tolist()):                                   # the draws follow the mixture
        share = float((kind == k).float().mean())
        assert abs(share - float(want[k])) < 4 * math.sqrt(float(want[k]) * (1 - float(want[k])) / N) + 1e-3
    # the argument factor too: with the prior's whole weight on a tap, the nodes follow the prior's pointer
    tap = KIND_ID["tap"]
    with pol.using(Sampling(temperature=1.0, explore_prior=0.999)):
        _, a1, _, lp1, _, _, _, _ = pol._forward([e] * N, torch.full((N,), tap), None, None, 1.0, choose=True)
    with prior.using(Sampling(temperature=1.0)):
        _, _, _, lp2, _, _, _, _ = prior._forward([e] * N, torch.full((N,), tap), a1, None, 1.0, choose=False)
    assert torch.allclose(lp1[:, 1].exp(), lp2[:, 1].exp(), atol=2e-3)
    # no prior set: the policy's own distribution is recorded; greedy decoding is untouched
    pol.prior = None
    with pol.using(Sampling(temperature=1.0, explore_prior=0.5)):
        k3, _, _, lp3, _, _, _, _ = pol._forward([e] * 50, None, None, None, 1.0, choose=True)
    assert torch.allclose(lp3[:, 0].exp(), pi[k3], rtol=1e-4, atol=1e-7)
    pol.prior = prior
    with pol.using(Sampling(greedy=True, explore_prior=0.9)):
        assert pol.decide(PROMPT) == _planner().decide(PROMPT)
