"""``run.overlap``: the next batch collected while a learner process learns from the last
(one-step off-policy). What is pinned: the schedule (batch k+1 sampled by the planner of update
k-1, the first by the initial one), the proximal log-probs recomputed on a stale batch (PPO's
ratio starts at exactly 1 against the planner that learns), the collecting side left with the
learner's state (weights, optimisers, counters: a checkpoint of it is the learner's), the
callbacks' hooks in the sequential loop's order, the learner's errors raised in the caller, and
no process left behind."""
from __future__ import annotations

import copy
import json
import multiprocessing as mp

import pytest
import torch

from navrl.errors import Outage
from navrl.rl.batch import Batch, minibatches
from navrl.rl.callbacks import Callback, CheckpointCallback
from navrl.rl.overlap import refresh_proximal
from navrl.rl.presets import get_preset
from navrl.rl.trainer import Trainer, load_checkpoint_file
from navrl.experiments.pipeline import run_sft

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def qp(tmp_path_factory):
    """(preset, SFT planner, demonstrations) of ``quick-pointer``."""
    p = get_preset("quick-pointer")
    pol, res = run_sft(p, tmp_path_factory.mktemp("sft"))
    return p, pol, res.demos


def _trainer(qp, run, **over) -> Trainer:
    p, pol, demos = qp
    cfg = p.train.override({"critic.critic_warmup_updates": 0, "run.overlap": True, **over})
    return Trainer(copy.deepcopy(pol), cfg, run, sft_demos=demos if cfg.policy.sft_coef > 0 else None)


def _flat(policy) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in policy.policy_parameters()]).clone()


def _rows(run) -> list[dict]:
    return [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]


def test_each_batch_is_sampled_by_the_planner_one_update_old(qp, tmp_path) -> None:
    tr = _trainer(qp, tmp_path)
    seen, collect = [], tr.collect

    def spy(progress=None):
        seen.append((tr.update, _flat(tr.policy)))
        return collect(progress)
    tr.collect = spy
    after = []

    class Weights(Callback):
        def on_update_end(self, trainer, stats):
            after.append(_flat(trainer.policy))
    w0 = _flat(tr.policy)
    torch.set_num_threads(2)
    res = tr.fit(3, [Weights()])
    assert torch.get_num_threads() == 2          # one thread while the learner ran, put back after
    torch.set_num_threads(1)
    assert [s.update for s in res.history] == [1, 2, 3] and tr.update == 3
    # collections: before update 1 (w0), beside update 1 (still w0), beside update 2 (w1)
    assert [u for u, _ in seen] == [0, 0, 1]
    assert torch.equal(seen[0][1], w0) and torch.equal(seen[1][1], w0) and torch.equal(seen[2][1], after[0])
    assert not torch.equal(after[0], w0) and not torch.equal(after[2], after[1])
    rows = _rows(tmp_path)
    assert [r["update"] for r in rows] == [1, 2, 3] and [r["lag"] for r in rows] == [0, 1, 1]
    assert "update_refresh" not in rows[0]["time"] and rows[1]["time"]["update_refresh"] > 0
    assert mp.active_children() == []


def test_a_stale_batch_starts_at_ratio_one_against_the_learning_planner(qp, tmp_path) -> None:
    """The proximal log-probs are the current planner's score of each output: PPO's old
    log-probs in every minibatch equal a fresh score (ratio exactly 1 before the first step),
    and differ from what the older planner recorded."""
    tr = _trainer(qp, tmp_path, **{"exploration.explore_arg": 0.3})
    trajs, _ = tr.collect()
    batch = Batch.from_trajectories(trajs)
    with torch.no_grad():                      # the planner moves on: the batch is now stale
        for prm in tr.policy.policy_parameters():
            prm.add_(0.05 * torch.randn_like(prm))
    T = tr.cfg.exploration.rollout_temperature
    refresh_proximal(tr.policy, batch.samples, T, 64)
    adv = torch.ones(batch.B, batch.step_mask.shape[1])
    moved = 0
    for mb in minibatches(batch.samples, adv, 64, False, "proximal", 1.0):
        sb = tr.policy.score(mb.prompts, mb.outputs, temperature=T)
        logp = sb.logprobs[mb.rows]
        old = mb.old_width(logp.shape[1])
        m = sb.mask[mb.rows].bool()
        assert torch.allclose(logp[m], old[m], atol=1e-5)
    for s in batch.samples:
        moved += any(abs(a - b) > 1e-3 for a, b in zip(s.policy_logprobs, s.old_logprobs))
    assert moved > len(batch.samples) // 2


