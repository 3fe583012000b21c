"""Runs survive crashes and outages: Ctrl-C saves the last completed update, resume cuts the
metrics back, fully masked updates stop the run, and masked trajectories never reach a loss."""
from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest
import torch

import navrl.rl.trainer as trainer_mod
from navrl.errors import Outage
from navrl.experiments.pipeline import load_policy
from navrl.rl.trainer import Trainer

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def sft_path(quick_sft):
    return quick_sft[0]


def _params(policy) -> list[torch.Tensor]:
    return [p.detach().clone() for p in policy.policy_parameters()]


def _same(a, b) -> bool:
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


def _lines(run) -> list[dict]:
    return [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]


# ------------------------------------------------------------------ masking reaches no loss
def test_masked_trajectories_never_reach_the_policy_or_critic_loss(quick, sft_path, tmp_path, monkeypatch) -> None:
    cfg = quick.train.override({"critic.critic_warmup_updates": 0, "rollout.tasks_per_update": 2,
                                "rollout.rollouts_per_task": 2})
    tr = Trainer(load_policy(sft_path), cfg, tmp_path, log=False)
    trajs, _ = tr.collect()
    bad = 1
    trajs[bad].valid, trajs[bad].invalid_reason = False, "device_lost"
    for s in trajs[bad].steps:
        s.reward = 5.0                                      # what the update must never see
    n_valid_samples = sum(1 for t in trajs if t.valid for s in t.steps if s.token_ids and s.logprobs is not None)
    n_valid_steps = sum(t.length for t in trajs if t.valid)
    assert n_valid_samples > 0 and trajs[bad].length > 0
    policy_rows, critic_masks = [], []
    real_critic = trainer_mod.critic_loss

    def spy_terms(fn):
        def spy(x):
            policy_rows.append(int(x.advantages.shape[0]))
            return fn(x)
        return spy

    def spy_critic(v, g, mask, *a, **kw):
        critic_masks.append(mask.clone())
        return real_critic(v, g, mask, *a, **kw)
    # the clipped PPO term (the only loss term on the sampled outputs here) sees every row
    assert [spec.name for spec, _ in tr.loss_terms] == ["ppo_clip"]
    tr.loss_terms = [(replace(spec, fn=spy_terms(spec.fn)), w) for spec, w in tr.loss_terms]
    monkeypatch.setattr(trainer_mod, "critic_loss", spy_critic)
    tr.learn(trajs)
    assert sum(policy_rows) == n_valid_samples * cfg.policy.ppo_epochs       # only valid trajectories' outputs
    assert len(critic_masks) >= cfg.critic.critic_steps
    for m in critic_masks:
        assert not m[bad].any()                                         # the critic never fits a masked step
        assert int(m.sum()) == n_valid_steps


def test_an_invalid_trajectorys_content_changes_nothing(quick, sft_path, tmp_path) -> None:
    """Stronger than corrupting rewards: the masked trajectory's prompts, outputs and lengths
    change too, so any leak (loss terms, token-mean denominators, critic fits) shows."""
    cfg = quick.train.override({"critic.critic_warmup_updates": 0, "rollout.tasks_per_update": 2,
                                "rollout.rollouts_per_task": 2})
    base = load_policy(sft_path)
    tr0 = Trainer(copy.deepcopy(base), cfg, tmp_path / "a", log=False)
    trajs, _ = tr0.collect()
    bad = copy.deepcopy(trajs)
    bad[1].valid, bad[1].invalid_reason = False, "device_lost"
    worse = copy.deepcopy(bad)
    donor = next(s for t in trajs for s in t.steps if s.prompt)
    for s in worse[1].steps:
        s.reward = 99.0
        s.prompt = donor.prompt + " extra words"
        if s.token_ids:
            s.token_ids = list(s.token_ids) + list(s.token_ids)
            s.logprobs = [-0.01] * len(s.token_ids)
        s.value = 42.0
    worse[1].terminal_reward = -50.0
    out = []
    for tj in (bad, worse):
        torch.manual_seed(0)
        tr = Trainer(copy.deepcopy(base), cfg, tmp_path / "b", log=False)
        tr.critic.net.load_state_dict(tr0.critic.net.state_dict())
        st = tr.learn(tj)
        out.append((_params(tr.policy), [p.detach().clone() for p in tr.critic.parameters()], st.metrics))
    assert _same(out[0][0], out[1][0])
    assert _same(out[0][1], out[1][1])
    assert out[0][2]["samples"] == out[1][2]["samples"]


