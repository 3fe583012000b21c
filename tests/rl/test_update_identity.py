"""The policy update builds each minibatch's inputs once per update and scores identical
(prompt, output) pairs once: it must be the same update as the plain one (every sample of
every minibatch scored on its own, as the trainer did before), to float precision, with the
same draws from the trainer's RNG (minibatch order, PPO-ptx demonstrations, augmentation)."""
from __future__ import annotations

import copy
from collections import Counter

import pytest
import torch

from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
from navrl.rl.batch import Batch, length_chunks, minibatches
from navrl.rl.losses import ppo_policy_loss
from navrl.rl.presets import get_preset
from navrl.rl.sft import SFTConfig, TemplateTeacher, collect_demonstrations, train_sft
from navrl.rl.trainer import Trainer


def _reference_update(tr: Trainer, batch: Batch, advantages: torch.Tensor) -> dict:
    """The plain update: per minibatch, score every kept sample (duplicates too) and rebuild
    its old log-probs and advantages (the trainer's update as of f0ad593)."""
    cfg, pol = tr.cfg, tr.policy
    S = batch.samples
    agg: Counter = Counter()
    n = n_pg = 0
    skip_zero = tr.skip_zero_advantages and cfg.policy.kl_coef == 0 and cfg.policy.entropy_coef == 0
    for prm in pol.policy_parameters():
        if prm.grad is None:
            prm.grad = torch.zeros_like(prm)
    T = cfg.exploration.rollout_temperature
    for _ in range(cfg.policy.ppo_epochs):
        chunks = length_chunks(S, cfg.policy.minibatch_size)
        tr.rng.shuffle(chunks)
        for chunk in chunks:
            scale = 1.0
            if skip_zero:
                kept = [s for s in chunk if float(advantages[s.b, s.t]) != 0.0]
                scale = sum(len(s.output_ids) for s in kept) / max(1, sum(len(s.output_ids) for s in chunk))
                chunk = kept
            loss, stats = torch.zeros(()), {}
            if chunk:
                sb = pol.score([s.prompt for s in chunk], [s.output_ids for s in chunk], temperature=T)
                L = sb.logprobs.shape[1]
                old = torch.zeros(len(chunk), L)
                for i, s in enumerate(chunk):
                    old[i, :len(s.old_logprobs)] = torch.tensor(s.old_logprobs[:L])
                a = torch.stack([advantages[s.b, s.t] for s in chunk])
                ref = None
                if tr.ref_policy is not None:
                    with torch.no_grad():
                        ref = tr.ref_policy.score([s.prompt for s in chunk], [s.output_ids for s in chunk],
                                                  temperature=T).logprobs
                out = ppo_policy_loss(sb.logprobs, old, a, sb.mask, cfg.policy.clip_eps, ref_logp=ref,
                                      kl_coef=cfg.policy.kl_coef, entropy=sb.entropy,
                                      entropy_coef=cfg.policy.entropy_coef)
                loss, stats = out.loss * scale, {k: float(v) for k, v in out.stats().items()}
            for k, v in stats.items():
                agg[k] += v
            n_pg += bool(stats)
            n += 1
            if cfg.policy.sft_coef > 0:      # (unchanged: the trainer's own PPO-ptx term)
                sft = tr._ptx_loss()
                loss = loss + cfg.policy.sft_coef * sft
                agg["policy/sft_loss"] += float(sft.detach())
            tr.opt_policy.zero_grad(set_to_none=False)
            if loss.requires_grad:
                loss.backward()
            if cfg.policy.grad_clip:
                torch.nn.utils.clip_grad_norm_(pol.policy_parameters(), cfg.policy.grad_clip)
            tr.opt_policy.step()
    return {k: v / (n if k == "policy/sft_loss" else max(1, n_pg)) for k, v in agg.items()}


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    pol = PointerPlanner(phone_world_vocabulary(n_tasks=40), PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64))
    demos = collect_demonstrations(pol, 24, TemplateTeacher(compact=True), seed=0)
    train_sft(pol, demos, SFTConfig(n_tasks=24, epochs=2, lr=5e-3, batch_size=32))
    return pol, demos


