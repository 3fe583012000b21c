"""The pointer planner's cache of encoded states: bounded by bytes, and one cache for a planner and
its frozen reference copy (a KL reference or exploration prior), with weights of their own."""
from __future__ import annotations

import torch

from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
from navrl.agent.policy.pointer import planner as P
from navrl.rl.sft import TemplateTeacher, collect_demonstrations


def _planner() -> PointerPlanner:
    return PointerPlanner(phone_world_vocabulary(n_tasks=20), PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64),
                          seed=0)


def _demos(pol: PointerPlanner, n: int = 12):
    return collect_demonstrations(pol, n, TemplateTeacher(compact=True), seed=0)


def test_the_reference_copy_shares_the_encodings_not_the_weights():
    pol = _planner()
    pairs = [(d.prompt, pol.encode_demo(d.prompt, d.target)) for d in _demos(pol)]
    prompts, outs = [p for p, o in pairs if o is not None], [o for _, o in pairs if o is not None]
    assert len(prompts) >= 20
    ref = pol.reference_copy()
    assert ref._cache is pol._cache and ref.vocab is pol.vocab and ref._demo_ids is pol._demo_ids
    assert ref.model is not pol.model and ref.frames is not pol.frames
    before = pol.score(prompts, outs).logprobs.detach()
    n_cached = len(pol._cache)
    assert torch.equal(ref.score(prompts, outs).logprobs.detach(), before)
    assert len(pol._cache) == n_cached            # the copy read the planner's encodings: nothing new
    assert ref.state(prompts[0]) is pol.state(prompts[0])
    # training the planner leaves the copy where it started
    opt = torch.optim.Adam(pol.policy_parameters(), lr=1e-2)
    loss = -pol.score(prompts, outs).logprobs.sum()
    opt.zero_grad(), loss.backward(), opt.step()
    assert not torch.allclose(pol.score(prompts, outs).logprobs.detach(), before)
    assert torch.equal(ref.score(prompts, outs).logprobs.detach(), before)


def test_the_state_cache_stays_within_its_byte_budget(monkeypatch):
    pol = _planner()
    prompts = [d.prompt for d in _demos(pol, 30)]
    sizes = [pol.state(p).weight() for p in dict.fromkeys(prompts)]
    assert min(sizes) > 1000                      # a state's arrays and texts: kilobytes
    budget = 3 * max(sizes)
    pol._cache = type(pol._cache)(50_000, touch=True, weigh=P.Encoded.weight, max_weight=budget)
    for p in prompts:
        pol.state(p)
        assert pol._cache.weight <= budget
    assert 3 <= len(pol._cache) < len(set(prompts))
    assert pol._cache.weight == sum(e.weight() for e in pol._cache._d.values())
    # the default planner's cache is bounded by STATE_CACHE_BYTES
    assert _planner()._cache.max_weight == P.STATE_CACHE_BYTES