# ------------------------------------------------------------------ Ctrl-C and resume
def test_ctrl_c_mid_update_saves_the_last_completed_update(quick, sft_path, tmp_path, capsys) -> None:
    from navrl.cli.cmd_train import train_with_progress
    cfg = quick.train.override({"critic.critic_warmup_updates": 0, "run.num_updates": 3, "run.checkpoint_every": 10})
    torch.manual_seed(0)
    ref = Trainer(load_policy(sft_path), cfg, tmp_path / "ref", log=False)
    ref.train_step()
    p1 = _params(ref.policy)
    ref.train_step()
    torch.manual_seed(0)
    run = tmp_path / "run"
    tr = Trainer(load_policy(sft_path), cfg, run)
    real = tr._update_policy
    calls = {"n": 0}

    def interrupted(*a, **kw):     # Ctrl-C after update 2's optimiser steps, before it completes
        calls["n"] += 1
        out = real(*a, **kw)
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return out
    tr._update_policy = interrupted
    with pytest.raises(KeyboardInterrupt):
        train_with_progress(tr, 3, 0)
    assert tr.update == 1 and not _same(_params(tr.policy), p1)      # the live state is mid-update 2
    assert (run / "checkpoints" / "last.txt").read_text() == "update_00001.pt"
    assert sorted(p.name for p in (run / "checkpoints").glob("*.pt")) == ["update_00001.pt"]
    assert _same(_params(load_policy(run)), p1)                         # the checkpoint holds update 1
    b = Trainer(load_policy(run), cfg, run)
    b.resume(run)
    assert b.update == 1
    b.train_step()
    assert _same(_params(b.policy), _params(ref.policy))   # = the uninterrupted run after 2 updates
    assert [r["update"] for r in _lines(run) if r["kind"] == "update"] == [1, 2]


def test_resume_after_a_torn_line_leaves_a_well_formed_file(quick, sft_path, tmp_path) -> None:
    cfg = quick.train.override({"critic.critic_warmup_updates": 1, "run.num_updates": 4})
    run = tmp_path / "run"
    a = Trainer(load_policy(sft_path), cfg, run)
    a.train_step()
    a.train_step()
    a.save_checkpoint()
    a.train_step()                                          # update 3 logged, never checkpointed
    with open(run / "metrics.jsonl", "ab") as f:
        f.write(b'{"kind": "update", "update": 4, "succ')   # the crash tore this line
    b = Trainer(load_policy(run), cfg, run)
    b.resume(run)
    assert b.update == 2
    b.train_step()
    b.train_step()
    raw = (run / "metrics.jsonl").read_bytes()
    assert raw.endswith(b"\n")
    recs = _lines(run)                                      # every line parses: nothing glued
    ups = [r["update"] for r in recs if r["kind"] == "update"]
    assert ups == [1, 2, 3, 4] and len(set(ups)) == len(ups)


# ------------------------------------------------------------------ outages
def _all_masked(trajs):
    for t in trajs:
        t.valid, t.invalid_reason = False, "device_lost"
    return trajs


