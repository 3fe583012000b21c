"""Online RL of the planner (docs/design.md §5), CleanRL-style: each update reads top to bottom —
collect, score, advantages, update, log.

The grounder is frozen; the planner (a :class:`~navrl.agent.policy.base.Policy`) and a
critic learn. Infrastructure failures arrive as ``valid=False`` trajectories and are left
out of every loss and every statistic, and counted.
"""
from __future__ import annotations

import collections
import io
import random
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

import torch

from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.grounders.base import Grounder
from navrl.agent.guided import GuidedPlanner
from navrl.agent.planner import ExpertPlanner, Planner
from navrl.agent.policy.base import GREEDY, Policy, Sampling
from navrl.device.pool import DeviceFarm
from navrl.errors import Outage
from navrl.fileio import atomic_write_bytes
from navrl.judge.rewards import reward_preset
from navrl.judge.sets import JudgeSet, make_judges
from navrl.rl.advantages import (AdvantageInputs, AdvantageOutputs, compute_advantages, discounted_returns,
                                 unanimous_anchor_steps, unanimous_failure_credit)
from navrl.rl.batch import Batch, Minibatch, Sample, first_failed_step, length_chunks, minibatches
from navrl.rl.entropy_control import EntropyController, factor_weights
from navrl.rl.diagnostics import (behaviour_gap, factor_entropy, success_by_family, success_by_template,
                                  zero_advantage_share, zero_variance_groups)
from navrl.rl.callbacks import Callback, FitResult
from navrl.rl.config import ConfigError, TrainConfig
from navrl.rl.critic import CriticAdapter
from navrl.rl.curriculum import HandoverSchedule, shared_key, task_key
from navrl.rl.hindsight import hindsight_outputs
from navrl.rl.learnability import FamilyLearnability, task_family
from navrl.rl.losses import LossInputs, critic_loss, sample_stats
from navrl.rl.metrics import MetricsLogger
from navrl.rl.overlap import LearnerProcess, refresh_proximal
from navrl.rl.replay import PoolReplay
from navrl.rl.sampling import DynamicSampling, draw_with_share, is_multi_app
from navrl.rl.self_imitation import positive_outputs
from navrl.rl.sft import Demo, augment_batch, demo_loss
from navrl.rollout.runner import EpisodeRunner, RunnerConfig, gc_paced
from navrl.tasks.source import TaskSource, suite_source


class CheckpointError(ValueError):
    """A checkpoint that is missing, unreadable or from an incompatible run."""


@dataclass
class UpdateStats:
    update: int
    metrics: dict = field(default_factory=dict)


