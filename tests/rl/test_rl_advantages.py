"""Returns, whitening, GRPO/GiGPO and the estimator registry (navrl.rl.advantages)."""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass, replace

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from navrl.rl.advantages import (
    AdvantageEstimator,
    AdvantageInputs,
    AdvantageOutputs,
    DuplicateEstimatorError,
    UnknownEstimatorError,
    build_state_keys,
    compute_advantages,
    discounted_returns,
    estimator_needs_values,
    get_estimator,
    gigpo_step_advantages,
    grpo_advantages,
    masked_whiten,
    register_estimator,
    registered_estimators,
)

F64 = torch.float64
ALL = list(AdvantageEstimator)


# ----------------------------------------------------------------------------------------
# random batches and plain-Python references
# ----------------------------------------------------------------------------------------


@dataclass
class PyBatch:
    """A batch as ragged Python lists (the reference's view) plus its padded tensors."""

    rewards: list[list[float]]
    terminal: list[float]
    values: list[list[float]]
    keys: list[list[int]]
    valid: list[bool]
    groups: list[int]
    T: int

    def inputs(self, gamma: float, w: float = 1.0, whiten: bool = True, pad: float = 0.0) -> AdvantageInputs:
        B = len(self.rewards)
        r = torch.full((B, self.T), pad, dtype=F64)
        v = torch.full((B, self.T), pad, dtype=F64)
        k = torch.full((B, self.T), -1, dtype=torch.long)
        m = torch.zeros((B, self.T), dtype=torch.bool)
        for b in range(B):
            n = len(self.rewards[b])
            r[b, :n] = torch.tensor(self.rewards[b], dtype=F64)
            v[b, :n] = torch.tensor(self.values[b], dtype=F64)
            k[b, :n] = torch.tensor(self.keys[b], dtype=torch.long)
            m[b, :n] = True
        return AdvantageInputs(
            step_rewards=r,
            terminal_rewards=torch.tensor(self.terminal, dtype=F64),
            step_mask=m,
            valid=torch.tensor(self.valid),
            group_ids=torch.tensor(self.groups),
            gamma=gamma,
            values=v,
            state_keys=k,
            gigpo_step_weight=w,
            whiten=whiten,
        )


def random_batch(
    rng: random.Random, B: int | None = None, T: int | None = None, p_invalid: float = 0.2
) -> PyBatch:
    B = B or rng.randint(1, 14)
    T = T or rng.randint(1, 9)
    rewards, terminal, values, keys, valid, groups = [], [], [], [], [], []
    for _ in range(B):
        n = rng.randint(1, T)
        rewards.append([rng.choice([-2.0, 0.0, 1.0, 1.0, -1.0]) + rng.random() * 0.1 for _ in range(n)])
        terminal.append(rng.choice([2.0, 0.5, -0.75, -1.0, 0.0]))
        values.append([rng.gauss(0.0, 2.0) for _ in range(n)])
        keys.append([rng.randint(0, 4) for _ in range(n)])  # few keys: many anchor collisions
        valid.append(rng.random() > p_invalid)
        groups.append(rng.randint(0, 3) * 7 + 100)  # arbitrary, non-dense ids
    return PyBatch(rewards, terminal, values, keys, valid, groups, T)


def ref_returns(rewards: list[float], terminal: float, gamma: float) -> list[float]:
    n = len(rewards)
    return [sum(gamma ** (k - t) * rewards[k] for k in range(t, n)) + terminal for t in range(n)]


def ref_whiten(xs: list[float], eps: float = 1e-8) -> list[float]:
    if not xs:
        return []
    mu = statistics.fmean(xs)
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return [(x - mu) / (sd + eps) for x in xs]