def test_fully_masked_updates_are_not_results_and_stop_the_run(quick, sft_path, tmp_path) -> None:
    cfg = quick.train.override({"critic.critic_warmup_updates": 0, "run.max_masked_updates": 2})
    tr = Trainer(load_policy(sft_path), cfg, tmp_path)
    real = tr.collect
    outage = {"on": True}
    tr.collect = lambda progress=None: ((_all_masked(real()[0]), 0.0) if outage["on"] else real())
    p0 = _params(tr.policy)
    c0 = [p.detach().clone() for p in tr.critic.parameters()]
    st = tr.train_step()
    m = st.metrics
    assert m["all_masked"] is True and m["success"] is None and m["mean_return"] is None
    assert m["masked"] == cfg.trajectories_per_update and m["masked_fraction"] == 1.0
    assert _same(p0, _params(tr.policy)) and _same(c0, [p.detach().clone() for p in tr.critic.parameters()])
    outage["on"] = False
    tr.train_step()                                         # a measured update resets the streak
    assert tr.masked_streak == 0
    outage["on"] = True
    tr.train_step()
    with pytest.raises(Outage, match="last 2 updates"):
        tr.train_step()
    assert tr.update == 4
    recs = _lines(tmp_path)
    assert [r["success"] is None for r in recs] == [True, False, True, True]
    assert all(r["success"] != 0 or not r.get("all_masked") for r in recs)


def test_cli_stops_a_fully_masked_run_with_exit_3_and_a_checkpoint(sft_path, tmp_path, monkeypatch, capsys) -> None:
    """``navrl train`` during an outage (every rollout's device lost; the quick planner never
    reaches a device action, so the outage is injected at collection): one line, exit 3, the
    checkpoint of the last update intact, no 0% logged."""
    from navrl.cli.main import main
    real = Trainer.collect
    monkeypatch.setattr(Trainer, "collect", lambda self, progress=None: (_all_masked(real(self)[0]), 0.0))
    run = tmp_path / "run"
    rc = main(["train", "--preset", "quick", "--init", str(sft_path), "--out", str(run), "--updates", "6",
               "--max-masked-updates", "2"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert rc == 3
    assert len(err) == 1 and "outage" in err[0] and "last update: device_lost 4" in err[0], err
    assert (run / "checkpoints" / "last.txt").read_text() == "update_00002.pt"
    st = trainer_mod.load_checkpoint_file(run)
    assert st["update"] == 2 and st["masked_streak"] == 2
    recs = _lines(run)
    assert [x["update"] for x in recs] == [1, 2] and all(x["success"] is None for x in recs)


def test_cli_resumes_a_run_whose_checkpoint_an_earlier_version_wrote(sft_path, tmp_path, capsys) -> None:
    """A checkpoint's config as navrl wrote it before TrainConfig had sections (flat names):
    ``navrl train --resume`` moves its names to their sections and carries on; the same flat
    name given with ``--set`` is refused."""
    from navrl.cli.main import main
    run = tmp_path / "run"
    base = ["train", "--preset", "quick", "--init", str(sft_path), "--set", "run.eval_suites=[\"test-ios\"]",
            "--set", "run.eval_episodes=2"]
    assert main([*base, "--out", str(run), "--updates", "1", "--set", "policy.clip_eps=0.25"]) == 0
    path = run / "checkpoints" / "update_00001.pt"
    st = torch.load(path, map_location="cpu", weights_only=False)
    flat = {k: v for section in st["config"].values() for k, v in section.items()}
    from navrl.rl.config import _PATHS
    assert flat["clip_eps"] == 0.25 and len(flat) == len(_PATHS)
    later = {"loss_terms", "diagnostics_samples", "handover_k", "curriculum_threshold", "curriculum_window",
             "explore_arg", "dynamic_sampling"}                           # (fields that came with or after the sections)
    st["config"] = {k: v for k, v in flat.items() if k not in later}
    torch.save(st, path)
    capsys.readouterr()
    assert main([*base, "--resume", "--out", str(run), "--updates", "2"]) == 0
    st = trainer_mod.load_checkpoint_file(run)
    assert st["update"] == 2 and st["config"]["policy"]["clip_eps"] == 0.25      # saved in sections now
    assert main([*base, "--resume", "--out", str(run), "--updates", "3", "--set", "clip_eps=0.3"]) == 2
    assert "'clip_eps' is now 'policy.clip_eps'" in capsys.readouterr().err
