"""``navrl train`` without ``--init``: a fresh planner of the preset's kind trained by RL alone
(issue #26: "trains from scratch, as the MiniWoB experiment does"; it used to refuse)."""
from __future__ import annotations

import json

import torch

from navrl.cli.main import main

torch.set_num_threads(1)


def test_train_without_init_runs_one_update_from_a_fresh_planner(tmp_path, capsys):
    out = tmp_path / "r"
    rc = main(["train", "--preset", "quick-pointer", "--updates", "1", "--out", str(out),
               "--set", "rollout.tasks_per_update=2", "--set", "rollout.rollouts_per_task=2",
               "--set", "run.eval_every=0",
               "--set", "run.eval_episodes=2", "--set", "run.eval_suites=[\"test-ios\"]"])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "no --init: a fresh pointer planner" in text
    assert "PPO-ptx coefficient 0" in text          # no demonstrations without an SFT stage
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert len([r for r in rows if "update" in r]) >= 1
    assert (out / "parts.json").exists()


def test_train_without_init_keeps_an_asked_for_ptx_coefficient(tmp_path, capsys):
    from navrl.cli.cmd_train import _from_scratch
    from navrl.rl.presets import get_preset
    _, p = _from_scratch(get_preset("quick-pointer"), {})
    assert p.train.policy.sft_coef == 0.0
    _, q = _from_scratch(get_preset("quick-pointer", {"policy.sft_coef": 0.5}), {"policy.sft_coef": 0.5})
    assert q.train.policy.sft_coef == 0.5
