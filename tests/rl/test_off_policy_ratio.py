"""``policy.off_policy_ratio``: what PPO's ratio is taken against when rollouts explore
(behaviour mixture mu, or the planner's own pi_old with decoupled PPO's importance weight)."""
from __future__ import annotations

import math

import pytest
import torch

from navrl.rl.batch import Sample, minibatches
from navrl.rl.config import ConfigError
from navrl.rl.diagnostics import behaviour_gap
from navrl.rl.losses import LossInputs, ppo_clip, sample_stats
from navrl.rl.presets import get_preset


def test_ppo_clip_weights_each_token_by_its_importance_weight_by_hand():
    # ratios 1.5 (A>0, clipped at 1.2) weight 0.5; 0.5 (A>0) weight 2; 1.5 (A<0) weight 1; padding
    r = torch.tensor([[1.5, 0.5, 1.5, 3.0]])
    logp = torch.log(r).requires_grad_(True)
    x = LossInputs(logp=logp, old_logp=torch.zeros(1, 4), advantages=torch.tensor([[2.0, 2.0, -1.0, 9.0]]),
                   mask=torch.tensor([[True, True, True, False]]), is_weight=torch.tensor([[0.5, 2.0, 1.0, 7.0]]),
                   clip_eps=0.2)
    v = ppo_clip(x)
    assert v.item() == pytest.approx((-0.5 * 2.0 * 1.2 - 2.0 * 2.0 * 0.5 + 1.0 * 1.0 * 1.5) / 3, abs=1e-6)
    v.backward()
    assert torch.allclose(logp.grad, torch.tensor([[0.0, -2.0 * 2.0 * 0.5, 1.0 * 1.5, 0.0]]) / 3, atol=1e-6)
    # weights of 1 are the unweighted loss
    ones = LossInputs(logp=logp.detach(), old_logp=torch.zeros(1, 4), advantages=x.advantages, mask=x.mask,
                      is_weight=torch.ones(1, 4))
    assert ppo_clip(ones).item() == pytest.approx(ppo_clip(LossInputs(**{**ones.__dict__, "is_weight": None})).item())


def _favourite_and_explored(eps: float = 0.3, n: int = 10):
    """One token the planner favours (pi 0.9) and one exploration picked (pi 0.001), both with a
    positive advantage, sampled from mu = (1 - eps) pi + eps / n, at the start of the update (the
    planner still pi_old)."""
    pi = torch.tensor([[0.9, 0.001]])
    mu = (1 - eps) * pi + eps / n
    return torch.log(pi), torch.log(mu)


def test_against_the_behaviour_the_favourite_choice_starts_clipped_and_the_explored_one_near_zero():
    """The diagnosis behind ``off_policy_ratio``: r = pi / mu starts at 0.9 / 0.66 = 1.36 for the
    favourite choice (clipped: a positive advantage moves nothing) and 0.03 for the explored one
    (its gradient scaled by 0.03)."""
    lp, lmu = _favourite_and_explored()
    logp = lp.clone().requires_grad_(True)
    x = LossInputs(logp=logp, old_logp=lmu, advantages=torch.tensor([1.0]), mask=torch.ones(1, 2, dtype=torch.bool))
    ppo_clip(x).backward()
    r = (lp - lmu).exp()[0]
    assert r[0] == pytest.approx(0.9 / 0.66, rel=1e-5) and r[0] > 1.2
    assert logp.grad[0, 0] == 0.0                                   # clipped from the start
    assert logp.grad[0, 1] == pytest.approx(-r[1].item() / 2, rel=1e-5) and r[1] < 0.05
    st = sample_stats(x)
    assert st["policy/clip_fraction"] == 0.5 and st["policy/approx_kl"] > 0.01    # off before any step


@pytest.mark.parametrize("mode", ["decoupled", "proximal"])
def test_against_the_planner_both_choices_start_inside_the_trust_region(mode):
    lp, lmu = _favourite_and_explored()
    logp = lp.clone().requires_grad_(True)
    w = (lp - lmu).exp().clamp(max=1.0) if mode == "decoupled" else None
    x = LossInputs(logp=logp, old_logp=lp, is_weight=w, advantages=torch.tensor([1.0]),
                   mask=torch.ones(1, 2, dtype=torch.bool))
    ppo_clip(x).backward()
    st = sample_stats(x)
    assert st["policy/clip_fraction"] == 0.0 and st["policy/approx_kl"] == 0.0 and st["policy/ratio_mean"] == 1.0
    want = [-1.0 / 2, -1.0 / 2] if mode == "proximal" else [-1.0 / 2, -(0.001 / 0.0307) / 2]
    assert logp.grad[0].tolist() == pytest.approx(want, rel=1e-4)    # the favourite choice learns


def _samples() -> list[Sample]:
    mixed = Sample(0, 0, "p0", [1, 2], [math.log(0.66), math.log(0.0307)], [math.log(0.9), math.log(0.001)])
    plain = Sample(0, 1, "p1", [3, 4, 5], [-0.1, -0.2, -0.3])          # nothing mixed: no planner log-probs
    return [mixed, plain]


