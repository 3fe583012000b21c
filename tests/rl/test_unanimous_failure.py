"""exploration.unanimous_fail_penalty: a step the judge failed and the estimator left without
credit (its siblings all did the same and fared alike) gets -penalty; nothing else moves."""
from __future__ import annotations

import pytest
import torch

from navrl.rl.advantages import (AdvantageInputs, compute_advantages, unanimous_anchor_steps,
                                 unanimous_failure_credit)
from navrl.rl.batch import Batch
from navrl.rollout.records import Step, Trajectory


def test_hand_computed_case():
    adv = torch.tensor([[0.0, 0.5, 0.0, 0.0],
                        [1e-9, -0.3, 0.0, 0.0]])
    failed = torch.tensor([[True, True, False, True],
                           [True, True, True, True]])
    mask = torch.tensor([[True, True, True, False],
                         [True, True, False, False]])
    out, credited = unanimous_failure_credit(adv, failed, mask, 0.7)
    want = torch.tensor([[-0.7, 0.5, 0.0, 0.0],
                         [-0.7, -0.3, 0.0, 0.0]])
    assert torch.allclose(out, want)
    assert credited.tolist() == [[True, False, False, False], [True, False, False, False]]


def test_masked_entries_are_never_read_or_written():
    torch.manual_seed(0)
    adv = torch.randn(3, 5) * (torch.rand(3, 5) > 0.5)
    failed = torch.rand(3, 5) > 0.3
    mask = torch.rand(3, 5) > 0.4
    out, _ = unanimous_failure_credit(adv, failed, mask, 1.0)
    adv2 = torch.where(mask, adv, torch.zeros(()))            # what sits under the mask does not matter
    failed2 = failed | ~mask
    out2, _ = unanimous_failure_credit(adv2, failed2, mask, 1.0)
    assert torch.equal(out[mask], out2[mask])
    assert torch.equal(out[~mask], adv[~mask])                # and is returned untouched


def test_penalty_zero_is_the_identity_and_negative_is_refused():
    adv = torch.zeros(2, 3)
    out, credited = unanimous_failure_credit(adv, torch.ones(2, 3, dtype=torch.bool), torch.ones(2, 3, dtype=torch.bool), 0.0)
    assert torch.equal(out, adv) and not bool(credited.any())
    with pytest.raises(ValueError, match="penalty"):
        unanimous_failure_credit(adv, adv.bool(), adv.bool(), -1.0)


def _traj(group, verdicts, rewards, terminal=0.0):
    steps = [Step(t=i, output="", parsed=True, verdict=v, reward=r, ui_text=f"screen{i}", phash=i)
             for i, (v, r) in enumerate(zip(verdicts, rewards))]
    return Trajectory(task={"id": f"t{group}"}, steps=steps, group=group, terminal_reward=terminal)


def test_batch_marks_judged_failures_only():
    tr = _traj(0, ["success", "fail", "unjustified", "justified", None, "overcomplete"], [1, 0, 0, 1, 0, -2])
    b = Batch.from_trajectories([tr, _traj(0, ["fail"], [0])])
    assert b.step_failed.tolist() == [[False, True, True, False, False, False],
                                      [True, False, False, False, False, False]]


def test_with_the_anchored_estimator_only_the_unanimous_failures_are_credited():
    trajs = [_traj(0, ["fail", "fail"], [0, 0]), _traj(0, ["fail", "fail"], [0, 0]),      # alike, failed
             _traj(1, ["fail"], [0]), _traj(1, ["success"], [1], terminal=2.0),             # spread
             _traj(2, ["success"], [1], terminal=2.0), _traj(2, ["success"], [1], terminal=2.0)]  # alike, passed
    b = Batch.from_trajectories(trajs)
    mask = b.step_mask & b.valid[:, None]
    adv = compute_advantages("gigpo_anchored", AdvantageInputs(
        step_rewards=b.step_rewards, terminal_rewards=b.terminal_rewards, step_mask=b.step_mask, valid=b.valid,
        group_ids=b.group_ids, gamma=0.5, state_keys=b.state_keys)).advantages
    assert adv[0].abs().max() < 1e-6 and adv[4, 0] == 0                # the estimator gives them nothing
    out, credited = unanimous_failure_credit(adv, b.step_failed, mask, 1.0)
    assert credited.tolist() == [[True, True], [True, True], [False, False], [False, False],
                                 [False, False], [False, False]]
    assert out[:2].tolist() == [[-1.0, -1.0], [-1.0, -1.0]]
    assert out[2, 0] == adv[2, 0] < 0 < out[3, 0] == adv[3, 0]         # a comparison with spread keeps its credit
    assert out[4, 0] == 0 and out[5, 0] == 0                           # unanimous successes are not touched
    # an invalid trajectory's steps are masked: never credited
    trajs[0].valid = False
    b = Batch.from_trajectories(trajs)
    _, credited = unanimous_failure_credit(adv, b.step_failed, b.step_mask & b.valid[:, None], 1.0)
    assert credited[0].tolist() == [False, False] and credited[1].tolist() == [True, True]


