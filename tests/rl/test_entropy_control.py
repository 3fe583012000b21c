"""Adaptive per-factor entropy control (navrl.rl.entropy_control): the controller moves each
factor's coefficient toward holding its target, the loss term weighs each position by its
factor's coefficient, and a trainer step with it raises a collapsed factor's entropy."""
from __future__ import annotations

import math

import pytest
import torch

from navrl.rl.config import ConfigError, TrainConfig
from navrl.rl.entropy_control import EntropyController, factor_weights
from navrl.rl.losses import LossInputs, factor_entropy_bonus, loss_spec


def test_the_coefficient_rises_below_the_target_and_falls_above_it_within_0_and_1():
    c = EntropyController({"kind": 0.5, "text": 2.0}, rate=0.3)
    assert c.observe({"kind": 0.1, "text": 3.0}) == {"kind": 0.3, "node": 0.0, "text": 0.0}
    assert c.observe({"kind": 0.2, "text": 1.0}) == pytest.approx({"kind": 0.6, "node": 0.0, "text": 0.3})
    c.observe({"kind": 0.2})                                     # text not measured: keeps its state
    assert c.coef["kind"] == pytest.approx(0.9) and c.coef["text"] == pytest.approx(0.3)
    c.observe({"kind": 0.2})
    assert c.coef["kind"] == 1.0                                 # clipped at 1
    w = c.observe({"kind": 0.7, "text": 2.5})                     # both above: the bonus stops at once ...
    assert w == {"kind": 0.0, "node": 0.0, "text": 0.0}
    assert c.coef["kind"] == pytest.approx(0.7) and c.coef["text"] == 0.0   # ... and the coefficients decay
    c.observe({"node": 0.0, "kind": 0.0})                         # node has no target: never controlled
    assert c.coef["node"] == 0.0 and c.weights()["kind"] == pytest.approx(1.0)


def test_state_round_trips_and_unknown_factors_are_refused():
    c = EntropyController({"kind": 0.5}, rate=0.25)
    c.observe({"kind": 0.0})
    d = EntropyController({"kind": 0.5}, rate=0.25)
    d.load(c.state())
    assert d.weights() == c.weights() == {"kind": 0.25, "node": 0.0, "text": 0.0}
    with pytest.raises(ValueError, match="unknown decision factor"):
        EntropyController({"frame": 1.0}, rate=0.1)


def test_factor_weights_follow_each_positions_factor():
    w = factor_weights([("kind", "node", "frame"), ("kind", "text", "frame")], {"kind": 0.5, "text": 0.25}, 3)
    assert w.tolist() == [[0.5, 0.0, 0.0], [0.5, 0.25, 0.0]]


def test_the_term_is_the_weighted_token_mean_and_pushes_only_weighted_factors():
    logits = torch.tensor([[[2.0, 0.0, 0.0], [3.0, 0.0, 0.0]]], requires_grad=True)   # [1 sample, 2 positions, 3]
    lp = torch.log_softmax(logits, -1)
    ent = -(lp.exp() * lp).sum(-1)                                                    # [1, 2]
    x = LossInputs(entropy=ent, entropy_weight=torch.tensor([[1.0, 0.0]]), mask=torch.tensor([[True, True]]))
    val = factor_entropy_bonus(x)
    assert float(val.detach()) == pytest.approx(float(ent[0, 0].detach()) / 2, rel=1e-6)    # token mean over both positions
    val.backward()
    assert logits.grad[0, 1].abs().sum() == 0                              # weight 0: no push
    assert logits.grad[0, 0, 0] < 0      # raising the entropy lowers the dominant logit (the loss subtracts the bonus)
    spec = loss_spec("factor_entropy")
    assert spec.maximise and spec.coef == "exploration.entropy_control" and not spec.zero_advantage_free
    assert float(factor_entropy_bonus(LossInputs(entropy=ent, mask=torch.tensor([[True, True]])))) == 0.0


def test_config_checks():
    assert TrainConfig().exploration.entropy_control == 0.0                 # off unless asked for
    with pytest.raises(ConfigError, match="diagnostics_samples"):
        TrainConfig().override({"exploration.entropy_control": 0.05, "run.diagnostics_samples": 0}).validate()
    with pytest.raises(ConfigError, match="entropy_control_rate must be in"):
        TrainConfig().override({"exploration.entropy_control_rate": 0.0}).validate()
    with pytest.raises(ConfigError, match="entropy_target_text must be >= 0"):
        TrainConfig().override({"exploration.entropy_target_text": -1.0}).validate()


def _trainer(tmp_path, name, ctl):
    from navrl.experiments.pipeline import build_policy
    from navrl.rl.presets import get_preset
    from navrl.rl.trainer import Trainer
    p = get_preset("quick-pointer", {"rollout.tasks_per_update": 4, "rollout.rollouts_per_task": 4,
                                     "critic.critic_warmup_updates": 0, "policy.policy_lr": 5e-3,
                                     "exploration.entropy_control": ctl, "exploration.entropy_target_kind": 9.0,
                                     "exploration.entropy_control_rate": 1.0})
    return Trainer(build_policy(p, 0), p.train, tmp_path / name)


def test_a_trainer_with_the_controller_raises_the_kind_entropy_over_one_without(tmp_path):
    """The same rollouts (same seeds), one update each: with the kind factor below its (high)
    target the controller's bonus (weight 1 x 1.0) raises the kind factor's entropy on the
    batch's states; the coefficient is logged and checkpointed."""
    on, off = _trainer(tmp_path, "on", 1.0), _trainer(tmp_path, "off", 0.0)
    trajs = on.collect()[0]
    batch_prompts = [s.prompt for t in trajs for s in t.steps if s.prompt is not None][:64]
    outs = [s.token_ids for t in trajs for s in t.steps if s.prompt is not None][:64]

    def kind_entropy(tr):
        with torch.no_grad():
            sb = tr.policy.score(batch_prompts, outs)
        return float(sb.entropy[:, 0].mean())
    h0 = kind_entropy(on)
    assert h0 == pytest.approx(kind_entropy(off), abs=1e-6)
    r_on, r_off = on.learn(trajs), off.learn(trajs)
    assert r_on.metrics["diag"]["entropy_weight"]["kind"] == 1.0 and "entropy_weight" not in r_off.metrics["diag"]
    assert math.isfinite(r_on.metrics["policy/factor_entropy"])
    assert kind_entropy(on) > kind_entropy(off) + 1e-3
    assert on.checkpoint_state()["entropy_control"]["coef"]["kind"] == 1.0
