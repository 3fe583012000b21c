"""Evaluate a planner on a suite (or any tasks, judges and devices): success rate with a 95%
interval, verdict counts, cost; and the periodic evaluation of a trainer's policy."""
from __future__ import annotations

import random

from navrl.agent.grounders.accessibility import AccessibilityGrounder
from navrl.agent.grounders.base import Grounder
from navrl.agent.planner import Planner
from navrl.agent.policy.base import greedy
from navrl.api.client import APIRequestError
from navrl.eval.result import EvalAborted, EvalResult, summarize
from navrl.judge.sets import base_kind, make_judges
from navrl.rollout.records import Trajectory
from navrl.rollout.runner import EpisodeRunner, RunnerConfig
from navrl.tasks.registry import get_suite, suites as registered_suites
from navrl.tasks.task import Task


def evaluate(planner: Planner, suite: str, n: int | None = None, tasks: list[Task] | None = None,
             grounder: Grounder | None = None, batch_size: int = 64, seed: int = 0, record_frames: bool = False,
             progress=None, devices=None, judges=None, user=None) -> EvalResult:
    """Run ``planner`` on ``n`` instances of ``suite`` in batches; ``progress(k)`` after each step.

    ``devices``: a device farm (``navrl.device.ray_farm.make_device_factory``); default: a
    fresh in-process device per episode (the task's own). ``judges``: (step, ask, terminal)
    judges, default the suite's default judge set on in-process devices (the phone world's:
    the oracle); ``user``: the simulated user, default the task's hidden profile."""
    tasks = tasks if tasks is not None else get_suite(suite).tasks(n, seed)
    if judges is None:
        s = get_suite(suite) if suite in registered_suites() else get_suite("train")
        judges = tuple(make_judges(s.default_judge(s.devices[0]))[:3])
    step_j, ask_j, term_j = judges
    runner = EpisodeRunner(planner, grounder or AccessibilityGrounder(), step_j, ask_j, term_j, user=user,
                           config=RunnerConfig(record_frames=record_frames))
    trajs: list[Trajectory] = []
    for i in range(0, len(tasks), batch_size):
        chunk = tasks[i:i + batch_size]
        try:
            trajs += runner.run(chunk, devices=devices, on_step=progress)
        except APIRequestError as e:
            done = trajs + list(getattr(e, "completed", []))
            raise EvalAborted(f"{e} (evaluation stopped after {len(done)} of {len(tasks)} episodes)",
                              summarize(suite, done), e) from e
    return summarize(suite, trajs)


def _fixed_suites(trainer) -> bool:
    """Whether :func:`evaluate_trainer` runs the fixed evaluation suites (else tasks of the trainer's source)."""
    src = getattr(trainer.tasks, "suite", None)
    # a run trained under a noisy judge (navrl.judge.noisy) is evaluated by the exact judge it corrupts:
    # the success its planner reached, not what the noisy judge said about it
    return (isinstance(src, str) and src in registered_suites() and trainer.devices is None
            and base_kind(trainer.judges.kind) == get_suite(src).default_judge(get_suite(src).devices[0]))


def evaluation_plan(trainer, suites=None, episodes: int | None = None) -> list[tuple[str, int, int]]:
    """What :func:`evaluate_trainer` will run, for a progress bar: ``(suite, episodes, steps at
    most)`` per suite (the step bound of a trainer's own source is ``episodes x cfg.rollout.max_steps``)."""
    cfg = trainer.cfg
    n = episodes or cfg.run.eval_episodes
    if _fixed_suites(trainer):
        plan = []
        for s in suites or cfg.run.eval_suites:
            tasks = get_suite(s).tasks(n, 0)
            plan.append((s, len(tasks), sum(t.max_steps for t in tasks)))
        return plan
    return [(trainer.tasks.name, n, n * cfg.rollout.max_steps)]


def evaluate_trainer(trainer, suites=None, episodes: int | None = None, progress=None,
                     seed: int = 0, record_frames: bool = False) -> dict[str, EvalResult]:
    """Greedy evaluation of ``trainer``'s policy, logged to its metrics (``kind: eval``).

    When the trainer draws from a registered suite (``source.suite``) on in-process devices
    with that suite's default judges (the phone world and its oracle): the suites ``suites``
    (default ``cfg.run.eval_suites``), each task on its own device, as in every results table.
    With any other parts (MiniWoB++, a web app, synthesised tasks, real devices): ``episodes``
    tasks drawn from the trainer's task source with an RNG of its own (``cfg.run.seed + 2 + seed``),
    on the trainer's devices and judges, reported under the source's name."""
    cfg = trainer.cfg
    n = episodes or cfg.run.eval_episodes
    fixed = _fixed_suites(trainer)
    pol = greedy(trainer.policy)   # greedy through a view: the trainer's policy is not touched
    if fixed:
        out = {s: evaluate(pol, s, n, grounder=trainer.grounder, progress=progress, record_frames=record_frames)
               for s in suites or cfg.run.eval_suites}
    else:
        tasks = trainer.tasks.sample(n, random.Random(cfg.run.seed + 2 + seed))
        out = {trainer.tasks.name: evaluate(
            pol, trainer.tasks.name, tasks=tasks, grounder=trainer.grounder, progress=progress,
            record_frames=record_frames,
            devices=trainer.devices, judges=tuple(trainer.judges[:3]),
            batch_size=cfg.trajectories_per_update if trainer.devices is not None else 64)}
    if trainer.logger:
        trainer.logger.log({"kind": "eval", "update": trainer.update, **{s: r.to_dict() for s, r in out.items()}})
    return out
