"""Reasoning synthesis + supervised warm start of the planner (the paper's SFT stage).

Demonstrations come from the phone world's expert on clean (unperturbed) single-app
train tasks — like the transcript's human-annotated, mostly successful trajectories — or
from any expert on any tasks (MiniWoB++'s scripted solutions: :func:`collect_demonstrations`).
Their reasoning and remaining plans are filled by a *teacher*: the expert's templates by
default, or an LLM through the OpenAI-compatible client.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol

import torch

from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.plan import parse_plan
from navrl.agent.planner import ExpertPlanner, Planner, PlannerContext, PlannerOutput
from navrl.agent.policy.base import Policy
from navrl.judge.sets import make_judges
from navrl.rollout.runner import EpisodeRunner
from navrl.rl.sft_config import SFTConfig
from navrl.tasks.registry import get_suite


class NoDemonstrations(ValueError):
    """The expert succeeded on none of the demonstration tasks: nothing to learn from."""


@dataclass(frozen=True)
class Demo:
    prompt: str
    target: str


class Teacher(Protocol):
    def fill(self, prompt: str, expert_text: str) -> str:
        """The training target for one step: the expert's Step with reasoning and remaining plan."""


class TemplateTeacher:
    """The expert's own templated reasoning and remaining plan (the CPU default).

    ``compact``: drop the "I am in <app> on the <screen> screen" preamble (the prompt
    already says it) and keep the next two goals of the remaining plan — short targets a
    tiny model can learn in minutes.
    """

    def __init__(self, compact: bool = False, remaining_goals: int = 2):
        self.compact = compact
        self.remaining_goals = remaining_goals

    def fill(self, prompt: str, expert_text: str) -> str:
        if not self.compact:
            return expert_text
        plan = parse_plan(expert_text)
        reasoning = plan.reasoning
        if reasoning.startswith("I am ") and ". " in reasoning:
            reasoning = reasoning.split(". ", 1)[1]
        remaining = "; ".join(plan.remaining.split("; ")[:self.remaining_goals])
        return f"Reasoning: {reasoning}\nStep: {plan.step}\nRemaining: {remaining}"


class LLMTeacher:
    """Rewrites reasoning and remaining plan with a teacher LLM; the Step is kept verbatim."""

    def __init__(self, client):
        self.client = client

    def fill(self, prompt: str, expert_text: str) -> str:
        plan = parse_plan(expert_text)
        msg = ("A phone agent is at the screen below and will do the given Step. Write the reasoning "
               "(grounded only in what is on screen) and the remaining high-level plan.\n\n"
               f"{prompt}\n\nStep: {plan.step}\n\nAnswer as:\nReasoning: ...\nRemaining: ...")
        out = parse_plan(self.client.chat([{"role": "user", "content": msg}]).text + f"\nStep: {plan.step}")
        if not out:
            return expert_text
        return f"Reasoning: {out.reasoning or plan.reasoning}\nStep: {plan.step}\nRemaining: {out.remaining or plan.remaining}"


class _Recorder(Planner):
    """The expert, recording (task id, policy prompt, teacher target) as it plays."""

    name = "expert"

    def __init__(self, policy: Policy, teacher: Teacher, expert: Planner | None = None):
        self.policy, self.teacher = policy, teacher
        self.expert = expert or ExpertPlanner()
        self.demos: list[tuple[str, Demo]] = []

    def plan(self, contexts: list[PlannerContext]) -> list[PlannerOutput]:
        outs = []
        for c, o in zip(contexts, self.expert.plan(contexts)):
            p = self.policy.prompt_text(c)
            target = self.teacher.fill(p, o.text)
            self.demos.append((c.task.id, Demo(p, target)))
            # The episode goes on with the teacher's text, so the next prompt shows the
            # remaining plan the policy will have written itself (not the expert's longer
            # one): demonstration prompts look like the policy's own at test time.
            outs.append(PlannerOutput(target, prompt=o.prompt))
        return outs


def sft_tasks(n: int, seed: int = 0, suite: str = "train"):
    """The tasks ``suite``'s expert demonstrates (the phone world's: clean, single-app train
    tasks; no multi-app, as the paper's iOS data lacked them)."""
    return get_suite(suite).sft_tasks(n, seed)


def collect_demonstrations(policy: Policy, n_tasks: int, teacher: Teacher | None = None, seed: int = 0, *,
                           tasks: list | None = None, expert: Planner | None = None, judges=None,
                           devices=None, with_task_ids: bool = False) -> list:
    """Demonstration steps: the expert plays ``tasks`` and every step becomes (the policy's
    prompt, the teacher's text). Default: the phone world's expert on ``n_tasks`` clean
    single-app train tasks, judged by the oracle (every one must succeed). With other parts
    (e.g. MiniWoB++'s scripted solutions in Chromium, the page judges and a browser pool),
    only the steps of episodes the judges call a success are kept. ``with_task_ids``: (task id,
    Demo) pairs instead of Demos (a file of them: :mod:`navrl.rl.demo_file`)."""
    rec = _Recorder(policy, teacher or TemplateTeacher(), expert)
    if judges is None:
        s = get_suite("train")
        judges = tuple(make_judges(s.default_judge(s.devices[0]))[:3])
    runner = EpisodeRunner(rec, AccessibilityGrounder(), *judges[:3])
    phone = tasks is None
    trajs = runner.run(sft_tasks(n_tasks, seed) if phone else list(tasks), devices=devices)
    if phone:
        assert all(t.success for t in trajs), "the expert failed a clean demonstration task"
    won = {t.task.get("id") for t in trajs if t.valid and t.success}
    return [(tid, d) if with_task_ids else d for tid, d in rec.demos if tid in won]


