"""The main job on the tiny planner: SFT, PPO updates, warm-up, masking, resume, bad input."""
from __future__ import annotations

import copy
import subprocess

import pytest
import torch

from clirun import run_navrl

from navrl.experiments.pipeline import build_tiny_policy, load_policy
from navrl.rl.sft import collect_demonstrations, heldout_loss
from navrl.rl.trainer import Trainer

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def sft_policy(quick_sft):
    return quick_sft


def _params(policy) -> list[torch.Tensor]:
    return [p.detach().clone() for p in policy.policy_parameters()]


def _same(a, b) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a, b))


def test_sft_lowers_heldout_loss(sft_policy) -> None:
    _, res = sft_policy
    assert res.heldout_after < res.heldout_before - 0.5
    assert res.n_train > 0 and res.n_heldout > 0


def test_policy_frozen_during_warmup_then_changes(quick, sft_policy, tmp_path) -> None:
    policy = load_policy(sft_policy[0])
    cfg = quick.train.override({"critic.critic_warmup_updates": 1})
    tr = Trainer(policy, cfg, tmp_path, log=False)
    p0 = _params(policy)
    c0 = [p.detach().clone() for p in tr.critic.parameters()]
    st = tr.train_step()
    assert st.metrics["policy_frozen"] is True
    assert _same(p0, _params(policy))                                   # bit-identical policy
    assert not _same(c0, [p.detach().clone() for p in tr.critic.parameters()])   # the critic learned
    st = tr.train_step()
    assert st.metrics["policy_frozen"] is False
    assert not _same(p0, _params(policy))                               # now the policy moves
    assert "policy/clip_fraction" in st.metrics and "critic/explained_variance" in st.metrics


def test_update_ignores_invalid_trajectories(quick, sft_policy, tmp_path) -> None:
    cfg = quick.train.override({"critic.critic_warmup_updates": 0, "rollout.tasks_per_update": 2,
                                "rollout.rollouts_per_task": 2})
    base = load_policy(sft_policy[0])
    tr0 = Trainer(copy.deepcopy(base), cfg, tmp_path / "a", log=False)
    trajs, _ = tr0.collect()
    # mark one trajectory invalid (as an infrastructure failure would), then corrupt everything in it
    bad = copy.deepcopy(trajs)
    bad[1].valid, bad[1].invalid_reason = False, "device_lost"
    worse = copy.deepcopy(bad)
    for s in worse[1].steps:
        s.reward = 99.0
        s.logprobs = [-0.01] * len(s.logprobs or [])
    worse[1].terminal_reward = -50.0
    results = []
    for tj in (bad, worse):
        torch.manual_seed(0)
        tr = Trainer(copy.deepcopy(base), cfg, tmp_path / "b", log=False)
        tr.critic.net.load_state_dict(tr0.critic.net.state_dict())
        tr.learn(tj)
        results.append((_params(tr.policy), [p.detach().clone() for p in tr.critic.parameters()]))
    assert _same(results[0][0], results[1][0])
    assert _same(results[0][1], results[1][1])


def test_resume_reproduces_the_next_update(quick, sft_policy, tmp_path) -> None:
    cfg = quick.train.override({"critic.critic_warmup_updates": 1, "run.num_updates": 3})
    a = Trainer(load_policy(sft_policy[0]), cfg, tmp_path / "a", log=False)
    a.train_step()
    a.train_step()
    ck = a.save_checkpoint()
    ref = a.train_step().metrics
    b = Trainer(load_policy(ck), cfg, tmp_path / "b", log=False)
    b.load_checkpoint(ck)
    got = b.train_step().metrics
    for k in ("critic/loss", "policy/loss", "policy/approx_kl", "mean_return"):
        assert abs(ref[k] - got[k]) <= 1e-6, (k, ref[k], got[k])
    assert _same(_params(a.policy), _params(b.policy))


def _cli(*args: str) -> subprocess.CompletedProcess:
    return run_navrl(*args)


def test_train_cli_quick_end_to_end_with_report(tmp_path, sft_policy) -> None:
    out = tmp_path / "run"
    r = _cli("train", "--preset", "quick", "--init", str(sft_policy[0]), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert (out / "metrics.jsonl").exists() and (out / "checkpoints" / "last.txt").exists()
    r = _cli("train", "--preset", "quick", "--resume", "--updates", "3", "--out", str(out))
    assert r.returncode == 0, r.stderr
    import json
    ups = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [u["update"] for u in ups if u["kind"] == "update"] == [1, 2, 3]
    r = _cli("report", str(out))
    assert r.returncode == 0, r.stderr
    html = (out / "report.html").read_text()
    assert "<img" in html and "Learning curves" in html


def test_demonstration_prompts_show_the_targets_remaining_plan(quick) -> None:
    """The prompt of step t+1 carries the Remaining the target of step t wrote (what the
    policy will see of its own output at test time), never the expert's longer plan."""
    from navrl.agent.plan import parse_plan
    from navrl.rl.sft import TemplateTeacher
    policy = build_tiny_policy(quick)
    demos = collect_demonstrations(policy, 6, TemplateTeacher(compact=True, remaining_goals=1))
    episodes: dict[str, list] = {}          # the runner steps its episodes in lockstep
    for d in demos:
        episodes.setdefault(d.prompt.split("\n", 1)[0], []).append(d)
    checked = 0
    for steps in episodes.values():
        for prev, cur in zip(steps, steps[1:]):
            written = parse_plan(prev.target).remaining
            assert "; " not in written                     # one goal kept
            shown = [ln for ln in cur.prompt.splitlines() if ln.startswith("Remaining plan: ")]
            assert shown == ([f"Remaining plan: {written}"] if written else [])
            checked += 1
    assert checked >= 10


def test_sft_term_keeps_fitting_the_demonstrations(quick, sft_policy, tmp_path) -> None:
    """PPO-ptx: with sft_coef > 0 the same update lowers the demonstrations' loss, and without
    demonstrations such a config is refused up front."""
    from navrl.rl.config import ConfigError
    from navrl.rl.sft import TemplateTeacher
    base = load_policy(sft_policy[0])
    demos = collect_demonstrations(copy.deepcopy(base), 6, TemplateTeacher(compact=True), seed=5)
    cfg0 = quick.train.override({"critic.critic_warmup_updates": 0, "policy.policy_lr": 3e-3,
                                 "policy.minibatch_size": 4})
    trajs, _ = Trainer(copy.deepcopy(base), cfg0, tmp_path / "c", log=False).collect()
    losses = {}
    for coef in (0.0, 1.0):
        pol = copy.deepcopy(base)
        torch.manual_seed(0)
        tr = Trainer(pol, cfg0.override({"policy.sft_coef": coef, "policy.sft_batch_size": 8}), tmp_path / f"p{coef}",
                     log=False, sft_demos=demos)
        st = tr.learn(copy.deepcopy(trajs))
        assert ("policy/sft_loss" in st.metrics) == (coef > 0)
        losses[coef] = heldout_loss(pol, demos)
    assert losses[1.0] < losses[0.0] - 1e-3, losses
    with pytest.raises(ConfigError, match="sft_demos"):
        Trainer(copy.deepcopy(base), cfg0.override({"policy.sft_coef": 0.5}), tmp_path / "d", log=False)
    with pytest.raises(ConfigError, match="sft_coef"):
        cfg0.override({"policy.sft_coef": -1.0}).validate()
