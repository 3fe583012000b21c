"""Self-imitation: only outputs with a positive step reward (or of a successful episode) and a
positive advantage enter the buffer, and one step on the term raises their log-likelihood."""
from __future__ import annotations

import torch

from navrl.rl.batch import Batch
from navrl.rl.config import TrainConfig
from navrl.rl.self_imitation import positive_outputs, self_imitation_loss
from navrl.rollout.records import Step, Trajectory


def _traj(rewards, group, prompts):
    steps = [Step(t=i, output="o", parsed=True, reward=r, prompt=p, token_ids=[i + 1], logprobs=[-1.0])
             for i, (r, p) in enumerate(zip(rewards, prompts))]
    return Trajectory(task={"id": f"t{group}"}, steps=steps, group=group)


def test_only_rewarded_decisions_with_a_positive_advantage_are_kept():
    trajs = [_traj([1.0, -1.0, 0.5], 0, ["a0", "a1", "a2"]), _traj([1.0, 0.0], 1, ["b0", "b1"])]
    batch = Batch.from_trajectories(trajs)
    adv = torch.tensor([[0.3, 0.8, -0.2], [0.0, 0.9, 0.0]])
    # a0: reward +, adv +  -> kept;  a1: adv + but reward -;  a2: reward + but adv -;
    # b0: reward + but adv 0;  b1: adv + but reward 0
    assert positive_outputs(batch, adv) == [("a0", [1])]


def test_episode_selection_keeps_every_positive_advantage_output_of_a_successful_episode():
    trajs = [_traj([0.0, 0.0, 1.0], 0, ["a0", "a1", "a2"]), _traj([1.0, 0.0], 1, ["b0", "b1"])]
    batch = Batch.from_trajectories(trajs)
    adv = torch.tensor([[0.3, -0.1, 0.5], [0.4, 0.9, 0.0]])
    won = torch.tensor([True, False])
    # episode a succeeded: a0 and a2 (adv +) kept though a0 earned no step reward, a1 (adv -) not;
    # episode b failed: nothing, though b0 earned a step reward with a positive advantage
    assert positive_outputs(batch, adv, won) == [("a0", [1]), ("a2", [3])]
    assert positive_outputs(batch, adv) == [("a2", [3]), ("b0", [1])]


def test_the_selection_is_validated():
    import pytest
    from navrl.rl.config import ConfigError
    assert TrainConfig().exploration.self_imitation_select == "step"
    TrainConfig().override({"exploration.self_imitation_select": "episode"}).validate()
    with pytest.raises(ConfigError, match="self_imitation_select must be one of step, episode"):
        TrainConfig().override({"exploration.self_imitation_select": "all"}).validate()


def test_one_step_on_the_term_raises_the_likelihood_of_the_buffer():
    from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
    from navrl.rl.sft import TemplateTeacher, collect_demonstrations
    torch.manual_seed(0)
    pol = PointerPlanner(phone_world_vocabulary(n_tasks=40), PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64))
    demos = collect_demonstrations(pol, 8, TemplateTeacher(compact=True), seed=0)
    items = [(d.prompt, pol.encode_demo(d.prompt, d.target)) for d in demos[:24]]
    items = [(p, ids) for p, ids in items if ids is not None]
    opt = torch.optim.SGD(pol.policy_parameters(), lr=0.5)
    with torch.no_grad():
        before = float(self_imitation_loss(pol, items))
    loss = self_imitation_loss(pol, items)
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        after = float(self_imitation_loss(pol, items))
    assert after < before - 0.05, (before, after)
    assert TrainConfig().exploration.self_imitation == 0.0          # off unless asked for