@dataclass
class SFTResult:
    heldout_before: float
    heldout_after: float
    train_losses: list[float] = field(default_factory=list)
    heldout_losses: list[float] = field(default_factory=list)
    n_train: int = 0
    n_heldout: int = 0
    n_dropped: int = 0
    """Demonstration steps the policy cannot express (left out, counted)."""
    seconds: float = 0.0
    demos: list = field(default_factory=list, repr=False)
    """The demonstrations trained on and held out (for PPO-ptx's supervised term)."""


def _batches(demos: list[Demo], size: int, rng: random.Random | None) -> list[list[Demo]]:
    order = sorted(demos, key=lambda d: len(d.prompt))          # length buckets: less padding
    chunks = [order[i:i + size] for i in range(0, len(order), size)]
    if rng is not None:
        rng.shuffle(chunks)
    return chunks


def token_nll(policy: Policy, prompts: list[str], outputs: list[list[int]]) -> torch.Tensor:
    """Mean negative log-likelihood per output token (or decision factor) of ``outputs`` after
    ``prompts`` under ``policy`` (scalar, with grad)."""
    sb = policy.score(prompts, outputs)
    return -(sb.logprobs.sum() / sb.mask.sum())


def demo_loss(policy: Policy, batch: list[Demo], weights: dict[str, float] | None = None) -> torch.Tensor:
    """Mean negative log-likelihood per output token (or decision factor); ``weights`` maps a
    Step kind to a per-demonstration weight (see ``SFTConfig.balance_kinds``)."""
    targets = [policy.encode_demo(d.prompt, d.target) for d in batch]
    if not weights:
        return token_nll(policy, [d.prompt for d in batch], targets)
    sb = policy.score([d.prompt for d in batch], targets)
    w = torch.tensor([weights.get(step_kind(d.target), 1.0) for d in batch])[:, None]
    return -((sb.logprobs * w).sum() / (sb.mask * w).sum())


def augment_batch(policy: Policy, batch: list[Demo], share: float, rng: random.Random) -> list[Demo]:
    """``batch`` with each demonstration replaced, with probability ``share``, by its randomised
    form (same target); one the policy cannot express once randomised stays as it was."""
    out = []
    for d in batch:
        if rng.random() < share:
            a = Demo(policy.augment_prompt(d.prompt, rng), d.target)
            if policy.encode_demo(a.prompt, a.target) is not None:
                d = a
        out.append(d)
    return out


def step_kind(target: str) -> str:
    """The command kind of a demonstration target's Step (tap, type, ask_user ...)."""
    from navrl.agent.steps import parse_step
    plan = parse_plan(target)
    return parse_step(plan.step).kind if plan else "unknown"


def kind_weights(demos: list[Demo], power: float) -> dict[str, float]:
    """Step kind -> frequency^-power, normalised so the mean weight over ``demos`` is 1."""
    from collections import Counter
    if power <= 0 or not demos:
        return {}
    c = Counter(step_kind(d.target) for d in demos)
    raw = {k: (n / len(demos)) ** -power for k, n in c.items()}
    mean = sum(raw[step_kind(d.target)] for d in demos) / len(demos)
    return {k: v / mean for k, v in raw.items()}


@torch.no_grad()
def heldout_loss(policy: Policy, demos: list[Demo], size: int = 64) -> float:
    tot, n = 0.0, 0
    for b in _batches(demos, size, None):
        targets = [policy.encode_demo(d.prompt, d.target) for d in b]
        sb = policy.score([d.prompt for d in b], targets)
        tot += float(-sb.logprobs.sum())
        n += int(sb.mask.sum())
    return tot / max(n, 1)


def train_sft(policy: Policy, demos: list[Demo], cfg: SFTConfig,
              progress: Callable[[int, int, float], None] | None = None) -> SFTResult:
    """Standard SFT: token cross-entropy on the targets, held-out loss before and after."""
    cfg.validate()
    t0 = time.perf_counter()
    policy.prepare_sft(demos)
    n_all = len(demos)
    demos = [d for d in demos if policy.encode_demo(d.prompt, d.target) is not None]
    if not demos:
        from navrl.rl.config import ConfigError
        raise ConfigError("the policy can express none of the demonstrations")
    rng = random.Random(cfg.seed)
    # split by prompt so near-duplicate steps do not leak across the split
    idx = list(range(len(demos)))
    rng.shuffle(idx)
    k = max(1, int(len(demos) * cfg.heldout_frac))
    held, train = [demos[i] for i in idx[:k]], [demos[i] for i in idx[k:]]
    res = SFTResult(heldout_loss(policy, held), 0.0, n_train=len(train), n_heldout=len(held),
                    n_dropped=n_all - len(demos), demos=list(demos))
    opt = torch.optim.AdamW(policy.policy_parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    total = cfg.epochs * ((len(train) + cfg.batch_size - 1) // cfg.batch_size)
    warm = max(1, total // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + __import__("math").cos(__import__("math").pi * min(1.0, s / total))))
    step = 0
    weights = kind_weights(train, cfg.balance_kinds)
    for epoch in range(cfg.epochs):
        for b in _batches(train, cfg.batch_size, rng):
            if cfg.augment > 0:
                b = augment_batch(policy, b, cfg.augment, rng)
            loss = demo_loss(policy, b, weights)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.policy_parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            res.train_losses.append(loss.item())
            if progress is not None:
                progress(step, total, res.train_losses[-1])
        res.heldout_losses.append(heldout_loss(policy, held))
    res.heldout_after = res.heldout_losses[-1]
    res.seconds = time.perf_counter() - t0
    return res