def ref_grpo(scores: list[float], groups: list[int], valid: list[bool], eps: float = 1e-6) -> list[float]:
    out = []
    for s, g, ok in zip(scores, groups, valid, strict=True):
        sib = [s2 for s2, g2, ok2 in zip(scores, groups, valid, strict=True) if ok2 and g2 == g]
        if not ok or len(sib) < 2:
            out.append(0.0)
        else:
            out.append((s - statistics.fmean(sib)) / (statistics.stdev(sib) + eps))
    return out


def ref_estimator(
    name: AdvantageEstimator, pb: PyBatch, gamma: float, w: float, whiten: bool
) -> list[list[float]]:
    """Slow per-step reference of every estimator; rows of invalid trajectories are all 0."""
    B = len(pb.rewards)
    rew = [[0.0] * len(r) for r in pb.rewards] if name == AdvantageEstimator.PPO_TERMINAL_ONLY else pb.rewards
    G = [ref_returns(rew[b], pb.terminal[b], gamma) for b in range(B)]
    out = [[0.0] * pb.T for _ in range(B)]
    if name.uses_critic:
        flat, where = [], []
        for b in range(B):
            if pb.valid[b]:
                for t in range(len(G[b])):
                    flat.append(G[b][t] - pb.values[b][t])
                    where.append((b, t))
        if whiten:
            flat = ref_whiten(flat)
        for (b, t), a in zip(where, flat, strict=True):
            out[b][t] = a
        return out
    scores = [sum(pb.rewards[b]) + pb.terminal[b] for b in range(B)]
    ep = ref_grpo(scores, pb.groups, pb.valid)
    anchors: dict[tuple[int, int], list[float]] = {}
    for b in range(B):
        if pb.valid[b]:
            for t, key in enumerate(pb.keys[b]):
                anchors.setdefault((pb.groups[b], key), []).append(G[b][t])
    for b in range(B):
        if not pb.valid[b]:
            continue
        for t in range(len(G[b])):
            a = ep[b]
            if name == AdvantageEstimator.GIGPO:
                grp = anchors[(pb.groups[b], pb.keys[b][t])]
                a += w * (G[b][t] - statistics.fmean(grp) if len(grp) > 1 else 0.0)
            out[b][t] = a
    return out


# ----------------------------------------------------------------------------------------
# hand-computed cases
# ----------------------------------------------------------------------------------------


def test_hand_computed_returns_success_fail_success_terminal_2():
    # verdicts success / fail / success -> dense 1, 0, 1; task done and declared: +2
    G = discounted_returns(
        torch.tensor([[1.0, 0.0, 1.0]]), torch.tensor([2.0]), torch.ones(1, 3, dtype=torch.bool), 0.5
    )
    expected = [1 + 0 + 0.25 + 2, 0 + 0.5 + 2, 1 + 2]
    assert G.tolist() == [expected]  # exact in binary floating point
    assert expected == [3.25, 2.5, 3.0]


def test_returns_zero_on_padding_and_terminal_added_to_last_real_step():
    r = torch.tensor([[1.0, 1.0, 99.0, 99.0], [-2.0, 0.0, 0.0, 0.0]])
    m = torch.tensor([[True, True, False, False], [True, False, False, False]])
    G = discounted_returns(r, torch.tensor([-0.75, 0.5]), m, 0.5)
    assert G.tolist() == [[1.5 - 0.75, 1.0 - 0.75, 0.0, 0.0], [-1.5, 0.0, 0.0, 0.0]]


def test_gamma_one_without_dense_rewards_is_terminal_broadcast():
    m = torch.tensor([[True, True, True, False], [True, False, False, False]])
    R = torch.tensor([2.0, -1.0])
    G = discounted_returns(torch.zeros(2, 4), R, m, 1.0)
    assert G.tolist() == [[2.0, 2.0, 2.0, 0.0], [-1.0, 0.0, 0.0, 0.0]]


def test_gamma_zero_keeps_only_the_own_reward():
    G = discounted_returns(
        torch.tensor([[1.0, -2.0, 1.0]]), torch.tensor([0.5]), torch.ones(1, 3, dtype=torch.bool), 0.0
    )
    assert G.tolist() == [[1.5, -1.5, 1.5]]


