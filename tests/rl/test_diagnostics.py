"""Exploration diagnostics pinned on hand-computed cases (navrl.rl.diagnostics)."""
from __future__ import annotations

from types import SimpleNamespace

import json
import math

import torch

from navrl.rl.diagnostics import (factor_entropy, success_by_family, success_by_template, zero_advantage_share,
                                  zero_variance_groups)


def test_zero_variance_groups_counts_groups_whose_valid_outcomes_are_equal():
    outcomes = torch.tensor([1., 1., 0., 1., 0., 0., 1., 5.])
    groups = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
    valid = torch.tensor([True, True, True, True, True, True, True, False])
    # group 0 all 1 (flat), group 1 mixed, group 2 all 0 (flat), group 3 one valid member: not counted
    assert zero_variance_groups(outcomes, groups, valid) == (2, 3)


def test_zero_variance_groups_ignore_what_masked_members_hold():
    groups = torch.tensor([0, 0, 0])
    valid = torch.tensor([True, True, False])
    for junk in (0.0, 1.0, float("nan"), float("inf")):
        assert zero_variance_groups(torch.tensor([1., 1., junk]), groups, valid) == (1, 1)


def test_zero_advantage_share_over_the_masked_steps_only():
    adv = torch.tensor([[0.0, 0.5, 0.0], [0.0, -1.0, 7.0]])
    mask = torch.tensor([[True, True, True], [True, True, False]])
    assert zero_advantage_share(adv, mask) == 3 / 5
    assert zero_advantage_share(adv, torch.zeros_like(mask)) is None


def test_factor_entropy_averages_each_named_factor_where_it_was_decided():
    ent = torch.tensor([[1.0, 0.2, 0.0], [3.0, 0.4, 0.0], [2.0, 9.0, 0.5]])
    mask = torch.tensor([[1., 1., 0.], [1., 1., 0.], [1., 0., 1.]])
    names = [("kind", "node", "frame"), ("kind", "text", "frame"), ("kind", "node", "frame")]
    out = factor_entropy(ent, mask, names)
    assert math.isclose(out["kind"], 2.0, rel_tol=1e-6)
    assert math.isclose(out["node"], 0.2, rel_tol=1e-6)          # the 9.0 of row 3 is not decided
    assert math.isclose(out["text"], 0.4, rel_tol=1e-6)
    assert math.isclose(out["frame"], 0.5, rel_tol=1e-6)


def test_success_by_family_counts_valid_trajectories_per_family():
    def t(fam, ok, valid=True):
        return SimpleNamespace(task={"family": fam}, success=ok, valid=valid)
    trajs = [t("single", True), t("single", False), t("multi", False), t("multi", True, valid=False),
             SimpleNamespace(task={"template": "tpl"}, success=True, valid=True)]
    assert success_by_family(trajs) == {"multi": 0.0, "single": 0.5, "tpl": 1.0}
    tpl = [SimpleNamespace(task={"family": "single", "template": x}, success=ok, valid=v)
           for x, ok, v in (("a", True, True), ("a", False, True), ("b", True, True), ("b", False, False))]
    assert success_by_template(tpl) == {"a": 0.5, "b": 1.0} and success_by_family(tpl) == {"single": 2 / 3}
    assert success_by_template([SimpleNamespace(task={}, success=True, valid=True)]) == {"?": 1.0}


def test_pointer_planner_names_its_factors_by_the_kind_it_chose():
    from navrl.agent.policy.pointer import PointerPlanner, phone_world_vocabulary
    from navrl.agent.policy.pointer.features import KIND_ID, Decision
    from navrl.rl.presets import get_preset
    pol = PointerPlanner(phone_world_vocabulary(), get_preset("quick-pointer").pointer, seed=0)
    tap = Decision(KIND_ID["tap"], 0, -1).ids()
    typ = Decision(KIND_ID["type"], 0, -1).ids()
    assert pol.decision_factors([tap, typ], 3) == [("kind", "node", "frame"), ("kind", "text", "frame")]


def _pointer_trainer(tmp_path, name, samples):
    from navrl.experiments.pipeline import build_policy
    from navrl.rl.presets import get_preset
    from navrl.rl.trainer import Trainer
    p = get_preset("quick-pointer", {"run.diagnostics_samples": samples, "rollout.tasks_per_update": 3,
                                     "rollout.rollouts_per_task": 3, "critic.critic_warmup_updates": 0})
    return Trainer(build_policy(p, 0), p.train, tmp_path / name)


def test_every_update_logs_its_diagnostics_and_they_change_nothing_it_learns(tmp_path):
    a, b = _pointer_trainer(tmp_path, "a", 256), _pointer_trainer(tmp_path, "b", 0)
    for _ in range(2):
        ra, rb = a.train_step().metrics, b.train_step().metrics
        d = ra["diag"]
        assert 0 <= d["groups"] <= 3
        assert d["zero_variance_groups"] is None or 0.0 <= d["zero_variance_groups"] <= 1.0
        assert 0.0 <= d["zero_advantage_steps"] <= 1.0
        assert set(d["success_by_family"]) and all(0.0 <= v <= 1.0 for v in d["success_by_family"].values())
        assert set(d["success_by_template"]) and all(0.0 <= v <= 1.0 for v in d["success_by_template"].values())
        assert "kind" in d["entropy"] and all(v >= 0.0 for v in d["entropy"].values())
        assert "entropy" not in rb["diag"]                  # 0 samples: no entropy pass
        assert ra["success"] == rb["success"] and ra["samples"] == rb["samples"]
    for pa, pb in zip(a.policy.policy_parameters(), b.policy.policy_parameters()):
        assert torch.equal(pa, pb)                          # the entropy pass draws from no RNG of the run
    rec = [json.loads(x) for x in (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rec if r["kind"] == "update"] == [1, 2] and "diag" in rec[-1]
