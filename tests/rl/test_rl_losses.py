"""PPO policy loss, critic loss, KL and entropy terms (navrl.rl.losses)."""

from __future__ import annotations

import math

import pytest
import torch

from navrl.rl.losses import (
    critic_loss,
    entropy_from_logits,
    kl_k3,
    masked_token_mean,
    ppo_policy_loss,
)


def test_hand_computed_clipped_surrogate_and_stats():
    # ratios e^{log r}: 1.5 (A>0, clipped at 1.2), 0.5 (A>0, unclipped), 1.5 (A<0, unclipped
    # -> the pessimistic branch is the raw one), 0.5 (A<0, clipped at 0.8), one padded token
    r = torch.tensor([[1.5, 0.5, 1.5, 0.5, 7.0]])
    old = torch.zeros(1, 5)
    logp = torch.log(r).requires_grad_(True)
    adv = torch.tensor([[2.0, 2.0, -1.0, -1.0, 100.0]])
    mask = torch.tensor([[True, True, True, True, False]])
    out = ppo_policy_loss(logp, old, adv, mask, clip_eps=0.2)
    per_token = [-2.0 * 1.2, -2.0 * 0.5, 1.0 * 1.5, 1.0 * 0.8]
    assert out.pg_loss.item() == pytest.approx(sum(per_token) / 4, abs=1e-6)
    assert out.clip_fraction.item() == pytest.approx(0.5)  # tokens 0 and 3
    k3 = [(x - 1) - math.log(x) for x in (1.5, 0.5, 1.5, 0.5)]
    assert out.approx_kl.item() == pytest.approx(sum(k3) / 4, abs=1e-6)
    assert out.ratio_mean.item() == pytest.approx(1.0, abs=1e-6)
    assert out.num_tokens == 4
    out.loss.backward()
    # clipped tokens carry no gradient; unclipped ones d(-A r)/dlogp = -A r; padding none
    expected = torch.tensor([[0.0, -2.0 * 0.5, 1.0 * 1.5, 0.0, 0.0]]) / 4
    assert torch.allclose(logp.grad, expected, atol=1e-6)


def test_at_ratio_one_loss_is_minus_mean_advantage_and_stats_are_trivial():
    logp = torch.randn(3, 4)
    adv = torch.tensor([1.0, -2.0, 0.5])  # per step, broadcast to its tokens
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]], dtype=torch.bool)
    out = ppo_policy_loss(logp, logp.clone(), adv, mask)
    assert out.pg_loss.item() == pytest.approx(-(2 * 1.0 + 4 * -2.0 + 1 * 0.5) / 7, abs=1e-6)
    assert out.clip_fraction.item() == 0.0 and out.approx_kl.item() == 0.0
    assert torch.equal(out.kl, torch.tensor(0.0)) and torch.equal(out.entropy, torch.tensor(0.0))


def test_invalid_rows_and_padding_change_nothing_even_with_inf_and_nan():
    torch.manual_seed(0)
    logp = torch.randn(4, 6) - 1
    old = logp + 0.3 * torch.randn(4, 6)
    ref = logp + 0.3 * torch.randn(4, 6)
    ent = torch.rand(4, 6)
    adv = torch.randn(4)
    mask = torch.rand(4, 6) > 0.3
    mask[:, 0] = True
    valid = torch.tensor([True, False, True, True])
    keep = mask & valid.unsqueeze(-1)

    def run(lp, o, r, e, a):
        lp = lp.clone().requires_grad_(True)
        out = ppo_policy_loss(
            lp, o, a, mask, valid=valid, ref_logp=r, kl_coef=0.1, entropy=e, entropy_coef=0.01
        )
        out.loss.backward()
        return out, lp.grad

    base, g1 = run(logp, old, ref, ent, adv)
    junk = ~keep
    bad = lambda x, v: torch.where(junk, torch.full_like(x, v), x)  # noqa: E731
    adv2 = adv.clone()
    adv2[1] = float("nan")
    out, g2 = run(
        bad(logp, -float("inf")), bad(old, float("nan")), bad(ref, float("inf")), bad(ent, float("nan")), adv2
    )
    for name in ("loss", "pg_loss", "kl", "entropy", "clip_fraction", "approx_kl", "ratio_mean"):
        assert torch.equal(getattr(out, name), getattr(base, name)), name
    assert out.num_tokens == int(keep.sum())
    assert torch.equal(g2, g1) and (g2[junk] == 0).all()