def test_long_episode_float32_matches_float64_reference():
    # 30 steps with gamma 0.5: the matmul formulation has no gamma^-t blow-up.
    rng = random.Random(0)
    rewards = [rng.choice([1.0, 0.0, -2.0]) for _ in range(30)]
    G = discounted_returns(
        torch.tensor([rewards]), torch.tensor([2.0]), torch.ones(1, 30, dtype=torch.bool), 0.5
    )
    ref = ref_returns(rewards, 2.0, 0.5)
    assert np.allclose(G[0].numpy(), ref, atol=1e-6, rtol=0)


@pytest.mark.parametrize("name", [AdvantageEstimator.PPO, AdvantageEstimator.GIGPPO])
def test_lambda_one_unwhitened_advantages_equal_g_minus_v_exactly(name):
    pb = random_batch(random.Random(3), B=6, T=5, p_invalid=0.0)
    inp = pb.inputs(gamma=0.5, whiten=False)
    out = compute_advantages(name, inp)
    G = discounted_returns(inp.step_rewards, inp.terminal_rewards, inp.step_mask, 0.5)
    expected = torch.where(inp.step_mask, G - inp.values, torch.zeros((), dtype=F64))
    assert torch.equal(out.advantages, expected)
    assert torch.equal(out.returns, G)


def test_hand_computed_whitening():
    x = torch.tensor([[1.0, 2.0, 3.0, 100.0]], dtype=F64)
    m = torch.tensor([[True, True, True, False]])
    out = masked_whiten(x, m)
    # mean 2, unbiased std 1 -> -1, 0, 1 (up to the 1e-8 in the denominator); padding -> 0
    assert torch.allclose(out, torch.tensor([[-1.0, 0.0, 1.0, 0.0]], dtype=F64), atol=1e-7)
    assert out[0, 3] == 0.0


def test_whiten_degenerate_counts():
    assert masked_whiten(torch.tensor([5.0, 7.0]), torch.tensor([False, False])).tolist() == [0.0, 0.0]
    assert masked_whiten(torch.tensor([5.0, 7.0]), torch.tensor([True, False])).tolist() == [0.0, 0.0]
    assert masked_whiten(torch.tensor([3.0, 3.0, 3.0]), torch.ones(3, dtype=torch.bool)).tolist() == [0.0] * 3


def test_hand_computed_grpo():
    scores = torch.tensor([1.0, 3.0, 5.0, 10.0, 4.0, 7.0, -3.0])
    groups = torch.tensor([0, 0, 0, 1, 2, 2, 2])
    valid = torch.tensor([True, True, True, True, True, True, False])
    a = grpo_advantages(scores, groups, valid)
    # group 0: mean 3, unbiased std 2; group 1: single -> 0; group 2: 4, 7 valid (mean 5.5,
    # std 2.1213); the invalid -3 neither counts nor gets an advantage.
    sd2 = math.sqrt(4.5)
    expected = [-2 / (2 + 1e-6), 0.0, 2 / (2 + 1e-6), 0.0, -1.5 / (sd2 + 1e-6), 1.5 / (sd2 + 1e-6), 0.0]
    assert np.allclose(a.numpy(), expected, atol=1e-6)


def test_grpo_identical_scores_give_zero_and_all_invalid_gives_zero():
    assert (
        grpo_advantages(
            torch.tensor([2.0, 2.0, 2.0]), torch.zeros(3, dtype=torch.long), torch.ones(3, dtype=torch.bool)
        ).tolist()
        == [0.0] * 3
    )
    assert grpo_advantages(
        torch.tensor([1.0, 2.0]), torch.zeros(2, dtype=torch.long), torch.zeros(2, dtype=torch.bool)
    ).tolist() == [0.0, 0.0]


