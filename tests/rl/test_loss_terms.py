"""The policy loss's terms (navrl.rl.losses): a registry of pure functions, each pinned on a
hand-computed case, blind to masked rows (even holding inf or NaN), selected by name in
``TrainConfig.policy.loss_terms`` (an unknown name is a ConfigError, exit 2 from the CLI)."""
from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from navrl.cli.main import main
from navrl.rl.config import ConfigError, TrainConfig
from navrl.rl.losses import (
    DuplicateLossError,
    LossInputs,
    UnknownLossError,
    entropy_bonus,
    kl_ref,
    loss_spec,
    ppo_clip,
    ptx,
    register_loss,
    registered_losses,
    self_imitation,
    factor_entropy_bonus,
    unregister_loss,
)
from navrl.rl.presets import get_preset

BUILTIN = ("ppo_clip", "kl_ref", "entropy", "ptx", "self_imitation", "factor_entropy")


@pytest.fixture(autouse=True)
def registry_unchanged():
    names = set(registered_losses())
    yield
    for name in set(registered_losses()) - names:
        unregister_loss(name)
    assert set(registered_losses()) == names


def test_the_registry_is_the_list_of_terms_and_the_config_names_them_all():
    assert set(BUILTIN) <= set(registered_losses())
    assert TrainConfig().policy.loss_terms == BUILTIN
    got = {n: (loss_spec(n).coef, loss_spec(n).maximise, loss_spec(n).reads, loss_spec(n).zero_advantage_free)
           for n in BUILTIN}
    assert got == {"ppo_clip": (None, False, ("samples",), True),
                   "kl_ref": ("policy.kl_coef", False, ("samples", "reference"), False),
                   "entropy": ("policy.entropy_coef", True, ("samples", "entropy"), False),
                   "ptx": ("policy.sft_coef", False, ("demos",), True),
                   "self_imitation": ("exploration.self_imitation", False, ("own",), True),
                   "factor_entropy": ("exploration.entropy_control", True, ("samples", "entropy"), False)}
    assert [loss_spec(n).fn for n in BUILTIN] == [ppo_clip, kl_ref, entropy_bonus, ptx, self_imitation,
                                                  factor_entropy_bonus]
    for n in BUILTIN:
        assert "Returns a scalar" in loss_spec(n).doc and "[" in loss_spec(n).doc     # shapes in the docstring


def test_terms_in_use_are_those_with_a_nonzero_coefficient_weighted_by_it():
    cfg = TrainConfig()
    assert [(s.name, w) for s, w in cfg.policy_loss] == [("ppo_clip", 1.0)]
    cfg = cfg.override({"policy.kl_coef": 0.1, "policy.entropy_coef": 0.01, "policy.sft_coef": 0.5,
                        "exploration.self_imitation": 0.3, "exploration.entropy_control": 0.05})
    assert [(s.name, w) for s, w in cfg.policy_loss] == [
        ("ppo_clip", 1.0), ("kl_ref", 0.1), ("entropy", -0.01), ("ptx", 0.5), ("self_imitation", 0.3),
        ("factor_entropy", -0.05)]
    cfg = cfg.override({"policy.loss_terms": ("ptx", "ppo_clip")})
    assert [s.name for s, _ in cfg.validate().policy_loss] == ["ptx", "ppo_clip"]      # in the configured order


# ------------------------------------------------------------------ each term by hand
def _samples(**kw) -> LossInputs:
    return LossInputs(**kw)


def test_ppo_clip_by_hand():
    # ratios 1.5 (A>0, clipped at 1.2), 0.5 (A>0, unclipped), 1.5 (A<0: the raw branch is the
    # pessimistic one), 0.5 (A<0, clipped at 0.8), one padded token
    r = torch.tensor([[1.5, 0.5, 1.5, 0.5, 7.0]])
    logp = torch.log(r).requires_grad_(True)
    x = _samples(logp=logp, old_logp=torch.zeros(1, 5), advantages=torch.tensor([[2.0, 2.0, -1.0, -1.0, 100.0]]),
                 mask=torch.tensor([[True, True, True, True, False]]), clip_eps=0.2)
    v = ppo_clip(x)
    assert v.item() == pytest.approx((-2.0 * 1.2 - 2.0 * 0.5 + 1.0 * 1.5 + 1.0 * 0.8) / 4, abs=1e-6)
    v.backward()
    assert torch.allclose(logp.grad, torch.tensor([[0.0, -2.0 * 0.5, 1.0 * 1.5, 0.0, 0.0]]) / 4, atol=1e-6)