def _diff(a, b) -> float:
    return max(float((x - y).detach().abs().max()) for x, y in zip(a.policy_parameters(), b.policy_parameters()))


@pytest.mark.parametrize("terms", ["ptx", "kl_entropy"])
def test_update_equals_the_plain_update(setup, tmp_path, terms):
    pol, demos = setup
    extra = {"policy.sft_coef": 1.0, "policy.sft_augment": 0.5} if terms == "ptx" else \
        {"policy.kl_coef": 0.1, "policy.entropy_coef": 0.01}
    cfg = get_preset("demo").train.override({
        "rollout.tasks_per_update": 4, "rollout.rollouts_per_task": 4, "rollout.max_steps": 8,
        "policy.minibatch_size": 16, "policy.sft_batch_size": 8, "policy.ppo_epochs": 2, "run.torch_threads": 1,
        "policy.grad_clip": None, "policy.sft_coef": 0.0, "policy.sft_augment": 0.0, **extra})
    runs = []
    for name in ("plain", "new"):
        p = copy.deepcopy(pol)
        tr = Trainer(p, cfg, tmp_path / name, log=False, sft_demos=demos if cfg.policy.sft_coef else None)
        # SGD: parameters move linearly in the gradients (AdamW would blow float noise on
        # softmax-invariant head biases, whose true gradient is 0, up to lr-sized steps)
        tr.opt_policy = torch.optim.SGD(p.policy_parameters(), lr=0.1)
        runs.append(tr)
    trajs, _ = runs[0].collect()
    batch = Batch.from_trajectories(trajs)
    # siblings that reach the same state and choose the same output: scored once by the new path
    mbs = minibatches(batch.samples, torch.ones(batch.step_mask.shape), cfg.policy.minibatch_size, False)
    assert sum(len(m.rows) - len(m.prompts) for m in mbs) > 0
    g = torch.Generator().manual_seed(1)
    for tr in runs:
        tr.rng.seed(5)        # the same draws from here on (collect() used the first one's)
    for _ in range(2):        # two updates in a row on the same rollouts, fresh advantages each
        adv = torch.randn(batch.step_mask.shape, generator=g) * batch.step_mask
        adv[torch.rand(adv.shape, generator=g) < 0.4] = 0.0       # GiGPO batches: 20-45% exactly 0
        ref_stats = _reference_update(runs[0], batch, adv)
        new_stats = runs[1]._update_policy(batch, adv)
        assert runs[0].rng.getstate() == runs[1].rng.getstate()      # the same RNG consumption
        assert new_stats.keys() == ref_stats.keys()
        for k, v in ref_stats.items():
            assert new_stats[k] == pytest.approx(v, rel=1e-4, abs=1e-6), k
    moved = _diff(runs[1].policy, pol)
    diff = _diff(runs[0].policy, runs[1].policy)
    assert moved > 1e-3 and diff < 1e-5, (moved, diff)


def test_minibatches_keep_every_sample_and_its_inputs(setup, tmp_path):
    pol, _ = setup
    cfg = get_preset("demo").train.override({"rollout.tasks_per_update": 2, "rollout.rollouts_per_task": 4,
                                             "rollout.max_steps": 6, "run.torch_threads": 1, "policy.sft_coef": 0.0})
    tr = Trainer(copy.deepcopy(pol), cfg, tmp_path, log=False)
    batch = Batch.from_trajectories(tr.collect()[0])
    adv = torch.arange(1.0, 1.0 + batch.step_mask.numel()).view(batch.step_mask.shape)
    adv[:, ::2] = 0.0
    mbs = minibatches(batch.samples, adv, 5, skip_zero=True)
    chunks = length_chunks(batch.samples, 5)
    assert [m.size for m in mbs] == [len(c) for c in chunks]
    for m, c in zip(mbs, chunks):
        kept = [s for s in c if s.t % 2 == 1]
        assert m.advantages.tolist() == [float(adv[s.b, s.t]) for s in kept]
        assert [(m.prompts[r], m.outputs[r]) for r in m.rows.tolist()] == [(s.prompt, s.output_ids) for s in kept]
        assert len(set(zip(m.prompts, map(tuple, m.outputs)))) == len(m.prompts)      # each pair once
        for i, s in enumerate(kept):
            w = len(s.old_logprobs)
            assert m.old_logprobs[i, :w].tolist() == pytest.approx(s.old_logprobs, abs=0)
            assert not m.old_logprobs[i, w:].any()
        tokens = sum(len(s.output_ids) for s in c)
        assert m.scale == sum(len(s.output_ids) for s in kept) / tokens
        assert m.old_width(1).shape[1] == 1 and m.old_width(7).shape[1] == 7 and not m.old_width(7)[:, 3:].any()