def test_grpo_estimator_broadcasts_to_every_valid_step():
    # two siblings: S = (1 + 0 + 2) = 3 and (-2) + 0 = -2, no discount in the score
    inp = AdvantageInputs(
        step_rewards=torch.tensor([[1.0, 0.0, 0.0], [-2.0, 0.0, 0.0]], dtype=F64),
        terminal_rewards=torch.tensor([2.0, 0.0], dtype=F64),
        step_mask=torch.tensor([[True, True, False], [True, True, True]]),
        valid=torch.tensor([True, True]),
        group_ids=torch.tensor([5, 5]),
        gamma=0.5,
    )
    out = compute_advantages("grpo", inp)
    a = 2.5 / (math.sqrt(12.5) + 1e-6)
    assert np.allclose(out.advantages.numpy(), [[a, a, 0.0], [-a, -a, -a]], atol=1e-12)


def test_hand_computed_gigpo_anchor_groups():
    # Trajectory 0 visits states A, B; trajectory 1 visits A, C; 2 (other task) visits A.
    # Terminal-only with gamma 1: G = R on every step.
    keys = build_state_keys([["A", "B"], ["A", "C"], ["A"]])
    assert keys.tolist() == [[0, 1], [0, 2], [0, -1]]
    G = torch.tensor([[2.0, 2.0], [-1.0, -1.0], [5.0, 0.0]], dtype=F64)
    mask = torch.tensor([[True, True], [True, True], [True, False]])
    a = gigpo_step_advantages(G, keys, torch.tensor([0, 0, 1]), mask)
    # anchor (task 0, A) = {2, -1}, mean 0.5; B, C and (task 1, A) are singletons -> 0
    assert a.tolist() == [[1.5, 0.0], [-1.5, 0.0], [0.0, 0.0]]

    inp = AdvantageInputs(
        step_rewards=torch.zeros(3, 2, dtype=F64),
        terminal_rewards=torch.tensor([2.0, -1.0, 5.0], dtype=F64),
        step_mask=mask,
        valid=torch.ones(3, dtype=torch.bool),
        group_ids=torch.tensor([0, 0, 1]),
        gamma=1.0,
        state_keys=keys,
        gigpo_step_weight=0.5,
    )
    out = compute_advantages(AdvantageEstimator.GIGPO, inp)
    ep = 1.5 / (math.sqrt(4.5) + 1e-6)  # scores 2 and -1: mean 0.5, std sqrt(4.5)
    assert np.allclose(out.advantages.numpy(), [[ep + 0.75, ep], [-ep - 0.75, -ep], [0.0, 0.0]], atol=1e-12)


# ----------------------------------------------------------------------------------------
# loop vs vectorised, every estimator
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL, ids=[e.value for e in ALL])
@pytest.mark.parametrize("whiten", [True, False])
def test_vectorised_matches_loop_reference(name, whiten):
    rng = random.Random(hash((name.value, whiten)) & 0xFFFF)
    for _ in range(25):
        pb = random_batch(rng)
        gamma = rng.choice([0.0, 0.5, 0.9, 1.0])
        w = rng.choice([0.0, 0.5, 1.0, 2.0])
        out = compute_advantages(name, pb.inputs(gamma, w, whiten))
        ref = ref_estimator(name, pb, gamma, w, whiten)
        assert np.allclose(out.advantages.numpy(), np.array(ref), atol=1e-9, rtol=1e-9), name
        for b in range(len(pb.rewards)):
            rew = (
                [0.0] * len(pb.rewards[b]) if name == AdvantageEstimator.PPO_TERMINAL_ONLY else pb.rewards[b]
            )
            g = ref_returns(rew, pb.terminal[b], gamma) if pb.valid[b] else []
            row = g + [0.0] * (pb.T - len(g))
            assert np.allclose(out.returns[b].numpy(), row, atol=1e-9)


