"""Every planner checkpoint committed under docs/results loads with this navrl (its format
version and input layout match) and plays its own world greedily well above chance — so a
change of the planner's inputs that would strand a published checkpoint fails here, not in a
reader's hands."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from navrl.agent.policy.base import GREEDY
from navrl.eval import evaluate
from navrl.experiments.pipeline import load_policy
from navrl.tasks.registry import SuiteOptions, get_suite

ROOT = Path(__file__).resolve().parents[2]
CHECKPOINTS = sorted(p.relative_to(ROOT) for p in (ROOT / "docs" / "results").rglob("*.pt"))

# Where each checkpoint is evaluated, and the least it must reach there. Floors sit well below
# what each reached when it was written (measured numbers in the comments) and far above chance.
CHECKS = {
    # the paper table's SFT planner: test-ios, first 24 tasks; measured 2026-12-05: 13/24 (100/192 on all)
    "docs/results/paper_table/sft/sft.pt": ("test-ios", 24, SuiteOptions(), 0.3),
    # MiniWoB++ BC planner (21 scripted tasks of table23, ab8f398): 2 episodes of 4 tasks at MiniWoB's frame
    "docs/results/miniwob/bc/policy.pt": ("miniwob", 8, SuiteOptions(
        names=("click-test", "click-button", "focus-text", "enter-text"), phone="160x210@1"), 0.5),
    # MiniWoB++ BC + RL planner of the same run: 2 episodes of 4 of the tasks scripted for issue #28
    "docs/results/miniwob/bc_rl/policy.pt": ("miniwob", 8, SuiteOptions(
        names=("focus-text-2", "click-button-sequence", "enter-text-2", "email-inbox"), phone="160x210@1"), 0.5),
    # MiniWoB++ BC + RL planner over all 113 tasks (BC and DAgger at 41d1a63, RL at 81c59d5): 2 episodes
    # of 4 scripted tasks (100, 100, 100, 100 of 50 each when written: all/rerun_81c59d5.md)
    "docs/results/miniwob/all/bc_rl/policy.pt": ("miniwob", 8, SuiteOptions(
        names=("login-user-popup", "click-tab-2-easy", "phone-book", "click-dialog-2"), phone="160x210@1"), 0.5),
}


def test_the_committed_checkpoints_are_the_ones_checked():
    assert {str(p) for p in CHECKPOINTS} == set(CHECKS)


@pytest.mark.parametrize("rel", sorted(CHECKS))
def test_a_committed_checkpoint_loads_and_plays_its_world(rel):
    path = ROOT / rel
    st = torch.load(path, map_location="cpu", weights_only=False)
    assert st["format"] in ("navrl-policy-1", "navrl-checkpoint-1") and "layout" in st["policy"]
    suite_name, n, opts, floor = CHECKS[rel]
    suite = get_suite(suite_name)
    why = suite.available()
    if why:
        pytest.skip(f"{suite_name} cannot run here: {why}")
    policy = load_policy(path)
    tasks = suite.tasks(n, 0, opts)
    devices = None
    if suite.devices[0] != "phone":
        from navrl.device.browser import BrowserBackend
        from navrl.device.ray_farm import make_device_factory
        devices = make_device_factory(None, devices=4, backend=BrowserBackend(screenshots="off"))
    try:
        res = evaluate(policy.sampled(GREEDY), suite_name, tasks=tasks, devices=devices, batch_size=n if devices is None else 4)
    finally:
        if devices is not None:
            devices.close()
    assert res.masked == 0 and res.n == n
    assert res.successes / n >= floor, res.summary()