def test_kl_ref_by_hand():
    logp = torch.log(torch.tensor([[0.5, 0.25, 0.9]]))
    ref = torch.log(torch.tensor([[0.25, 0.25, 0.1]]))
    x = _samples(logp=logp, ref_logp=ref, mask=torch.tensor([[True, True, False]]))
    # k3 = r - 1 - log r, r = ref / pi: 0.5 - 1 + log 2, then 0
    assert kl_ref(x).item() == pytest.approx((0.5 - 1 + math.log(2) + 0.0) / 2, abs=1e-6)


def test_entropy_bonus_by_hand():
    x = _samples(entropy=torch.tensor([[1.0, 2.0, 50.0], [3.0, 0.0, 0.0]]),
                 mask=torch.tensor([[True, True, False], [True, False, False]]))
    assert entropy_bonus(x).item() == pytest.approx(2.0)
    assert entropy_bonus(replace(x, valid=torch.tensor([True, False]))).item() == pytest.approx(1.5)


def test_supervised_terms_by_hand():
    lp = torch.log(torch.tensor([[0.5, 0.25], [0.125, 1.0]]))
    m = torch.tensor([[1, 1], [1, 0]])         # (the policies' float/int masks serve too)
    want = (math.log(2) + math.log(4) + math.log(8)) / 3
    assert ptx(_samples(demo_logp=lp * m, demo_mask=m)).item() == pytest.approx(want)
    assert self_imitation(_samples(own_logp=lp * m, own_mask=m)).item() == pytest.approx(want)


# ------------------------------------------------------------------ masked rows change nothing
def _value_and_grad(fn, x: LossInputs, field: str, n: int):
    t = getattr(x, field).detach().clone().requires_grad_(True)
    v = fn(replace(x, **{field: t}))
    v.backward()
    return v.detach(), t.grad[:n]


@pytest.mark.parametrize("name", BUILTIN)
def test_masked_rows_add_nothing_to_a_term_or_its_gradient(name):
    torch.manual_seed(0)
    N, L = 3, 5
    logp = torch.randn(N, L) - 1
    mask = torch.rand(N, L) > 0.3
    mask[:, 0] = True
    base = LossInputs(logp=logp, old_logp=logp + 0.3 * torch.randn(N, L), advantages=torch.randn(N), mask=mask,
                      entropy=torch.rand(N, L), ref_logp=logp + 0.3 * torch.randn(N, L), entropy_weight=torch.rand(N, L),
                      is_weight=torch.rand(N, L) + 0.1,
                      demo_logp=logp * mask, demo_mask=mask, own_logp=logp * mask, own_mask=mask)
    junk = torch.full((2, L), float("nan"))
    junk[0, :2] = float("inf")
    off = torch.zeros(2, L, dtype=torch.bool)
    spec = loss_spec(name)
    if spec.reads == ("demos",) or spec.reads == ("own",):
        pre = "demo" if spec.reads == ("demos",) else "own"
        more = replace(base, **{f"{pre}_logp": torch.cat([base.demo_logp, junk]),
                                f"{pre}_mask": torch.cat([mask, off])})
        field = f"{pre}_logp"
        variants = [more]
    else:
        cat = {f: torch.cat([getattr(base, f), junk]) for f in ("logp", "old_logp", "entropy", "ref_logp",
                                                                "entropy_weight", "is_weight")}
        padded = replace(base, mask=torch.cat([mask, off]), advantages=torch.cat([base.advantages, torch.ones(2)]),
                         **cat)
        invalid = replace(padded, mask=torch.cat([mask, ~off]), valid=torch.tensor([True] * N + [False] * 2))
        field = "entropy" if name in ("entropy", "factor_entropy") else "logp"
        variants = [padded, invalid]
    want_v, want_g = _value_and_grad(spec.fn, base, field, N)
    assert torch.isfinite(want_v) and want_g.abs().sum() > 0
    for x in variants:
        v, g = _value_and_grad(spec.fn, x, field, N)
        # (the same sum up to its order: a longer row count may sum in another order)
        assert torch.allclose(v, want_v, rtol=1e-6, atol=0) and torch.allclose(g, want_g, rtol=1e-6, atol=0), name