def test_gigpo_with_zero_weight_equals_grpo():
    pb = random_batch(random.Random(11), B=12, T=6)
    a = compute_advantages("gigpo", pb.inputs(0.5, w=0.0)).advantages
    b = compute_advantages("grpo", pb.inputs(0.5)).advantages
    assert torch.equal(a, b)


def test_terminal_only_ignores_dense_rewards():
    pb = random_batch(random.Random(12), B=8, T=6)
    inp = pb.inputs(0.5)
    other = replace(inp, step_rewards=torch.randn_like(inp.step_rewards))
    assert torch.equal(
        compute_advantages("ppo_terminal_only", inp).advantages,
        compute_advantages("ppo_terminal_only", other).advantages,
    )
    assert not torch.equal(
        compute_advantages("ppo", inp).advantages, compute_advantages("ppo", other).advantages
    )


# ----------------------------------------------------------------------------------------
# invariance to masked trajectories and padding
# ----------------------------------------------------------------------------------------


def _garbage_like(x: torch.Tensor, keep: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """x with every entry where ``keep`` is False replaced by noise, inf or NaN."""
    if x.dtype == torch.long:
        noise = torch.randint(0, 5, x.shape, generator=gen)
    else:
        noise = torch.randn(x.shape, generator=gen, dtype=x.dtype) * 100
        noise.view(-1)[::7] = float("nan")
        noise.view(-1)[3::11] = float("inf")
    return torch.where(keep, x, noise)


@pytest.mark.parametrize("name", ALL, ids=[e.value for e in ALL])
def test_masked_trajectories_and_padding_change_nothing(name):
    gen = torch.Generator().manual_seed(0)
    for seed in range(10):
        pb = random_batch(random.Random(seed), p_invalid=0.3)
        inp = pb.inputs(0.5, w=0.7)
        base = compute_advantages(name, inp)
        keep = inp.mask  # real steps of valid trajectories
        valid = inp.valid
        changed = replace(
            inp,
            step_rewards=_garbage_like(inp.step_rewards, keep, gen),
            values=_garbage_like(inp.values, keep, gen),
            state_keys=_garbage_like(inp.state_keys, keep, gen),
            terminal_rewards=_garbage_like(inp.terminal_rewards, valid, gen),
            # an invalid trajectory may even claim steps where there is padding
            step_mask=torch.where(valid.unsqueeze(-1), inp.step_mask, torch.ones_like(inp.step_mask)),
        )
        out = compute_advantages(name, changed)
        assert torch.equal(out.advantages, base.advantages)
        assert torch.equal(out.returns, base.returns)
        assert torch.isfinite(out.advantages).all()
        assert (out.advantages[~keep] == 0).all() and (out.returns[~keep] == 0).all()


@pytest.mark.parametrize("name", ALL, ids=[e.value for e in ALL])
def test_appending_20_percent_invalid_trajectories_changes_no_valid_advantage(name):
    rng = random.Random(21)
    pb = random_batch(rng, B=20, T=7, p_invalid=0.0)
    extra = random_batch(rng, B=5, T=7, p_invalid=0.0)  # 5 of 25 = 20 %
    # the extra ones share groups with the valid ones, and carry extreme rewards (a failed
    # device often reports zeros or garbage: either way they must not move the statistics)
    extra.groups = [pb.groups[i] for i in range(5)]
    extra.terminal = [1e3] * 5
    extra.valid = [False] * 5
    both = PyBatch(
        pb.rewards + extra.rewards,
        pb.terminal + extra.terminal,
        pb.values + extra.values,
        pb.keys + extra.keys,
        pb.valid + extra.valid,
        pb.groups + extra.groups,
        7,
    )
    a = compute_advantages(name, pb.inputs(0.5))
    b = compute_advantages(name, both.inputs(0.5))
    assert torch.allclose(b.advantages[:20], a.advantages, atol=1e-12, rtol=0)
    assert (b.advantages[20:] == 0).all()


@settings(max_examples=60, deadline=None)
@given(
    xs=st.lists(st.floats(-50, 50, allow_nan=False), min_size=2, max_size=40),
    extra=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=0, max_size=20),
)
def test_whiten_statistics_ignore_masked_entries(xs, extra):
    x = torch.tensor(xs + extra, dtype=F64)
    m = torch.tensor([True] * len(xs) + [False] * len(extra))
    out = masked_whiten(x, m)
    assert np.allclose(out[: len(xs)].numpy(), ref_whiten(xs), atol=1e-9)
    assert (out[len(xs) :] == 0).all()