def test_trainer_logs_the_credited_share(tmp_path):
    from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
    from navrl.rl.presets import get_preset
    from navrl.rl.trainer import Trainer
    pol = PointerPlanner(phone_world_vocabulary(n_tasks=40), PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64))
    over = {"rollout.tasks_per_update": 2, "rollout.rollouts_per_task": 2, "rollout.max_steps": 4,
            "data.task_pool": 0, "policy.sft_coef": 0.0, "run.torch_threads": 1, "critic.critic_warmup_updates": 0,
            "advantage.estimator": "gigpo_anchored", "exploration.rollout_temperature": 0.05}
    stats = []
    for pen in (0.0, 1.0):
        cfg = get_preset("demo", {**over, "exploration.unanimous_fail_penalty": pen}).train
        torch.manual_seed(0)
        tr = Trainer(pol, cfg, tmp_path / f"run{pen}", log=False)
        stats.append(tr.train_step())
    assert "unanimous_fail_steps" not in stats[0].metrics["diag"]
    share = stats[1].metrics["diag"]["unanimous_fail_steps"]
    assert 0 < share <= 1   # an untrained planner at T 0.05: siblings act alike and the judge fails them


def test_a_negative_penalty_is_a_config_error():
    from navrl.rl.config import ConfigError, TrainConfig
    with pytest.raises(ConfigError, match="unanimous_fail_penalty"):
        TrainConfig().override({"exploration.unanimous_fail_penalty": -0.5}).validate()
    TrainConfig().override({"exploration.unanimous_fail_penalty": 0.5}).validate()


def test_unanimous_anchor_steps_hand_computed():
    # group 0: two siblings at state 0 both failed (different choices do not matter); at state 1
    # one failed and one did not; group 1: one trajectory alone at state 0 (a group of one is not unanimous)
    state = torch.tensor([[0, 1], [0, 1], [0, -1]])
    failed = torch.tensor([[True, True], [True, False], [True, False]])
    groups = torch.tensor([0, 0, 1])
    mask = state >= 0
    got = unanimous_anchor_steps(state, groups, failed, mask)
    assert got.tolist() == [[True, False], [True, False], [False, False]]
    mask2 = mask.clone()
    mask2[1, 0] = False                                       # the sibling masked: state 0 is alone now
    assert unanimous_anchor_steps(state, groups, failed, mask2).tolist() == [[False, False], [False, False], [False, False]]


def test_a_unanimously_failed_state_loses_its_luck_based_credit():
    # both siblings failed their step at the same state (one went home, one typed the wrong text);
    # what came later differed, so the anchored comparison is +-1: it measures the later luck,
    # not the choices -> -penalty for both
    trajs = [_traj(0, ["fail", "success"], [0, 1], terminal=2.0), _traj(0, ["fail", "fail"], [0, 0])]
    trajs[1].steps[1].ui_text = "elsewhere"
    b = Batch.from_trajectories(trajs)
    mask = b.step_mask & b.valid[:, None]
    adv = compute_advantages("gigpo_anchored", AdvantageInputs(
        step_rewards=b.step_rewards, terminal_rewards=b.terminal_rewards, step_mask=b.step_mask, valid=b.valid,
        group_ids=b.group_ids, gamma=0.5, state_keys=b.state_keys)).advantages
    assert adv[0, 0] > 0 > adv[1, 0]
    same = unanimous_anchor_steps(b.state_keys, b.group_ids, b.step_failed, mask)
    assert same[:, 0].tolist() == [True, True] and same[:, 1].tolist() == [False, False]
    out, credited = unanimous_failure_credit(adv, b.step_failed, mask, 0.5, same)
    assert out[:, 0].tolist() == [-0.5, -0.5]
    assert out[0, 1] == adv[0, 1] and out[1, 1] == adv[1, 1]   # singletons with their own credit
    out_only, _ = unanimous_failure_credit(adv, b.step_failed, mask, 0.5)   # the no-credit rule alone
    assert torch.equal(out_only, adv)
    # one sibling passing the judge at that state: a real comparison, left alone
    trajs[0].steps[0].verdict = "success"
    b = Batch.from_trajectories(trajs)
    assert not bool(unanimous_anchor_steps(b.state_keys, b.group_ids, b.step_failed, mask)[:, 0].any())
