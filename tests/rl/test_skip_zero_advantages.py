"""Samples with a zero advantage are left out of the policy's forward pass (a speed-up): the
update must be the same one, to float precision, as with every sample scored."""
from __future__ import annotations

import copy

import pytest
import torch

from navrl.agent.policy.pointer import PointerConfig, PointerPlanner, phone_world_vocabulary
from navrl.rl.presets import get_preset
from navrl.rl.sft import SFTConfig, TemplateTeacher, collect_demonstrations, train_sft
from navrl.rl.batch import Batch
from navrl.rl.trainer import Trainer


@pytest.mark.parametrize("sft_coef", [0.0, 1.0])
def test_leaving_out_zero_advantages_gives_the_same_update(tmp_path, sft_coef):
    torch.manual_seed(0)
    pol = PointerPlanner(phone_world_vocabulary(n_tasks=40), PointerConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64))
    demos = collect_demonstrations(pol, 24, TemplateTeacher(compact=True), seed=0)
    train_sft(pol, demos, SFTConfig(n_tasks=24, epochs=2, lr=5e-3, batch_size=32))
    # (no gradient clipping: it would hide a wrong scale of the whole gradient)
    cfg = get_preset("demo").train.override({"rollout.tasks_per_update": 4, "rollout.rollouts_per_task": 4,
                                             "rollout.max_steps": 8, "policy.minibatch_size": 16,
                                             "policy.sft_coef": sft_coef, "policy.sft_batch_size": 8,
                                             "policy.sft_augment": 0.0, "run.torch_threads": 1,
                                             "policy.grad_clip": None})
    runs = []
    for skip in (False, True):
        p = copy.deepcopy(pol)
        tr = Trainer(p, cfg, tmp_path / f"run{skip}", log=False, sft_demos=demos if sft_coef else None)
        tr.skip_zero_advantages = skip
        # SGD: parameters move linearly in the gradients (AdamW would blow the 1e-9 float noise
        # on softmax-invariant head biases, whose true gradient is 0, up to lr-sized steps)
        tr.opt_policy = torch.optim.SGD(p.policy_parameters(), lr=0.1)
        runs.append((tr, p))
    trajs, _ = runs[0][0].collect()
    batch = Batch.from_trajectories(trajs)
    g = torch.Generator().manual_seed(1)
    adv = torch.randn(batch.step_mask.shape, generator=g) * batch.step_mask
    adv[torch.rand(adv.shape, generator=g) < 0.4] = 0.0     # GiGPO batches: 20-45% exactly 0
    zero = sum(float(adv[s.b, s.t]) == 0.0 for s in batch.samples) / len(batch.samples)
    assert 0.2 < zero < 0.6
    for tr, _ in runs:
        tr.rng.seed(5)       # the same minibatch order (collect() drew tasks from the first one's)
    stats = [tr._update_policy(batch, adv) for tr, _ in runs]
    (_, a), (_, b) = runs
    diff = max(float((x - y).detach().abs().max()) for x, y in zip(a.policy_parameters(), b.policy_parameters()))
    moved = max(float((x - y).detach().abs().max()) for x, y in zip(a.policy_parameters(), pol.policy_parameters()))
    assert moved > 1e-4 and diff < 1e-5, (moved, diff)
    if sft_coef:
        assert stats[0]["policy/sft_loss"] == pytest.approx(stats[1]["policy/sft_loss"], rel=1e-4)