def test_kl_k3_hand_values_and_penalty_gradient():
    logp = torch.log(torch.tensor([[0.5, 0.25]]))
    ref = torch.log(torch.tensor([[0.25, 0.25]]))
    k = kl_k3(logp, ref)
    assert k[0, 0].item() == pytest.approx((0.5 - 1) - math.log(0.5), abs=1e-6)
    assert k[0, 1].item() == 0.0
    lp = logp.clone().requires_grad_(True)
    out = ppo_policy_loss(
        lp, lp.detach(), torch.zeros(1), torch.ones(1, 2, dtype=torch.bool), ref_logp=ref, kl_coef=2.0
    )
    assert out.kl.item() == pytest.approx(k.mean().item(), abs=1e-6)
    assert out.loss.item() == pytest.approx(2.0 * k.mean().item(), abs=1e-6)
    out.loss.backward()
    assert lp.grad[0, 0] > 0  # above the reference: the penalty pushes log p down


def test_entropy_from_logits_and_bonus_sign():
    logits = torch.tensor([[[0.0, 0.0, 0.0, 0.0], [100.0, 0.0, 0.0, 0.0]]])
    h = entropy_from_logits(logits)
    assert h[0, 0].item() == pytest.approx(math.log(4), abs=1e-6)
    assert h[0, 1].item() == pytest.approx(0.0, abs=1e-6)
    lp = torch.zeros(1, 2)
    out = ppo_policy_loss(
        lp, lp, torch.zeros(1), torch.ones(1, 2, dtype=torch.bool), entropy=h, entropy_coef=0.5
    )
    assert out.loss.item() == pytest.approx(-0.5 * math.log(4) / 2, abs=1e-6)


def test_critic_loss_mse_on_valid_steps_only():
    v = torch.tensor([[1.0, 2.0, 50.0], [0.0, float("nan"), 3.0]], requires_grad=True)
    g = torch.tensor([[2.0, 2.0, -9.0], [1.0, 7.0, float("inf")]])
    mask = torch.tensor([[True, True, False], [True, False, False]])
    out = critic_loss(v, g, mask)
    assert out.loss.item() == pytest.approx((1.0 + 0.0 + 1.0) / 3)
    assert out.num_steps == 3
    out.loss.backward()
    assert torch.allclose(v.grad, torch.tensor([[-2 / 3, 0.0, 0.0], [-2 / 3, 0.0, 0.0]]))
    assert out.value_mean.item() == pytest.approx(1.0)  # V on valid steps: 1, 2, 0
    # residuals G - V = 1, 0, 1 and G = 2, 2, 1 have the same variance (2/9): EV = 0
    assert out.explained_variance.item() == pytest.approx(0.0, abs=1e-6)


def test_clipped_value_loss():
    old = torch.tensor([0.0, 0.0, 0.0])
    v = torch.tensor([1.0, 0.1, -1.0], requires_grad=True)
    g = torch.tensor([2.0, 2.0, -0.5])
    out = critic_loss(v, g, torch.ones(3, dtype=torch.bool), old_values=old, clip_range=0.2)
    # step 0: raw (1-2)^2 = 1, clipped (0.2-2)^2 = 3.24 -> 3.24 (pessimistic)
    # step 1: inside the clip range -> 3.61 both
    # step 2: raw (-1+0.5)^2 = 0.25, clipped (-0.2+0.5)^2 = 0.09 -> 0.25
    assert out.loss.item() == pytest.approx((3.24 + 3.61 + 0.25) / 3, abs=1e-5)
    assert out.clip_fraction.item() == pytest.approx(1 / 3)
    with pytest.raises(ValueError):
        critic_loss(v, g, torch.ones(3, dtype=torch.bool), clip_range=0.2)


def test_empty_mask_gives_zero_not_nan():
    out = ppo_policy_loss(
        torch.zeros(2, 3, requires_grad=True),
        torch.zeros(2, 3),
        torch.ones(2),
        torch.zeros(2, 3, dtype=torch.bool),
    )
    assert out.loss.item() == 0.0 and out.num_tokens == 0
    assert masked_token_mean(torch.ones(3), torch.zeros(3, dtype=torch.bool)).item() == 0.0
    c = critic_loss(torch.zeros(3, requires_grad=True), torch.ones(3), torch.zeros(3, dtype=torch.bool))
    assert c.loss.item() == 0.0 and math.isnan(c.explained_variance.item())
    assert set(out.stats()) >= {"policy/clip_fraction", "policy/approx_kl"} and "critic/loss" in c.stats()
