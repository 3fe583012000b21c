"""TrainConfig defaults, validation and derived values (navrl.rl.config)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from navrl.rl.config import ConfigError, TrainConfig
from navrl.rl.estimators import AdvantageEstimator


def test_design_defaults():
    c = TrainConfig().validate()
    assert (c.tasks_per_update, c.rollouts_per_task, c.max_steps) == (16, 8, 30)
    assert c.trajectories_per_update == 128
    assert (c.gamma, c.lam, c.clip_eps) == (0.5, 1.0, 0.2)
    assert (c.critic_warmup_updates, c.critic_lr_ratio) == (15, 100.0)
    assert c.estimator is AdvantageEstimator.PPO
    assert c.critic_lr == pytest.approx(c.policy_lr * 100.0)


def test_policy_frozen_during_warmup_only_for_critic_estimators():
    c = TrainConfig()
    assert [c.policy_frozen(u) for u in (0, 14, 15, 100)] == [True, True, False, False]
    assert not TrainConfig(critic_warmup_updates=0).policy_frozen(0)
    for name in ("grpo", "gigpo"):
        assert not TrainConfig(estimator=name).policy_frozen(0)  # no critic to warm up
    for name in ("ppo_terminal_only", "gigppo"):
        assert TrainConfig(estimator=name).policy_frozen(0)
    with pytest.raises(ConfigError):
        c.policy_frozen(-1)


def test_critic_lr_follows_ratio():
    assert TrainConfig(policy_lr=2e-6, critic_lr_ratio=50.0).critic_lr == pytest.approx(1e-4)


@pytest.mark.parametrize(
    "changes",
    [
        {"gamma": -0.1},
        {"gamma": 1.01},
        {"gamma": float("nan")},
        {"lam": 0.95},
        {"tasks_per_update": 0},
        {"rollouts_per_task": -1},
        {"max_steps": 0},
        {"num_updates": -3},
        {"critic_warmup_updates": -1},
        {"ppo_epochs": 0},
        {"minibatch_size": 2.5},
        {"tasks_per_update": True},
        {"policy_lr": 0.0},
        {"critic_lr_ratio": -1.0},
        {"clip_eps": 0.0},
        {"clip_eps": 1.5},
        {"kl_coef": -0.1},
        {"entropy_coef": float("inf")},
        {"value_clip": 0.0},
        {"grad_clip": -1.0},
        {"estimator": "reinforce++"},
        {"estimator": "grpo", "rollouts_per_task": 1},
        {"whiten_advantages": "yes"},
    ],
)
def test_invalid_values_raise_config_error(changes):
    with pytest.raises(ConfigError):
        TrainConfig(**changes).validate()
    assert issubclass(ConfigError, ValueError)


def test_string_estimator_is_coerced_and_dict_round_trip():
    c = TrainConfig(estimator="gigppo", value_clip=0.5, grad_clip=None)
    assert c.estimator is AdvantageEstimator.GIGPPO
    d = c.to_dict()
    assert d["estimator"] == "gigppo"
    assert TrainConfig.from_dict(d) == c
    with pytest.raises(ConfigError, match="unknown"):
        TrainConfig.from_dict({"gama": 0.5})


def test_every_field_has_a_docstring():
    docs = TrainConfig.field_docs()
    names = [f.name for f in dataclasses.fields(TrainConfig)]
    assert list(docs) == names
    assert all(len(docs[n]) > 10 for n in names)
    assert "docs/design.md §5e: 16" in docs["tasks_per_update"]


def test_config_import_pulls_no_torch():
    # every CLI command imports ConfigError, so the module stays light; validate() reads the
    # estimator registry, which lives with the estimator functions (torch), as training does
    code = ("import sys, navrl.rl.config as c; d = c.TrainConfig(estimator='grpo').to_dict(); "
            "c.TrainConfig.field_docs(); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