# ----------------------------------------------------------------------------------------
# outside references
# ----------------------------------------------------------------------------------------


def sb3_compute_returns_and_advantage(rewards, values, episode_starts, last_values, dones, gamma, gae_lambda):
    """Stable-Baselines3 ``RolloutBuffer.compute_returns_and_advantage`` (one env), as in
    stable_baselines3/common/buffers.py: the same loop, the same variable names."""
    buffer_size = len(rewards)
    advantages = np.zeros(buffer_size, dtype=np.float64)
    last_gae_lam = 0
    for step in reversed(range(buffer_size)):
        if step == buffer_size - 1:
            next_non_terminal = 1.0 - dones.astype(np.float64)
            next_values = last_values
        else:
            next_non_terminal = 1.0 - episode_starts[step + 1]
            next_values = values[step + 1]
        delta = rewards[step] + gamma * next_values * next_non_terminal - values[step]
        last_gae_lam = delta + gamma * gae_lambda * next_non_terminal * last_gae_lam
        advantages[step] = last_gae_lam
    returns = advantages + values
    return advantages, returns


def _to_sb3_stream(pb: PyBatch, dense: bool):
    """Concatenate the valid episodes into one SB3 env stream; R is paid at the last step."""
    rewards, values, starts = [], [], []
    for b in range(len(pb.rewards)):
        if not pb.valid[b]:
            continue
        n = len(pb.rewards[b])
        r = list(pb.rewards[b]) if dense else [0.0] * n
        r[-1] += pb.terminal[b]
        rewards += r
        values += pb.values[b]
        starts += [1.0] + [0.0] * (n - 1)
    return np.array(rewards), np.array(values), np.array(starts)


@pytest.mark.parametrize("dense", [False, True])
def test_matches_stable_baselines3_gae_with_gamma_one_lambda_one(dense):
    """gamma = 1, lambda = 1: our ppo (terminal-only, or dense at gamma 1 where SB3's discount
    of the last-step reward is a no-op) equals SB3's GAE recursion over the episode stream, and
    whitened equals SB3 PPO's (adv - adv.mean()) / (adv.std() + 1e-8) on the full batch."""
    name = AdvantageEstimator.PPO if dense else AdvantageEstimator.PPO_TERMINAL_ONLY
    rng = random.Random(5)
    for _ in range(10):
        pb = random_batch(rng, p_invalid=0.25)
        if not any(pb.valid):
            continue
        rewards, values, starts = _to_sb3_stream(pb, dense)
        sb3_adv, sb3_ret = sb3_compute_returns_and_advantage(
            rewards,
            values,
            starts,
            last_values=np.array(123.0),
            dones=np.array(True),
            gamma=1.0,
            gae_lambda=1.0,
        )
        raw = compute_advantages(name, pb.inputs(gamma=1.0, whiten=False))
        ours = raw.advantages[pb.inputs(1.0).mask].numpy()  # row-major = stream order
        assert np.allclose(ours, sb3_adv, atol=1e-12)
        assert np.allclose(raw.returns[pb.inputs(1.0).mask].numpy(), sb3_ret, atol=1e-12)

        white = compute_advantages(name, pb.inputs(gamma=1.0, whiten=True)).advantages[pb.inputs(1.0).mask]
        t = torch.tensor(sb3_adv)
        if t.numel() > 1:  # SB3 normalises only batches of more than one sample
            assert torch.allclose(white, (t - t.mean()) / (t.std() + 1e-8), atol=1e-12)