@pytest.mark.parametrize("mode", ["behaviour", "decoupled", "proximal"])
def test_minibatches_take_the_ratio_against_what_the_mode_says(mode):
    adv = torch.ones(1, 2)
    mb, = minibatches(_samples(), adv, 8, False, mode, cap=1.0)
    by_prompt = {mb.prompts[r]: i for i, r in enumerate(mb.rows.tolist())}
    m, p = by_prompt["p0"], by_prompt["p1"]
    want_mixed = [math.log(0.66), math.log(0.0307)] if mode == "behaviour" else [math.log(0.9), math.log(0.001)]
    assert mb.old_logprobs[m, :2].tolist() == pytest.approx(want_mixed, abs=1e-6)
    assert mb.old_logprobs[p].tolist() == pytest.approx([-0.1, -0.2, -0.3], abs=1e-6)   # the plain sample as it was
    if mode != "decoupled":
        assert mb.is_weight is None and mb.weight_width(5) is None
        return
    # min(1, pi_old / mu): 0.9 / 0.66 capped at 1, 0.001 / 0.0307; ones elsewhere
    assert mb.is_weight[m, :2].tolist() == pytest.approx([1.0, 0.001 / 0.0307], rel=1e-5)
    assert mb.is_weight[m, 2:].tolist() == [1.0] and mb.is_weight[p].tolist() == [1.0, 1.0, 1.0]
    assert mb.weight_width(5).shape == (2, 5) and mb.weight_width(5)[:, 3:].eq(1).all()
    capped, = minibatches(_samples(), adv, 8, False, mode, cap=1.2)
    assert capped.is_weight[m, 0].item() == pytest.approx(1.2)


def test_without_exploration_every_mode_is_the_same_minibatch():
    plain = [Sample(0, 0, "p", [1], [-0.5]), Sample(0, 1, "q", [2, 3], [-0.1, -0.2])]
    got = [minibatches(plain, torch.ones(1, 2), 8, False, mode) for mode in ("behaviour", "decoupled", "proximal")]
    for mbs in got[1:]:
        assert torch.equal(mbs[0].old_logprobs, got[0][0].old_logprobs) and mbs[0].is_weight is None


def test_the_config_names_its_modes_and_a_positive_cap():
    assert get_preset("demo").train.policy.off_policy_ratio == "decoupled"
    with pytest.raises(ConfigError, match="off_policy_ratio"):
        get_preset("demo").train.override({"policy.off_policy_ratio": "mixture"}).validate()
    with pytest.raises(ConfigError, match="is_weight_cap"):
        get_preset("demo").train.override({"policy.is_weight_cap": 0.0}).validate()


@pytest.fixture(scope="module")
def small_planner():
    from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
    from navrl.rl.sft import SFTConfig, TemplateTeacher, collect_demonstrations, train_sft
    torch.manual_seed(0)
    pol = PointerPlanner(phone_world_vocabulary(n_tasks=40), PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64))
    train_sft(pol, collect_demonstrations(pol, 24, TemplateTeacher(compact=True), seed=0),
              SFTConfig(n_tasks=24, epochs=2, lr=5e-3, batch_size=32))
    return pol


@pytest.mark.parametrize("mode", ["behaviour", "proximal"])
def test_a_trainer_update_on_exploring_rollouts_starts_at_ratio_one_only_against_the_planner(small_planner, tmp_path,
                                                                                             mode):
    """One optimiser step over the whole batch: its ratio is measured before the step moves the
    planner, so against the planner (``proximal``) it is exactly 1; against the behaviour it is not."""
    import copy
    from navrl.rl.batch import Batch
    from navrl.rl.trainer import Trainer
    cfg = get_preset("demo").train.override({
        "rollout.tasks_per_update": 3, "rollout.rollouts_per_task": 4, "rollout.max_steps": 6,
        "policy.minibatch_size": 4096, "policy.ppo_epochs": 1, "run.torch_threads": 1, "policy.sft_coef": 0.0,
        "exploration.explore": 0.2, "exploration.explore_arg": 0.3, "exploration.rollout_temperature": 1.0,
        "policy.off_policy_ratio": mode})
    tr = Trainer(copy.deepcopy(small_planner), cfg, tmp_path, log=False)
    trajs = tr.collect()[0]
    batch = Batch.from_trajectories(trajs)
    assert batch.samples and all(s.policy_logprobs is not None for s in batch.samples)
    st = tr._update_policy(batch, torch.ones(batch.step_mask.shape) * batch.step_mask)
    if mode == "proximal":
        assert st["policy/approx_kl"] == pytest.approx(0.0, abs=1e-6) and st["policy/clip_fraction"] == 0.0
    else:
        assert st["policy/approx_kl"] > 1e-3 and st["policy/clip_fraction"] > 0.0
    # the update's diagnostics say how far the behaviour was from the planner, whatever the mode
    gap = tr._diagnostics(trajs, batch, torch.zeros(batch.step_mask.shape), batch.step_mask)["behaviour_gap"]
    assert 0.0 < gap["outside_clip"] < 1.0 and gap["kl"] > 0.0


def test_behaviour_gap_by_hand():
    # pi_old / mu: 0.9 / 0.66 (outside 1.2), 0.001 / 0.0307 (outside 0.8), 1 (inside); a plain sample has none
    lmu, lpi = [math.log(0.66), math.log(0.0307)], [math.log(0.9), math.log(0.001)]
    gap = behaviour_gap([(lmu, lpi), ([-0.5], [-0.5])], 0.2)
    r = [0.9 / 0.66, 0.001 / 0.0307, 1.0]
    assert gap["outside_clip"] == pytest.approx(2 / 3)
    assert gap["kl"] == pytest.approx(sum(x - 1 - math.log(x) for x in r) / 3, rel=1e-9)
    assert behaviour_gap([], 0.2) is None
