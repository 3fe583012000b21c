"""The tiny planner: lossless tokenizer with label tokens, cached generation that agrees
with re-scoring, the fast and the full log-prob paths agree, the value reads the prompt only."""
from __future__ import annotations

import pytest
import torch

from navrl.agent.planner import PlannerContext
from navrl.agent.policy.tiny import TinyConfig, TinyPlanner
from navrl.agent.policy.tokenizer import corpus_and_labels, train_tokenizer
from navrl.worlds.phone.suites import suite_tasks

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def policy() -> TinyPlanner:
    texts, labels = corpus_and_labels(16, 0)
    tok = train_tokenizer(texts, vocab_size=512, labels=labels)
    return TinyPlanner(tok, TinyConfig(d_model=32, n_layers=2, n_heads=2, d_ff=64, max_new_tokens=20), seed=3)


@pytest.fixture(scope="module")
def contexts() -> list[PlannerContext]:
    return [PlannerContext(t, t.make_device().observe()) for t in suite_tasks("train", 6)]


def test_tokenizer_is_lossless_and_labels_are_single_tokens(policy) -> None:
    tok = policy.tokenizer
    for s in ['Step: Tap "Add to Bag"', 'Type "$(rm -rf /); DROP TABLE x; -- ñ €"', "Search products", "Zebra-Q9 ?!"]:
        assert tok.decode(tok.encode(s).ids) == s
    assert len(tok.encode("Search products").ids) == 1


def test_rollout_logprobs_equal_rescoring(policy, contexts) -> None:
    policy.sample = True
    outs = policy.plan(contexts)
    for full in (False, True):
        policy.entropy_in_score = full
        sb = policy.score([o.prompt for o in outs], [o.token_ids for o in outs])
        for i, o in enumerate(outs):
            assert len(o.logprobs) == len(o.token_ids) == int(sb.mask[i].sum())
            assert torch.allclose(sb.logprobs[i, :len(o.logprobs)], torch.tensor(o.logprobs), atol=1e-4)
    policy.entropy_in_score = False
    # at a rollout temperature the recorded log-probs are the tempered policy's, and the
    # update's score(..., temperature=T) recomputes exactly them (ratio 1 before any step)
    policy.temperature = 0.6
    outs = policy.plan(contexts)
    sb = policy.score([o.prompt for o in outs], [o.token_ids for o in outs], temperature=0.6)
    plain = policy.score([o.prompt for o in outs], [o.token_ids for o in outs])
    rec = torch.cat([torch.tensor(o.logprobs) for o in outs])
    assert torch.allclose(torch.cat([sb.logprobs[i, :len(o.logprobs)] for i, o in enumerate(outs)]), rec, atol=1e-4)
    assert not torch.allclose(torch.cat([plain.logprobs[i, :len(o.logprobs)] for i, o in enumerate(outs)]), rec,
                              atol=1e-3)
    policy.temperature = 1.0
    # greedy decoding is deterministic; sampling follows the policy's own generator
    policy.sample = False
    a, b = policy.plan(contexts), policy.plan(contexts)
    assert [x.text for x in a] == [x.text for x in b]


def test_tempered_fast_path_equals_the_full_mixture(policy, contexts) -> None:
    # the update's fast tempered path (a logsumexp over the vocabulary plus the ids present)
    # must give the same log softmax(log p / T) as building the [N,L,V] mixture
    policy.sample = True
    outs = policy.plan(contexts)
    policy.sample = False
    P, O = [o.prompt for o in outs], [o.token_ids for o in outs]
    for T in (0.3, 0.6, 1.7):
        policy.entropy_in_score = True
        full = policy.score(P, O, temperature=T)
        policy.entropy_in_score = False
        fast = policy.score(P, O, temperature=T)
        assert torch.allclose(fast.logprobs, full.logprobs, atol=1e-4), T
        assert torch.equal(fast.mask, full.mask)
    # and gradients flow through it
    fast.logprobs.sum().backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in policy.model.parameters())
    policy.model.zero_grad()


def test_state_depends_on_the_prompt_only(policy, contexts) -> None:
    outs = policy.plan(contexts[:2])
    p = [outs[0].prompt, outs[0].prompt]
    sb = policy.score(p, [outs[0].token_ids, outs[1].token_ids])
    assert torch.allclose(sb.state[0], sb.state[1], atol=1e-5)


def test_long_prompts_are_cut_from_the_left(policy) -> None:
    ids = policy.encode_prompt("word " * 5000)
    assert len(ids) == policy.config.max_len - policy.config.max_new_tokens
    assert ids[-1] == policy.sep


def test_save_and_load_round_trip(policy, contexts) -> None:
    policy.sample = False
    st = policy.state_dict_all()
    q = TinyPlanner.from_state(st)
    q.sample = False
    assert [o.text for o in q.plan(contexts)] == [o.text for o in policy.plan(contexts)]