def verl_masked_whiten(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """verl ``verl.utils.torch_functional.masked_whiten`` (same in TRL's core.py):
    masked_mean, masked_var with Bessel correction n / (n - 1), (x - mean) * rsqrt(var + 1e-8)."""
    mask = mask.to(values.dtype)
    mean = (values * mask).sum() / mask.sum()
    centered = values - mean
    variance = (centered**2 * mask).sum() / mask.sum()
    mask_sum = mask.sum()
    variance = variance * (mask_sum / (mask_sum - 1))
    return (values - mean) * torch.rsqrt(variance + 1e-8)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_masked_whiten_matches_verl_formula(dtype):
    """Same statistics (masked mean, unbiased masked variance) as verl. The one formula
    difference is the epsilon: ours divides by (std + 1e-8), verl multiplies by rsqrt(var + 1e-8);
    for std ~ 1 they differ by ~1e-8 relative, so they agree to 1e-6 here. verl leaves masked
    positions as they come out of the formula; we set them to 0, so only valid ones compare."""
    gen = torch.Generator().manual_seed(1)
    for _ in range(20):
        x = (torch.randn(16, 30, generator=gen) * 3 + 1).to(dtype)
        m = torch.rand(16, 30, generator=gen) > 0.3
        ours = masked_whiten(x, m)
        theirs = verl_masked_whiten(x, m)
        assert torch.allclose(ours[m], theirs[m], atol=1e-6, rtol=0)
        assert (ours[~m] == 0).all()


# ----------------------------------------------------------------------------------------
# registry
# ----------------------------------------------------------------------------------------


def test_all_builtins_registered_with_critic_needs():
    assert set(registered_estimators()) >= {e.value for e in AdvantageEstimator}
    for e in AdvantageEstimator:
        assert estimator_needs_values(e) == e.uses_critic
        assert get_estimator(e) is get_estimator(e.value)


def test_registering_a_name_twice_raises():
    with pytest.raises(DuplicateEstimatorError):
        register_estimator(AdvantageEstimator.PPO)(lambda inputs: None)
    with pytest.raises(DuplicateEstimatorError):
        register_estimator("grpo")(lambda inputs: None)


def test_custom_estimator_registration_and_unknown_name():
    name = "test_rl_advantages_constant"
    if name not in registered_estimators():

        @register_estimator(name)
        def constant(inputs: AdvantageInputs) -> AdvantageOutputs:
            z = torch.where(
                inputs.mask, torch.ones_like(inputs.step_rewards), torch.zeros_like(inputs.step_rewards)
            )
            return AdvantageOutputs(z, z)

    with pytest.raises(DuplicateEstimatorError):
        register_estimator(name)(lambda inputs: None)
    pb = random_batch(random.Random(0), B=3, T=2, p_invalid=0.0)
    out = compute_advantages(name, pb.inputs(0.5))
    assert torch.equal(out.advantages, pb.inputs(0.5).mask.to(F64))
    with pytest.raises(UnknownEstimatorError):
        get_estimator("no_such_estimator")


def test_missing_inputs_are_reported():
    pb = random_batch(random.Random(0), B=3, T=2)
    inp = replace(pb.inputs(0.5), values=None, state_keys=None)
    for name in ("ppo", "ppo_terminal_only", "gigppo"):
        with pytest.raises(ValueError, match="critic values"):
            compute_advantages(name, inp)
    with pytest.raises(ValueError, match="state_keys"):
        compute_advantages("gigpo", inp)
    compute_advantages("grpo", inp)  # needs neither
    with pytest.raises(ValueError, match="shape"):
        replace(inp, valid=torch.ones(4, dtype=torch.bool))
    with pytest.raises(ValueError, match="gamma"):
        replace(inp, gamma=1.5)