def test_a_zero_advantage_row_adds_nothing_to_ppo_clip_but_does_to_kl_and_entropy():
    """What ``zero_advantage_free`` claims: the trainer may leave such rows out of the pass."""
    torch.manual_seed(1)
    logp = torch.randn(4, 3)
    x = LossInputs(logp=logp, old_logp=logp + 0.2, advantages=torch.tensor([1.0, 0.0, -2.0, 0.0]),
                   mask=torch.ones(4, 3, dtype=torch.bool), entropy=torch.rand(4, 3), ref_logp=logp - 0.5)
    kept = torch.tensor([0, 2])
    sub = LossInputs(**{f: (v[kept] if isinstance(v, torch.Tensor) else v) for f, v in vars(x).items()})
    # a token mean: the kept rows' mean times the kept share of tokens is the whole one
    assert ppo_clip(sub).item() * 0.5 == pytest.approx(ppo_clip(x).item(), abs=1e-6)
    assert kl_ref(sub).item() * 0.5 != pytest.approx(kl_ref(x).item(), abs=1e-6)
    assert entropy_bonus(sub).item() * 0.5 != pytest.approx(entropy_bonus(x).item(), abs=1e-6)


# ------------------------------------------------------------------ names
def test_an_unknown_term_name_is_a_config_error():
    with pytest.raises(UnknownLossError) as e:
        TrainConfig().override({"policy.loss_terms": ("ppo_clip", "ppo_klip")}).validate()
    assert isinstance(e.value, ConfigError) and "ppo_klip" in str(e.value) and "ppo_clip" in str(e.value)
    with pytest.raises(ConfigError, match="unknown loss term 'nope'"):
        get_preset("quick", {"policy.loss_terms": ("nope",)})
    with pytest.raises(ConfigError, match="unknown loss term"):
        TrainConfig.from_dict({"policy": {"loss_terms": ["ppo_clip", "nope"]}})
    with pytest.raises(ConfigError, match="twice"):
        TrainConfig().override({"policy.loss_terms": ("ppo_clip", "ppo_clip")}).validate()


def test_an_unknown_term_name_on_the_command_line_exits_2(capsys):
    assert main(["train", "--preset", "quick", "--set", 'policy.loss_terms=["ppo_clip","nope"]']) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown loss term 'nope'" in err[0]


def test_a_registered_term_is_configurable_by_name_and_names_are_unique():
    @register_loss("test_logp_l2", log="policy/test_logp_l2")
    def logp_l2(x: LossInputs) -> torch.Tensor:
        """Squared log-ratio, token mean. Reads ``logp``, ``old_logp`` [N, L]. Returns a scalar."""
        return ((x.logp - x.old_logp) ** 2)[x.mask].mean()
    cfg = TrainConfig().override({"policy.loss_terms": ("ppo_clip", "test_logp_l2")}).validate()
    assert [(s.name, w) for s, w in cfg.policy_loss] == [("ppo_clip", 1.0), ("test_logp_l2", 1.0)]
    with pytest.raises(DuplicateLossError):
        register_loss("test_logp_l2")(logp_l2)
    with pytest.raises(ValueError, match="sources"):
        register_loss("test_bad_source", reads=("rewards",))
    assert loss_spec("test_logp_l2").reads == ("samples",)


# ------------------------------------------------------------------ the trainer's sum
def test_the_trainer_adds_each_term_in_use_times_its_weight_and_logs_it(tmp_path):
    """A plugin term configured by name joins the update: called on every step that has
    sampled outputs, weighted, logged; ptx at coefficient 0 is not called at all."""
    from navrl.experiments.pipeline import build_tiny_policy
    from navrl.rl.trainer import Trainer
    calls = []

    @register_loss("test_const", log="policy/test_const")
    def const(x: LossInputs) -> torch.Tensor:
        """A constant with grad through logp. Reads ``logp`` [N, L]. Returns a scalar."""
        calls.append(x.logp.shape)
        return x.logp.sum() * 0.0 + 0.25
    preset = get_preset("quick")
    cfg = preset.train.override({"critic.critic_warmup_updates": 0, "rollout.tasks_per_update": 2,
                                 "rollout.rollouts_per_task": 2, "rollout.max_steps": 4,
                                 "policy.loss_terms": ("ppo_clip", "ptx", "test_const"), "policy.sft_coef": 0.0})
    torch.manual_seed(0)
    tr = Trainer(build_tiny_policy(preset), cfg, tmp_path, log=False)
    assert [(s.name, w) for s, w in tr.loss_terms] == [("ppo_clip", 1.0), ("test_const", 1.0)]
    m = tr.learn(tr.collect()[0]).metrics
    assert calls and m["policy/test_const"] == pytest.approx(0.25)
    assert "policy/sft_loss" not in m
    # policy/loss: the weighted sum of the terms on the sampled outputs (before the minibatch scale)
    assert m["policy/loss"] == pytest.approx(m["policy/pg_loss"] + 0.25, abs=1e-5)
