"""exploration.explore_prior: the trainer keeps a frozen copy of the planner it was given as the
policy's prior, rollouts mix it into every factor, and an update moves the policy, never the prior."""
from __future__ import annotations

import pytest
import torch

from navrl.rl.config import ConfigError, TrainConfig


def _trainer(tmp_path, **over):
    from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
    from navrl.rl.presets import get_preset
    from navrl.rl.trainer import Trainer
    pol = PointerPlanner(phone_world_vocabulary(n_tasks=40), PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64))
    cfg = get_preset("demo", {"rollout.tasks_per_update": 2, "rollout.rollouts_per_task": 2, "rollout.max_steps": 4,
                              "data.task_pool": 0, "policy.sft_coef": 0.0, "run.torch_threads": 1,
                              "critic.critic_warmup_updates": 0, **over}).train
    return pol, Trainer(pol, cfg, tmp_path / "run", log=False)


def test_the_prior_is_a_frozen_copy_of_the_initial_planner_and_the_update_moves_only_the_policy(tmp_path):
    pol, tr = _trainer(tmp_path, **{"exploration.explore_prior": 0.3})
    assert pol.prior is tr.ref_policy and pol.prior is not pol
    before = {k: v.clone() for k, v in pol.model.state_dict().items()}
    assert all(torch.equal(v, pol.prior.model.state_dict()[k]) for k, v in before.items())
    seen = []
    orig = pol._forward_chunk

    def spy(*a, **k):
        seen.append(pol.explore_prior)
        return orig(*a, **k)
    pol._forward_chunk = spy
    tr.train_step()
    assert 0.3 in seen                                         # the rollouts sampled with the prior mixed in
    assert pol.explore_prior == 0.0                            # ... and only they
    moved = any(not torch.equal(v, pol.model.state_dict()[k]) for k, v in before.items())
    kept = all(torch.equal(v, pol.prior.model.state_dict()[k]) for k, v in before.items())
    assert moved and kept


def test_no_prior_is_kept_at_the_default(tmp_path):
    pol, tr = _trainer(tmp_path)
    assert pol.prior is None and tr.ref_policy is None


@pytest.mark.parametrize("over", [{"exploration.explore_prior": -0.1},
                                  {"exploration.explore_prior": 0.5, "exploration.explore": 0.5},
                                  {"exploration.explore_prior": 0.8, "exploration.explore_arg": 0.3}])
def test_explore_prior_leaves_room_for_the_policy(over):
    with pytest.raises(ConfigError, match="explore_prior"):
        TrainConfig().override(over).validate()