def test_critic_states_encode_each_prompt_once_and_equal_one_by_one_scoring(setup, tmp_path):
    pol, _ = setup
    cfg = get_preset("demo").train.override({"advantage.estimator": "ppo", "rollout.tasks_per_update": 2,
                                             "rollout.rollouts_per_task": 4, "rollout.max_steps": 6,
                                             "run.torch_threads": 1, "policy.sft_coef": 0.0,
                                             "policy.minibatch_size": 7})
    tr = Trainer(copy.deepcopy(pol), cfg, tmp_path, log=False)
    batch = Batch.from_trajectories(tr.collect()[0])
    S = batch.samples
    assert len({s.prompt for s in S}) < len(S)         # siblings share prompts: encoded once
    calls = []
    score = tr.policy.score
    tr.policy.score = lambda p, o, **kw: calls.append(len(p)) or score(p, o, **kw)
    states = tr._states(batch)
    assert sum(calls) == len({s.prompt for s in S})
    expected = torch.zeros_like(states)
    with torch.no_grad():
        for s in S:
            expected[s.b, s.t] = score([s.prompt], [s.output_ids]).state[0]
    assert torch.allclose(states, expected, atol=1e-5)
    assert states.abs().sum() > 0


def _small_trainer(setup, tmp_path):
    pol, demos = setup
    cfg = get_preset("demo").train.override({"rollout.tasks_per_update": 2, "rollout.rollouts_per_task": 4,
                                             "rollout.max_steps": 6, "policy.minibatch_size": 8,
                                             "policy.sft_batch_size": 8, "policy.ppo_epochs": 2,
                                             "run.torch_threads": 1})
    tr = Trainer(copy.deepcopy(pol), cfg, tmp_path, log=False, sft_demos=demos)
    batch = Batch.from_trajectories(tr.collect()[0])
    return tr, batch, torch.ones(batch.step_mask.shape) * batch.step_mask


def test_an_optimiser_step_that_fails_fails_the_update(setup, tmp_path):
    """The backward passes and optimiser steps run on a helper thread: an error there is the update's."""
    tr, batch, adv = _small_trainer(setup, tmp_path)
    step, calls = tr.opt_policy.step, []

    def failing(*a, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("step failed")
        return step(*a, **kw)
    tr.opt_policy.step = failing
    with pytest.raises(RuntimeError, match="step failed"):
        tr._update_policy(batch, adv)
    assert len(calls) == 2


def test_an_interrupted_update_leaves_no_step_running(setup, tmp_path):
    """Ctrl-C while the next minibatch's demonstrations are drawn: the step in flight ends
    before the interrupt leaves the update, and no later step starts."""
    import threading
    import time
    tr, batch, adv = _small_trainer(setup, tmp_path)
    step, log = tr.opt_policy.step, []

    def slow(*a, **kw):
        log.append(("start", threading.get_ident()))
        time.sleep(0.2)
        out = step(*a, **kw)
        log.append(("end", threading.get_ident()))
        return out
    tr.opt_policy.step = slow
    draws, n = tr._ptx_demos, []

    def interrupted():
        n.append(1)
        if len(n) == 3:
            raise KeyboardInterrupt
        return draws()
    tr._ptx_demos = interrupted
    with pytest.raises(KeyboardInterrupt):
        tr._update_policy(batch, adv)
    done = list(log)
    time.sleep(0.3)
    assert log == done and [k for k, _ in done] == ["start", "end", "start", "end"]
    assert all(t != threading.get_ident() for _, t in done)      # (the steps ran on the helper thread)