class Trainer:
    def __init__(self, policy: Policy, cfg: TrainConfig, run_dir: str | Path, *, tasks: TaskSource | None = None,
                 judges: JudgeSet | None = None, devices: DeviceFarm | None = None, grounder: Grounder | None = None,
                 log: bool = True, sft_demos: list[Demo] | None = None, guide: Planner | None = None,
                 guide_length: Callable[[object], int] | None = None):
        """The trainer of ``policy`` with its parts passed in (the CLI assembles them from flags):

        - ``tasks``: where each update's tasks come from (default: fresh instances of the phone
          world's ``train`` suite, perturbed as ``cfg.data.train_perturb`` says);
        - ``judges``: step, ask-user and terminal judges (default: the phone world's oracle);
        - ``devices``: a device farm with ``lease_batch``/``release_batch`` (a
          :class:`~navrl.device.pool.DevicePool` over any backend, the Ray farm) holding at
          least ``cfg.trajectories_per_update`` devices (default: each task's own in-process
          device);
        - ``grounder``: the frozen grounder (default: the accessibility grounder);
        - ``guide`` and ``guide_length(task)``: who plays the guided prefixes of
          ``cfg.exploration.guided_start`` and how many steps it takes for a task (default on the phone
          world: its expert, and the length of the expert's own episode).
        """
        cfg.validate()
        self.loss_terms = cfg.policy_loss
        """(registry entry, weight) of each policy-loss term in use, in order (``cfg.policy.loss_terms``)."""
        reads = {r for spec, _ in self.loss_terms for r in spec.reads}
        demo_terms = [f"{spec.name} ({spec.coef} > 0)" for spec, _ in self.loss_terms if "demos" in spec.reads]
        if demo_terms and not sft_demos:
            raise ConfigError(f"the loss term {demo_terms[0]} needs the SFT demonstrations "
                              "(Trainer(..., sft_demos=...))")
        # PPO-ptx fits only what the policy can express (a pointer planner drops a few steps)
        self.sft_demos = [d for d in (sft_demos or []) if policy.encode_demo(d.prompt, d.target) is not None]
        torch.set_num_threads(cfg.run.torch_threads)
        self.policy, self.cfg = policy, cfg
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        spec = cfg.estimator_spec          # the registry entry: critic kind, hashes
        self.estimator = spec.name
        self.rewards = reward_preset(cfg.rollout.reward_preset)
        self.gamma = cfg.advantage.gamma if self.rewards.discount_dense else 1.0
        with torch.random.fork_rng(devices=[]):    # the critic's initial weights from cfg.run.seed alone
            torch.manual_seed(cfg.run.seed)
            self.critic = CriticAdapter(spec.critic or "value", policy.state_dim, cfg.critic.gigppo_hidden_dim)
        policy.critic = self.critic.plan_value
        if hasattr(policy, "entropy_in_score"):
            policy.entropy_in_score = "entropy" in reads
        self.opt_policy = torch.optim.AdamW(policy.policy_parameters(), lr=cfg.policy.policy_lr,
                                            weight_decay=cfg.policy.weight_decay)
        self.opt_critic = torch.optim.AdamW(self.critic.parameters(), lr=cfg.critic_lr)
        self.ref_policy = policy.reference_copy() if "reference" in reads or cfg.exploration.explore_prior > 0 else None
        if cfg.exploration.explore_prior > 0:   # rollouts mix in the planner training started from
            policy.prior = self.ref_policy
        self.skip_zero_advantages = True
        """Leave samples whose advantage is 0 out of the policy's forward pass when that changes
        nothing (every term in use is ``zero_advantage_free``: no KL or entropy term): 20-45% of
        a GiGPO batch, the same optimiser steps."""
        self.rng = random.Random(cfg.run.seed)
        self.update = 0
        self.tasks = tasks or suite_source("train", perturb=None if cfg.data.train_perturb else False)
        # a plain (step, ask, terminal) tuple works too
        self.judges = judges if isinstance(judges, JudgeSet) else JudgeSet(*judges[:3]) if judges else \
            make_judges(getattr(self.tasks, "default_judge", "oracle"))
        self.devices = devices
        self.grounder = grounder or AccessibilityGrounder()
        self.guided: GuidedPlanner | None = None
        if cfg.exploration.guided_start > 0 or cfg.exploration.handover_k > 0:
            if (guide is None or guide_length is None) and not getattr(self.tasks, "has_expert", False):
                raise ConfigError("exploration.guided_start > 0 needs a guide "
                                  "(Trainer(..., guide=..., guide_length=...)) "
                                  "for tasks whose source has no expert (has_expert)")
            self.guided = GuidedPlanner(policy, guide or ExpertPlanner())
            self.guide_length = guide_length or (lambda task: task.expert_length())
        ex = cfg.exploration
        self.curriculum = HandoverSchedule(ex.handover_k, ex.curriculum_threshold, ex.curriculum_window,
                                           key=shared_key if ex.curriculum_shared else task_key,
                                           step=ex.curriculum_step) if ex.handover_k > 0 else None
        """Where guided rollouts start (exploration.handover_k, moved earlier by the reverse curriculum)."""
        self._collect_stats: dict = {}
        self._probe_stats: dict = {}
        """Greedy curriculum probes of the last collection (exploration.curriculum_probe)."""
        self.runner = EpisodeRunner(self.guided or policy, self.grounder, *self.judges[:3], rewards=self.rewards,
                                    config=RunnerConfig(phash=spec.needs_state_hashes, max_steps=cfg.rollout.max_steps,
                                                        deadline_s=cfg.rollout.rollout_deadline_s,
                                                        hindsight=cfg.exploration.hindsight))
        if cfg.exploration.hindsight and not self.runner.wants_snapshots():
            raise ConfigError("exploration.hindsight relabels from the final device snapshot: it needs a judge that "
                              "takes snapshots (the phone world's oracle)")
        self.logger = MetricsLogger(self.run_dir) if log else None
        self.masked_total = 0
        self._pool: list | None = None   # cfg.data.task_pool's fixed tasks, drawn on first use
        # data.learnability_sampling: each family's recent success rate, the draw weighted by p (1 - p)
        self.learnability = FamilyLearnability(cfg.data.learnability_decay, cfg.data.learnability_floor,
                                              cfg.data.learnability_unsolved_visits) \
            if cfg.data.learnability_sampling else None
        self.replay = PoolReplay(cfg.data.task_pool, temperature=cfg.data.pool_replay) \
            if cfg.data.task_pool > 0 and cfg.data.pool_replay > 0 else None
        self._drawn: dict[str, int] = {}
        self.good: collections.deque = collections.deque(maxlen=cfg.exploration.self_imitation_buffer)
        """(prompt, output ids) the planner produced with a positive advantage and a positive step
        reward (or in a successful episode: ``exploration.self_imitation_select``): the
        self-imitation term's data."""
        self.masked_streak = 0
        """Updates in a row whose every trajectory was masked."""
        self.entropy_ctl = EntropyController(
            {"kind": ex.entropy_target_kind, "node": ex.entropy_target_node, "text": ex.entropy_target_text},
            ex.entropy_control_rate) if ex.entropy_control > 0 else None
        """Per-factor entropy coefficients (exploration.entropy_control), moved each update from
        the rollouts' measured factor entropies."""

    # ================================================================== one update
    def train_step(self, progress: Callable[[str, int, int], None] | None = None) -> UpdateStats:
        """One update: collect rollouts on live devices, then learn from them."""
        t0 = time.perf_counter()
        trajs, judge_time = self.collect(progress)
        return self.learn(trajs, {"rollout": time.perf_counter() - t0, "judge": judge_time}, progress)

    def collect(self, progress=None):
        """1. collect: tasks from the task source, sibling rollouts per task on the devices,
        sampled outputs. The judges score every step inside the runner (2. score)."""
        cfg = self.cfg
        before = self.runner.timings["judge"]
        self._collect_stats = {}
        self._probe_stats = {}
        if cfg.exploration.dynamic_sampling > 0:
            ds = DynamicSampling(cfg.rollout.tasks_per_update, cfg.exploration.dynamic_sampling)
            trajs = ds.collect(lambda r, off: self._collect_round(self._next_tasks() if r == 0 else self._extra_tasks(),
                                                                  off, progress))
            self._collect_stats = {f"dynamic/{k}": v for k, v in ds.stats.items()}
        else:
            trajs = self._collect_round(self._next_tasks(), 0, progress)
        if self.learnability is not None:
            self.learnability.observe((task_family(t.task), bool(t.success)) for t in trajs if t.valid)
            self._collect_stats.update(self.learnability.summary())
        return trajs, self.runner.timings["judge"] - before

    def _extra_tasks(self) -> list:
        """Tasks of an extra dynamic-sampling round: fresh ones, or random ones of the fixed pool."""
        if self._pool is not None:
            return self.rng.sample(self._pool, min(self.cfg.rollout.tasks_per_update, len(self._pool)))
        return self._fresh_tasks()

    def _fresh_tasks(self) -> list:
        """tasks_per_update fresh tasks from the source (``data.multi_app_share`` applied); with
        ``data.learnability_sampling`` M, kept from M times as many by their families' learnability."""
        cfg = self.cfg
        k = cfg.rollout.tasks_per_update
        if self.learnability is None:
            return draw_with_share(self.tasks.sample, k, self.rng, cfg.data.multi_app_share)
        cands = draw_with_share(self.tasks.sample, cfg.data.learnability_sampling * k, self.rng,
                                cfg.data.multi_app_share)
        return self.learnability.select(cands, k, self.rng)

    def _collect_round(self, tasks: list, group_offset: int, progress=None) -> list:
        """Sibling rollouts of ``tasks`` (group ids from ``group_offset``), guided starts applied."""
        cfg, pol = self.cfg, self.policy
        batch_tasks = [t for t in tasks for _ in range(cfg.rollout.rollouts_per_task)]
        groups = [group_offset + g for g in range(len(tasks)) for _ in range(cfg.rollout.rollouts_per_task)]
        starts = self._guided_starts(tasks)
        # the rollouts sample at the rollout temperature with the configured exploration,
        # handed to the policy for this collection only
        ex = cfg.exploration
        with pol.using(Sampling(temperature=ex.rollout_temperature, explore=ex.explore, explore_arg=ex.explore_arg,
                                explore_arg_by_source=ex.explore_arg_by_source, explore_prior=ex.explore_prior)):
            trajs = self.runner.run(batch_tasks, devices=self.devices, groups=groups,
                                    on_step=(lambda k: progress("rollout", k, 0)) if progress else None)
        for t in trajs:
            if t.task.get("id") in starts:
                t.info["guided_steps"] = starts[t.task["id"]]
        if self.curriculum is not None:
            if ex.curriculum_probe:
                self.curriculum.observe_probes(self._probe(tasks))
            else:
                self.curriculum.observe((t.task.get("id"), bool(t.success)) for t in trajs if t.valid)
            if ex.frontier_share > 0:
                by_id = {t.id: t for t in tasks}
                self.curriculum.observe_forward((by_id[t.task["id"]], first_failed_step(t)) for t in trajs
                                                if t.valid and t.task.get("id") not in starts and t.task.get("id") in by_id
                                                and is_multi_app(by_id[t.task["id"]]))
        return trajs

    def _probe(self, tasks: list) -> list[tuple[object, bool]]:
        """(task, success) of one greedy episode of each multi-app task of the round, started at
        its key's current hand-over point (``exploration.curriculum_probe``): what the learner
        masters there, without the rollouts' exploration noise. Not trained on."""
        probe = [t for t in tasks if is_multi_app(t)]
        if not probe:
            return []
        self.guided.reset(self.curriculum.probe_starts(probe, self.guide_length))
        with self.policy.using(GREEDY):
            trajs = self.runner.run(probe, devices=self.devices, groups=list(range(len(probe))))
        by_id = {t.id: t for t in probe}
        out = [(by_id[t.task["id"]], bool(t.success)) for t in trajs if t.valid]
        st = self._probe_stats
        st["curriculum/probe_episodes"] = st.get("curriculum/probe_episodes", 0) + len(out)
        st["curriculum/probe_successes"] = st.get("curriculum/probe_successes", 0) + sum(ok for _, ok in out)
        return out

    def _guided_starts(self, tasks: list) -> dict[str, int]:
        """Which task groups start after a guided prefix, and after how many steps."""
        if self.guided is None:
            return {}
        if self.curriculum is not None:
            multi = [t for t in tasks if is_multi_app(t)]
            if self.cfg.exploration.handover_share < 1.0:   # the others start at the beginning
                multi = [t for t in multi if self.rng.random() < self.cfg.exploration.handover_share]
            starts = self.curriculum.starts(multi, self.guide_length, self.rng, self.cfg.exploration.curriculum_practice,
                                            self.cfg.exploration.frontier_share)
            self.guided.reset(starts)
            return starts
        starts = {}
        for t in tasks:
            if is_multi_app(t) and self.rng.random() < self.cfg.exploration.guided_start:
                n = self.guide_length(t)
                if n >= 2:
                    starts[t.id] = self.rng.randint(1, n - 1)
        self.guided.reset(starts)
        return starts

    def _next_tasks(self) -> list:
        """Fresh tasks from the source, or the next tasks_per_update of the fixed pool (cfg.data.task_pool)."""
        cfg = self.cfg
        if cfg.data.task_pool <= 0:
            return self._fresh_tasks()
        if self._pool is None:
            self._pool = draw_with_share(self.tasks.sample, cfg.data.task_pool, random.Random(cfg.run.seed + 1),
                                         cfg.data.multi_app_share)
        if self.replay is not None:
            idx = self.replay.draw(cfg.rollout.tasks_per_update, self.update, self.rng)
            self._drawn = {self._pool[i].id: i for i in idx}
            return [self._pool[i] for i in idx]
        k = (self.update * cfg.rollout.tasks_per_update) % len(self._pool)
        return [self._pool[(k + i) % len(self._pool)] for i in range(cfg.rollout.tasks_per_update)]

    def _score_replay(self, trajs, batch: Batch, advantages: torch.Tensor, mask: torch.Tensor) -> None:
        """Prioritised replay: each drawn task's score is its rollouts' mean |advantage|."""
        acc: dict[int, list[float]] = {}
        for b, t in enumerate(trajs):
            i = self._drawn.get(t.task.get("id"))
            m = mask[b]
            if i is not None and bool(m.any()):
                acc.setdefault(i, []).append(float(advantages[b][m].abs().mean()))
        for i, v in acc.items():
            self.replay.update(i, sum(v) / len(v))

    def collection_record(self) -> dict:
        """What the last collection logs beside its trajectories: dynamic sampling's and the
        curriculum probes' counts, where the hand-over points stand (collection-side state:
        ``run.overlap`` sends it to the learner with the batch)."""
        out = {**self._collect_stats, **self._probe_stats}
        if self.curriculum is not None:
            out["curriculum/handover_k"] = self.curriculum.summary()
        return out

    def learn(self, trajs, tm: dict | None = None, progress=None, collected_at: int | None = None,
              collection: dict | None = None) -> UpdateStats:
        """3. advantages and 4. update from scored trajectories, then 5. log. The GC paced as
        in the rollouts (``RunnerConfig.gc_gen0``): the update featurises the PPO-ptx
        demonstrations' augmented screens, many small objects. ``collected_at``: the update
        whose planner sampled ``trajs`` (``run.overlap``: one before this one); None, this one's.
        ``collection``: the collection's :meth:`collection_record` (None: this trainer's own)."""
        with gc_paced(self.runner.cfg.gc_gen0):
            return self._learn(trajs, tm, progress, collected_at, collection)

    def _learn(self, trajs, tm: dict | None, progress, collected_at: int | None = None,
               collection: dict | None = None) -> UpdateStats:
        cfg = self.cfg
        u = self.update
        tm = dict(tm or {})
        lag = 0 if collected_at is None else u - collected_at
        if trajs and not any(t.valid for t in trajs):
            return self._outage_update(trajs, tm)
        t1 = time.perf_counter()
        batch = Batch.from_trajectories(trajs)
        mask = batch.step_mask & batch.valid[:, None]

        # 3. advantages: states at the last prompt token and critic values (critic estimators
        # only: re-encoding every state is a forward pass over the whole batch), estimator registry
        states = self._states(batch) if cfg.uses_critic else None      # [B,T,D], no grad
        G = discounted_returns(batch.step_rewards, batch.terminal_rewards, mask, self.gamma)
        with torch.no_grad():
            V = self.critic.grid_values(states, G, batch) if cfg.uses_critic else None
        adv = compute_advantages(self.estimator, AdvantageInputs(
            step_rewards=batch.step_rewards, terminal_rewards=batch.terminal_rewards, step_mask=batch.step_mask,
            valid=batch.valid, group_ids=batch.group_ids, gamma=self.gamma, values=V, state_keys=batch.state_keys,
            gigpo_step_weight=cfg.advantage.gigpo_step_weight, whiten=cfg.advantage.whiten_advantages))
        n_unanimous = 0
        if cfg.exploration.unanimous_fail_penalty > 0:
            same = unanimous_anchor_steps(batch.state_keys, batch.group_ids, batch.step_failed, mask)
            a, credited = unanimous_failure_credit(adv.advantages, batch.step_failed, mask,
                                                   cfg.exploration.unanimous_fail_penalty, same)
            adv = AdvantageOutputs(advantages=a, returns=adv.returns)
            n_unanimous = int(credited.sum())
        tm["advantages"] = time.perf_counter() - t1
        if self.replay is not None:
            self._score_replay(trajs, batch, adv.advantages, mask)
        if cfg.exploration.self_imitation > 0:
            won = (torch.tensor([bool(t.success) for t in trajs])
                   if cfg.exploration.self_imitation_select == "episode" else None)
            self.good.extend(positive_outputs(batch, adv.advantages, won))
        n_hindsight = 0
        if cfg.exploration.hindsight:     # failed episodes that reached another goal, as its successes
            relabelled, n_hindsight = hindsight_outputs(self.policy, trajs)
            self.good.extend(relabelled)

        diag = self._diagnostics(trajs, batch, adv.advantages, mask)   # of the policy that collected the batch
        if cfg.exploration.hindsight:
            diag["hindsight_episodes"] = n_hindsight
        if cfg.exploration.unanimous_fail_penalty > 0:
            diag["unanimous_fail_steps"] = n_unanimous / max(1, int(mask.sum()))
        if self.entropy_ctl is not None:      # the coefficients this update's loss uses
            diag["entropy_weight"] = self.entropy_ctl.observe(diag.get("entropy") or {})

        # 4. update: the critic always, the policy after the warm-up
        t2 = time.perf_counter()
        c_stats = self._update_critic(states, adv.returns, batch, mask) if cfg.uses_critic else {}
        tm["update_critic"] = time.perf_counter() - t2
        if V is not None:
            # the baseline the advantages actually used: the critic before it saw this batch
            c_stats["critic/explained_variance_before"] = float(critic_loss(V, adv.returns, mask).explained_variance)
        frozen = cfg.policy_frozen(u)
        if lag > 0 and not frozen and cfg.policy.off_policy_ratio != "behaviour":
            # sampled by an older planner: PPO's ratio against this one (decoupled PPO's proximal policy)
            t3 = time.perf_counter()
            used = [s for s in batch.samples if not self._skips_zero() or float(adv.advantages[s.b, s.t]) != 0.0]
            refresh_proximal(self.policy, used, cfg.exploration.rollout_temperature, cfg.policy.minibatch_size)
            tm["update_refresh"] = time.perf_counter() - t3
        p_stats = {} if frozen else self._update_policy(batch, adv.advantages, progress, tm)
        tm["update"] = time.perf_counter() - t2

        # 5. log
        self.update += 1
        m = self._rollout_metrics(trajs)
        m.update(self.collection_record() if collection is None else collection)
        m.update(c_stats)
        m.update(p_stats)
        m.update(policy_frozen=frozen, time=tm, samples=len(batch.samples), diag=diag, lag=lag)
        self.masked_total += m["masked"]
        self.masked_streak = 0
        m["masked_total"] = self.masked_total
        rec = {"kind": "update", "update": self.update, **m}
        if self.logger:
            self.logger.log(rec)
        return UpdateStats(self.update, rec)

    def _diagnostics(self, trajs, batch: Batch, advantages: torch.Tensor, mask: torch.Tensor) -> dict:
        """Why an update can or cannot learn (navrl.rl.diagnostics): groups whose sibling
        rollouts all succeeded or all failed, steps with a zero advantage, success per task
        family, and the entropy of each decision factor on a subsample of the batch (scored
        without gradients under the update's RNG-free view: no draw of the trainer's RNGs)."""
        succ = torch.tensor([float(bool(t.success)) for t in trajs]) if trajs else torch.zeros(0)
        flat, groups = zero_variance_groups(succ, batch.group_ids, batch.valid)
        out: dict = {"zero_variance_groups": flat / groups if groups else None, "groups": groups,
                     "zero_advantage_steps": zero_advantage_share(advantages, mask),
                     "success_by_family": success_by_family(trajs), "success_by_template": success_by_template(trajs)}
        gap = behaviour_gap(((s.old_logprobs, s.policy_logprobs) for s in batch.samples if s.policy_logprobs is not None),
                            self.cfg.policy.clip_eps)
        if gap is not None:     # exploration mixed: how far the behaviour was from the planner
            out["behaviour_gap"] = gap
        n = self.cfg.run.diagnostics_samples
        samples = batch.samples
        if n > 0 and samples:
            pick = samples if len(samples) <= n else random.Random(self.update).sample(samples, n)
            outputs = [s.output_ids for s in pick]
            with torch.no_grad(), torch.random.fork_rng(devices=[]):
                sb = self.policy.score([s.prompt for s in pick], outputs,
                                       temperature=self.cfg.exploration.rollout_temperature)
            width = sb.entropy.shape[1]
            out["entropy"] = factor_entropy(sb.entropy, sb.mask, self.policy.decision_factors(outputs, width))
        return out

    def _outage_update(self, trajs, tm: dict) -> UpdateStats:
        """Every trajectory masked: nothing is learned and nothing is reported as measured
        (success, return and length are null, not 0); after ``run.max_masked_updates`` such updates
        in a row :class:`Outage` is raised (the state is that of a completed update)."""
        self.update += 1
        self.masked_streak += 1
        self.masked_total += len(trajs)
        m = self._rollout_metrics(trajs)
        m.update(all_masked=True, policy_frozen=self.cfg.policy_frozen(self.update - 1), time=tm, samples=0,
                 masked_total=self.masked_total, masked_streak=self.masked_streak)
        rec = {"kind": "update", "update": self.update, **m}
        if self.logger:
            self.logger.log(rec)
        limit = self.cfg.run.max_masked_updates
        if limit and self.masked_streak >= limit:
            reasons = ", ".join(f"{k} {v}" for k, v in sorted(m["masked_reasons"].items()))
            raise Outage(f"infrastructure outage: every trajectory of the last {self.masked_streak} updates was "
                         f"masked (last update: {reasons}); stopped at update {self.update} (max_masked_updates={limit})")
        return UpdateStats(self.update, rec)

    # ================================================================== pieces
    @torch.no_grad()
    def _states(self, batch: Batch) -> torch.Tensor:
        """The planner's state at each sample's last prompt token: float [B, T, D], 0 where no
        sample is. The state reads the prompt alone, so each distinct prompt is encoded once
        (sibling rollouts share their first screens)."""
        D = self.policy.state_dim
        out = torch.zeros(batch.B, batch.step_mask.shape[1], D)
        S = batch.samples
        if not S:
            return out
        first: dict[str, Sample] = {}
        for s in S:
            first.setdefault(s.prompt, s)
        row = {p: i for i, p in enumerate(first)}
        states = torch.zeros(len(first), D)
        for chunk in length_chunks(list(first.values()), self.cfg.policy.minibatch_size):
            sb = self.policy.score([s.prompt for s in chunk], [s.output_ids for s in chunk])
            states[torch.tensor([row[s.prompt] for s in chunk])] = sb.state
        out[torch.tensor([s.b for s in S]), torch.tensor([s.t for s in S])] = \
            states[torch.tensor([row[s.prompt] for s in S])]
        return out

    def _update_critic(self, states, returns, batch: Batch, mask) -> dict:
        cfg = self.cfg
        stats = []
        for _ in range(cfg.critic.critic_steps):
            V = self.critic.grid_values(states, returns, batch)
            out = critic_loss(V, returns, mask, clip_range=None)
            self.opt_critic.zero_grad()
            out.loss.backward()
            if cfg.policy.grad_clip:
                torch.nn.utils.clip_grad_norm_(list(self.critic.parameters()), cfg.policy.grad_clip)
            self.opt_critic.step()
            stats.append(out)
        return stats[-1].stats()

    def _skips_zero(self) -> bool:
        """Whether the update leaves zero-advantage samples out (:attr:`skip_zero_advantages`)."""
        return self.skip_zero_advantages and all(spec.zero_advantage_free for spec, _ in self.loss_terms)

    def _update_policy(self, batch: Batch, advantages: torch.Tensor, progress=None, tm: dict | None = None) -> dict:
        """PPO epochs over the batch's minibatches, one optimiser step each on the loss of
        :meth:`_step_loss`. Returns each logged value's mean over the steps that had it;
        ``tm`` (if given) gets the seconds of the terms on the sampled outputs (``update_ppo``),
        of the supervised terms (PPO-ptx and self-imitation: ``update_ptx``) and of the backward
        passes and optimiser steps (``update_step``).

        Each minibatch's backward pass and optimiser step run on a helper thread while this
        one draws (and encodes) the next minibatch's demonstrations, which need no weights:
        the same draws from the trainer's RNG in the same order, the same optimiser steps
        (the next forward pass waits for the step), the supervised term's preparation off
        the critical path. ``update_step`` counts the steps' own seconds, so the three
        overlap."""
        cfg, pol = self.cfg, self.policy
        clock = time.perf_counter
        t_ptx = 0.0
        t_step = [0.0]
        times = Counter()
        S = batch.samples
        if not S:
            return {}
        agg: Counter = Counter()
        steps: Counter = Counter()      # per logged key: the optimiser steps that logged it
        skip_zero = self._skips_zero()
        # every parameter takes every optimiser step (AdamW moves on momentum even at a zero
        # gradient), whichever heads a minibatch's decisions happen to use
        for prm in pol.policy_parameters():
            if prm.grad is None:
                prm.grad = torch.zeros_like(prm)
        # the minibatches' inputs once per update (every epoch reads them); shuffling them is
        # shuffling their chunks: random.shuffle's draws depend on the length alone
        mbs = minibatches(S, advantages, cfg.policy.minibatch_size, skip_zero, cfg.policy.off_policy_ratio,
                          cfg.policy.is_weight_cap)

        def step(loss: torch.Tensor) -> None:
            t0 = clock()
            self.opt_policy.zero_grad(set_to_none=False)
            if loss.requires_grad:    # (every advantage 0 and no supervised term: a zero-gradient step)
                loss.backward()
            if cfg.policy.grad_clip:
                torch.nn.utils.clip_grad_norm_(pol.policy_parameters(), cfg.policy.grad_clip)
            self.opt_policy.step()
            t_step[0] += clock() - t0

        pending = None
        # one helper thread, with this thread's torch thread count (the same float arithmetic)
        with ThreadPoolExecutor(1, initializer=torch.set_num_threads, initargs=(torch.get_num_threads(),)) as ex:
            try:
                draws = self._minibatch_draws(mbs)
                while True:
                    t1 = clock()
                    nxt = next(draws, None)          # (overlaps the previous minibatch's step)
                    t_ptx += clock() - t1
                    if pending is not None:
                        pending.result()
                        pending = None
                        if progress:
                            progress("update", 1, 0)
                    if nxt is None:
                        break
                    loss, stats = self._step_loss(*nxt, times)
                    for k, v in stats.items():
                        agg[k] += v
                        steps[k] += 1
                    pending = ex.submit(step, loss)
            finally:
                if pending is not None:      # (an error here: the step under way ends before the update does)
                    pending.exception()
        if tm is not None:
            tm.update(update_ppo=times["samples"], update_ptx=t_ptx + times["supervised"], update_step=t_step[0])
        return {k: v / steps[k] for k, v in agg.items()}

    def _step_loss(self, mb: Minibatch, demos: list[Demo] | None, own: list | None,
                   times: Counter) -> tuple[torch.Tensor, dict]:
        """One optimiser step's policy loss and what it logs, top to bottom: for each term in
        use (``cfg.policy.loss_terms`` with a non-zero coefficient, :mod:`navrl.rl.losses`), score the
        sources it reads that this step has not scored yet (:meth:`_source`), call it, add
        weight × term and log its value. A term whose source this step lacks (every sample of
        the minibatch left out, no demonstrations, an empty self-imitation buffer) is left out.

        Terms on the sampled outputs are token means over the samples scored; those left out
        for a zero advantage (every term then ``zero_advantage_free``) count in the
        minibatch's token-mean denominator: the term is scaled by ``mb.scale``. Their weighted
        sum, unscaled, is logged as ``policy/loss`` beside :func:`~navrl.rl.losses.sample_stats`.
        ``times`` gets the seconds spent on the sampled outputs' terms (``samples``) and on
        the others (``supervised``)."""
        clock = time.perf_counter
        x = LossInputs(clip_eps=self.cfg.policy.clip_eps)
        have: dict[str, bool] = {}
        loss = pg = None
        stats: dict[str, float] = {}
        for spec, w in self.loss_terms:
            t0 = clock()
            for src in spec.reads:
                if src not in have:
                    got = self._source(src, mb, demos, own, have)
                    have[src] = got is not None
                    if got:
                        x = replace(x, **got)
            if all(have[src] for src in spec.reads):
                value = spec.fn(x)
                term = w * value
                if spec.reads_samples:
                    pg = term if pg is None else pg + term
                    term = term * mb.scale
                loss = term if loss is None else loss + term
                if spec.log:
                    stats[spec.log] = float(value.detach())
            times["samples" if spec.reads_samples else "supervised"] += clock() - t0
        if have.get("samples"):
            t0 = clock()
            stats = {"policy/loss": float(pg.detach()), **sample_stats(x), **stats}
            times["samples"] += clock() - t0
        return (torch.zeros(()) if loss is None else loss), stats

    def _source(self, src: str, mb: Minibatch, demos: list[Demo] | None, own: list | None,
                have: dict[str, bool]) -> dict | None:
        """The :class:`~navrl.rl.losses.LossInputs` fields of source ``src`` for this step
        (:data:`~navrl.rl.losses.LossSource`), or None when the step has none.

        The sampled outputs are scored at the rollout temperature: the recorded old log-probs
        are of the tempered policy the rollouts sampled from, so that is the policy this
        update trains. Identical (prompt, output) pairs are scored once and their rows
        repeated (``mb.rows``): the same loss and gradient. Demonstrations and self-imitation
        items are scored at temperature 1 (SFT's distribution)."""
        pol, T = self.policy, self.cfg.exploration.rollout_temperature
        if src == "samples":
            if mb.empty:
                return None
            sb = pol.score(mb.prompts, mb.outputs, temperature=T)
            rows = mb.rows
            logp, mask, ent = sb.logprobs[rows], sb.mask[rows], sb.entropy[rows]
            ew = None
            if self.entropy_ctl is not None:     # each position weighted by its factor's coefficient now
                ew = factor_weights(pol.decision_factors(mb.outputs, ent.shape[1]), self.entropy_ctl.weights(),
                                    ent.shape[1])[rows]
            return dict(logp=logp, old_logp=mb.old_width(logp.shape[1]), is_weight=mb.weight_width(logp.shape[1]),
                        advantages=mb.advantages, mask=mask, entropy=ent, entropy_weight=ew)
        if src == "entropy":      # (scored with the samples)
            return {} if have.get("samples") else None
        if src == "reference":
            if not have.get("samples"):
                return None
            with torch.no_grad():
                return dict(ref_logp=self.ref_policy.score(mb.prompts, mb.outputs, temperature=T).logprobs[mb.rows])
        if src == "demos":
            if demos is None:
                return None
            sb = pol.score([d.prompt for d in demos], [pol.encode_demo(d.prompt, d.target) for d in demos])
            return dict(demo_logp=sb.logprobs, demo_mask=sb.mask)
        if src == "own":
            if not own:
                return None
            sb = pol.score([p for p, _ in own], [ids for _, ids in own])
            return dict(own_logp=sb.logprobs, own_mask=sb.mask)
        raise ValueError(f"unknown loss source {src!r}")

    def _minibatch_draws(self, mbs: list[Minibatch]):
        """(minibatch, PPO-ptx demonstrations or None, self-imitation items or None) for each
        optimiser step of the update, in order: each epoch's shuffle, then per minibatch its
        demonstrations and self-imitation items (when a term in use reads them), drawn from
        the trainer's RNG when asked for."""
        cfg = self.cfg
        reads = {r for spec, _ in self.loss_terms for r in spec.reads}
        for _ in range(cfg.policy.ppo_epochs):
            order = list(mbs)
            self.rng.shuffle(order)
            for mb in order:
                demos = self._ptx_demos() if "demos" in reads else None
                own = None
                if "own" in reads and self.good:
                    own = self.rng.sample(list(self.good), min(cfg.policy.sft_batch_size, len(self.good)))
                yield mb, demos, own

    def _ptx_demos(self) -> list[Demo]:
        """One minibatch's PPO-ptx demonstrations (and their augmentation), drawn from the
        trainer's RNG. Augmenting encodes each augmented demonstration (the policy keeps the
        encoding for the loss): the costly part of the term, which needs no weights."""
        cfg, pol = self.cfg, self.policy
        demos = self.rng.sample(self.sft_demos, min(cfg.policy.sft_batch_size, len(self.sft_demos)))
        if cfg.policy.sft_augment > 0:
            demos = augment_batch(pol, demos, cfg.policy.sft_augment, self.rng)
        return demos

    def _ptx_loss(self) -> torch.Tensor:
        """PPO-ptx's supervised loss of one minibatch on its own (scalar, with grad; the
        reference update of tests/rl/test_update_identity.py): draws the demonstrations (and
        their augmentation) from the trainer's RNG."""
        return demo_loss(self.policy, self._ptx_demos())

    @staticmethod
    def _rollout_metrics(trajs) -> dict:
        valid = [t for t in trajs if t.valid]
        verdicts = Counter(s.verdict for t in valid for s in t.steps if s.verdict)
        n = len(valid)
        guided = [t for t in valid if t.info.get("guided_steps")]
        return {   # None, not 0, when nothing valid was measured
            "guided": len(guided),
            "guided_success": sum(t.success for t in guided) / len(guided) if guided else None,
            "unguided_success": sum(t.success for t in valid if not t.info.get("guided_steps")) / (n - len(guided))
                                if n > len(guided) else None,
            "success": sum(t.success for t in valid) / n if n else None,
            "mean_return": sum(t.total_reward for t in valid) / n if n else None,
            "episode_length": sum(t.length for t in valid) / n if n else None,
            "masked": len(trajs) - len(valid),
            "masked_fraction": (len(trajs) - len(valid)) / max(1, len(trajs)),
            "masked_reasons": dict(Counter(t.invalid_reason for t in trajs if not t.valid)),
            "stragglers": sum(1 for t in trajs if t.info.get("straggler")),   # cut at the rollout deadline
            "verdicts": dict(verdicts),
            "unparseable": sum(1 for t in valid for s in t.steps if s.kind == "unparseable"),
        }

    # ================================================================== checkpoints
    def checkpoint_state(self) -> dict:
        return {"format": "navrl-checkpoint-1", "update": self.update, "config": self.cfg.to_dict(),
                "policy_kind": type(self.policy).__name__, "policy": self.policy.state_dict_all(),
                "critic": self.critic.net.state_dict(), "opt_policy": self.opt_policy.state_dict(),
                "opt_critic": self.opt_critic.state_dict(), "rng": self.rng.getstate(),
                "torch_rng": torch.get_rng_state(), "masked_total": self.masked_total,
                "masked_streak": self.masked_streak,
                "replay": self.replay.state() if self.replay is not None else None,
                "curriculum": self.curriculum.state() if self.curriculum is not None else None,
                "learnability": self.learnability.state() if self.learnability is not None else None,
                "entropy_control": self.entropy_ctl.state() if self.entropy_ctl is not None else None}

    def learner_state(self) -> dict:
        """What learning changes that the collecting side reads or checkpoints (``run.overlap``:
        sent back by the learner process after each update, :meth:`apply_learner_state`)."""
        return {"update": self.update, "policy": self.policy.state_dict_all(), "critic": self.critic.net.state_dict(),
                "opt_policy": self.opt_policy.state_dict(), "opt_critic": self.opt_critic.state_dict(),
                "masked_total": self.masked_total, "masked_streak": self.masked_streak,
                "replay": self.replay.state() if self.replay is not None else None,
                "entropy_control": self.entropy_ctl.state() if self.entropy_ctl is not None else None}

    def apply_learner_state(self, st: dict) -> None:
        """Take over the learner process's state (:meth:`learner_state`)."""
        self.policy.load_state_dict_all(st["policy"])
        self.critic.net.load_state_dict(st["critic"])
        self.opt_policy.load_state_dict(st["opt_policy"])
        self.opt_critic.load_state_dict(st["opt_critic"])
        self.update = int(st["update"])
        self.masked_total, self.masked_streak = int(st["masked_total"]), int(st["masked_streak"])
        if self.replay is not None and st["replay"] is not None:
            self.replay.load(st["replay"])
        if self.entropy_ctl is not None and st["entropy_control"] is not None:
            self.entropy_ctl.load(st["entropy_control"])

    def checkpoint_bytes(self) -> tuple[int, bytes]:
        """(update, serialized checkpoint) of the state right now: taken between updates, it is
        what Ctrl-C in the middle of the next update saves (never the half-updated state)."""
        buf = io.BytesIO()
        torch.save(self.checkpoint_state(), buf)
        return self.update, buf.getvalue()

    def save_checkpoint(self, path: str | Path | None = None, snapshot: tuple[int, bytes] | None = None) -> Path:
        """Write the current state (or ``snapshot`` from :meth:`checkpoint_bytes`) atomically as
        ``checkpoints/update_NNNNN.pt`` and point ``last.txt`` at it."""
        update, data = snapshot if snapshot is not None else self.checkpoint_bytes()
        path = Path(path) if path else self.run_dir / "checkpoints" / f"update_{update:05d}.pt"
        atomic_write_bytes(path, data)
        atomic_write_bytes(self.run_dir / "checkpoints" / "last.txt", path.name.encode())
        return path

    def load_checkpoint(self, path: str | Path) -> None:
        st = load_checkpoint_file(path)
        self.policy.load_state_dict_all(st["policy"])
        self.critic.net.load_state_dict(st["critic"])
        self.opt_policy.load_state_dict(st["opt_policy"])
        self.opt_critic.load_state_dict(st["opt_critic"])
        self.rng.setstate(st["rng"])
        torch.set_rng_state(st["torch_rng"])
        self.update = int(st["update"])
        self.masked_total = int(st.get("masked_total", 0))
        self.masked_streak = int(st.get("masked_streak", 0))
        if self.replay is not None and st.get("replay"):
            self.replay.load(st["replay"])
        if self.curriculum is not None and st.get("curriculum"):
            self.curriculum.load(st["curriculum"])
        if self.learnability is not None and st.get("learnability"):
            self.learnability.load(st["learnability"])
        if self.entropy_ctl is not None and st.get("entropy_control"):
            self.entropy_ctl.load(st["entropy_control"])

    def resume(self, run_dir: str | Path | None = None) -> None:
        """Continue this run from its last checkpoint: load it and cut ``metrics.jsonl`` back to
        the checkpoint's update (records of updates after it, and a truncated last line, go)."""
        self.load_checkpoint(run_dir or self.run_dir)
        if self.logger:
            self.logger.truncate_after(self.update)


    # ================================================================== the run
    def fit(self, updates: int | None = None, callbacks: Sequence[Callback] = ()) -> FitResult:
        """Train until ``self.update == updates`` (default ``cfg.run.num_updates``): the run's total,
        so a resumed trainer runs only the updates it still lacks. The one outer loop: each
        update is :meth:`train_step` between the callbacks' ``on_update_start`` and
        ``on_update_end`` (:mod:`navrl.rl.callbacks`: checkpoints, evaluation, progress,
        stopping rules); a stopping rule's reason ends the run after the update that gave it.

        An error ends the run after every callback's ``on_fit_end`` saw it in
        ``result.error`` and is raised again: Ctrl-C, or :class:`~navrl.errors.Outage` when
        ``cfg.run.max_masked_updates`` updates in a row had every trajectory masked (the update's
        own rule, so a bare :meth:`train_step` stops too)."""
        target = self.cfg.run.num_updates if updates is None else int(updates)
        res = FitResult(start=self.update, target=target, update=self.update)
        started: list[Callback] = []
        try:
            for cb in callbacks:
                cb.on_fit_start(self, target)
                started.append(cb)
            if self.cfg.run.overlap and self.update < target:
                self._fit_overlapped(target, callbacks, res)
            while self.update < target and not res.stopped:
                for cb in callbacks:
                    cb.on_update_start(self)
                st = self.train_step()
                res.history.append(st)
                reasons = [cb.on_update_end(self, st) for cb in callbacks]
                res.stopped = next((r for r in reasons if r), None)
        except BaseException as e:
            res.error = e
        res.update = self.update
        for cb in started:
            cb.on_fit_end(self, res)
        if res.error is not None:
            raise res.error
        return res


    def _fit_overlapped(self, target: int, callbacks: Sequence[Callback], res: FitResult) -> None:
        """``fit``'s loop with ``run.overlap``: while the learner process learns from one batch,
        this process collects the next with the planner it has (one update old), then takes
        the learner's state, logs and runs the callbacks. The callbacks see the same hooks in
        the same order as in the sequential loop; a batch collected for an update after a
        stopping rule's is dropped."""
        learner = LearnerProcess(self)
        try:
            t0 = time.perf_counter()
            trajs, judge = self.collect()
            at, tm, coll = self.update, {"rollout": time.perf_counter() - t0, "judge": judge}, self.collection_record()
            while True:
                for cb in callbacks:
                    cb.on_update_start(self)
                learner.submit(trajs, tm, at, coll)
                more = self.update + 1 < target
                if more:      # the next batch, beside the learning
                    t0 = time.perf_counter()
                    trajs, judge = self.collect()
                    at, tm, coll = self.update, {"rollout": time.perf_counter() - t0, "judge": judge}, \
                        self.collection_record()
                st = learner.result()      # (logs the learner's records)
                res.history.append(st)
                reasons = [cb.on_update_end(self, st) for cb in callbacks]
                res.stopped = next((r for r in reasons if r), None)
                if res.stopped or not more:
                    return
        finally:
            learner.close()


def load_checkpoint_file(path: str | Path) -> dict:
    p = Path(path)
    if p.is_dir():
        last = p / "checkpoints" / "last.txt"
        if not last.exists():
            raise CheckpointError(f"no checkpoint in {p}")
        p = p / "checkpoints" / last.read_text().strip()
    if not p.exists():
        raise CheckpointError(f"checkpoint not found: {p}")
    try:
        st = torch.load(p, map_location="cpu", weights_only=False)
    except Exception as e:
        raise CheckpointError(f"checkpoint {p} is unreadable ({type(e).__name__})") from None
    if not isinstance(st, dict) or st.get("format") != "navrl-checkpoint-1":
        raise CheckpointError(f"{p} is not a navrl checkpoint")
    return st