def test_the_caller_holds_the_learners_state_and_checkpoints_it(qp, tmp_path) -> None:
    tr = _trainer(qp, tmp_path)
    tr.fit(2, [CheckpointCallback(1)])
    st = load_checkpoint_file(tmp_path)
    assert st["update"] == 2
    # this process never stepped an optimiser: the checkpoint's steps are the learner's (>= 1 an update)
    steps = {int(s["step"]) for s in st["opt_policy"]["state"].values()}
    assert len(steps) == 1 and steps.pop() >= 2 * tr.cfg.policy.ppo_epochs
    resumed = _trainer(qp, tmp_path / "again")
    resumed.load_checkpoint(tmp_path)
    assert resumed.update == 2 and torch.equal(_flat(resumed.policy), _flat(tr.policy))


class Recorder(Callback):
    def __init__(self, events: list):
        self.events = events

    def on_fit_start(self, trainer, target):
        self.events.append(("fit_start", trainer.update, target))

    def on_update_start(self, trainer):
        self.events.append(("update_start", trainer.update))

    def on_update_end(self, trainer, stats):
        self.events.append(("update_end", stats.update, trainer.update))
        return "enough" if stats.update == 2 else None

    def on_fit_end(self, trainer, result):
        self.events.append(("fit_end", result.update, result.stopped))


def test_callbacks_see_the_sequential_loops_hooks_and_a_stop_drops_the_extra_batch(qp, tmp_path) -> None:
    events = {}
    for overlap in (False, True):
        ev: list = []
        tr = _trainer(qp, tmp_path / str(overlap), **{"run.overlap": overlap})
        res = tr.fit(4, [Recorder(ev)])
        assert res.stopped == "enough" and tr.update == 2
        events[overlap] = ev
    assert events[True] == events[False] == [
        ("fit_start", 0, 4), ("update_start", 0), ("update_end", 1, 1), ("update_start", 1), ("update_end", 2, 2),
        ("fit_end", 2, "enough")]
    assert mp.active_children() == []


def test_a_learner_error_is_raised_in_the_caller_and_the_learner_stops(qp, tmp_path) -> None:
    tr = _trainer(qp, tmp_path)

    def boom(*a, **k):
        raise ValueError("boom in the learner")
    tr._update_policy = boom           # (the learner is a fork: it has this too)
    ev: list = []
    with pytest.raises(ValueError, match="boom in the learner"):
        tr.fit(3, [Recorder(ev)])
    assert ev[-1] == ("fit_end", 0, None) and tr.update == 0
    assert mp.active_children() == []


def test_an_outage_in_the_learner_is_logged_and_stops_the_run(qp, tmp_path) -> None:
    tr = _trainer(qp, tmp_path, **{"run.max_masked_updates": 2})
    collect = tr.collect

    def masked(progress=None):
        trajs, judge = collect(progress)
        for t in trajs:
            t.valid, t.invalid_reason = False, "device_lost"
        return trajs, judge
    tr.collect = masked
    with pytest.raises(Outage, match="every trajectory of the last 2 updates"):
        tr.fit(5)
    rows = _rows(tmp_path)
    assert [r["update"] for r in rows] == [1, 2] and all(r["all_masked"] for r in rows)
    assert tr.update == 2        # the outage's update is a completed one, as in the sequential loop
    assert mp.active_children() == []


def test_a_planner_off_the_cpu_is_refused_before_anything_runs(qp, tmp_path) -> None:
    from navrl.rl.config import ConfigError
    tr = _trainer(qp, tmp_path)
    tr.policy.policy_parameters = lambda: [torch.nn.Parameter(torch.zeros(1, device="meta"))]
    with pytest.raises(ConfigError, match="must be on the CPU"):
        tr.fit(2)
    assert tr.update == 0 and mp.active_children() == []


def test_the_records_carry_the_collecting_sides_curriculum_not_the_learners_copy(qp, tmp_path) -> None:
    """The hand-over points move where the batches are collected: each update's record says
    where they stood after its collection, as the sequential loop's does."""
    from navrl.agent.planner import ExpertPlanner
    p, pol, demos = qp
    cfg = p.train.override({"critic.critic_warmup_updates": 0, "run.overlap": True, "exploration.handover_k": 1,
                            "exploration.curriculum_window": 1, "exploration.curriculum_threshold": 0.0,
                            "data.multi_app_share": 1.0})
    tr = Trainer(copy.deepcopy(pol), cfg, tmp_path, sft_demos=None, guide=ExpertPlanner(),
                 guide_length=lambda t: t.expert_length())
    seen = []
    collect = tr.collect

    def spy(progress=None):
        out = collect(progress)
        seen.append(tr.curriculum.summary())
        return out
    tr.collect = spy
    tr.fit(3)
    rows = _rows(tmp_path)
    assert [r["curriculum/handover_k"] for r in rows] == seen
    assert seen[0] != seen[-1]          # (the points moved: a stale copy would repeat the first)
