"""gigpo_anchored (navrl.rl.advantages): a step shared by siblings is credited by its anchor group
only (0 when they fared alike, even in failed episodes); a lone step takes the episode advantage."""
from __future__ import annotations

import torch

from navrl.rl.advantages import AdvantageInputs, compute_advantages
from navrl.rl.advantages import GIGPO_ANCHORED as NAME


def test_a_correct_end_step_after_a_shared_wrong_choice_is_not_blamed():
    # 4 siblings, 3 steps. State 0 is shared (the hand-over state). Two siblings choose right
    # (-> state 1, then state 2, success), two choose wrong (-> state 3, then state 4: Complete, fail).
    keys = torch.tensor([[0, 1, 2], [0, 1, 2], [0, 3, 4], [0, 3, 4]])
    term = torch.tensor([1.0, 1.0, -1.0, -1.0])
    inp = AdvantageInputs(step_rewards=torch.zeros(4, 3), terminal_rewards=term, step_mask=torch.ones(4, 3, dtype=torch.bool),
                          valid=torch.ones(4, dtype=torch.bool), group_ids=torch.zeros(4, dtype=torch.long), gamma=1.0,
                          state_keys=keys)
    a = compute_advantages(NAME, inp).advantages
    assert a[0, 0] > 0 and a[2, 0] < 0                       # the choice at the shared state is credited
    assert torch.all(a[2:, 1:] == 0) and torch.all(a[:2, 1:] == 0)   # later shared states: siblings alike
    g = compute_advantages("gigpo", inp).advantages
    assert torch.all(g[2:, 2] < 0)                           # gigpo blames the failed episodes' Complete


def test_a_lone_step_takes_the_episode_advantage():
    keys = torch.tensor([[0, 5], [0, 6]])
    inp = AdvantageInputs(step_rewards=torch.zeros(2, 2), terminal_rewards=torch.tensor([1.0, -1.0]),
                          step_mask=torch.ones(2, 2, dtype=torch.bool), valid=torch.ones(2, dtype=torch.bool),
                          group_ids=torch.zeros(2, dtype=torch.long), gamma=1.0, state_keys=keys)
    a = compute_advantages(NAME, inp).advantages
    ep = compute_advantages("grpo", inp).advantages
    assert torch.allclose(a[:, 1], ep[:, 1]) and a[0, 1] > 0 > a[1, 1]


def test_a_config_names_gigpo_anchored_before_the_trainer_is_imported():
    """`navrl train --set advantage.estimator=gigpo_anchored` validates the preset before it
    imports the trainer (which used to be what registered the estimator): a fresh interpreter."""
    import subprocess
    import sys
    code = ("from navrl.rl.presets import get_preset; "
            "print(get_preset('demo', {'advantage.estimator': 'gigpo_anchored'}).train.advantage.estimator)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "gigpo_anchored"
