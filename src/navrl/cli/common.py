"""Shared CLI helpers. Bad input raises CLIError: one line on stderr, exit code 2."""
from __future__ import annotations

EXIT_BAD_INPUT = 2


class CLIError(Exception):
    """Bad arguments or files: reported as one line, exit code 2."""


def task_from_args(args):
    """A TaskSpec from ``--task TEMPLATE[:SEED]`` or ``--suite S --index N`` (+ ``--skin``, ``--no-perturb``)."""
    from navrl.device.phone import PerturbConfig
    from navrl.tasks.spec import TaskError, make_task
    from navrl.tasks.suites import suite_tasks
    perturb = PerturbConfig.off() if getattr(args, "no_perturb", False) else None
    try:
        if args.task:
            name, _, seed = args.task.partition(":")
            try:
                seed_i = int(seed) if seed else 0
            except ValueError:
                raise CLIError(f"bad seed in --task {args.task!r}: use TEMPLATE[:SEED]") from None
            return make_task(name, seed_i, skin=args.skin or "ios", perturb=perturb)
        if args.index < 0:
            raise CLIError("--index must be >= 0")
        t = suite_tasks(args.suite, args.index + 1, perturb=perturb)[args.index]
        return t if args.skin is None else t.with_(skin=args.skin)
    except TaskError as e:
        raise CLIError(str(e)) from None


AGENTS = ("expert", "random", "api")


def make_planner(name: str, seed: int = 0, **kw):
    """Planner by name: expert, random, api (OpenAI-compatible endpoint from env/config)."""
    from navrl.agent.planner import ExpertPlanner, RandomPlanner
    if name == "expert":
        return ExpertPlanner()
    if name == "random":
        return RandomPlanner(seed)
    if name == "api":
        try:
            from navrl.agent.api_planner import APIPlanner
        except ImportError as e:  # pragma: no cover
            raise CLIError(f"the api agent is unavailable: {e}") from None
        try:
            return APIPlanner.from_env(**kw)
        except ValueError as e:
            raise CLIError(str(e)) from None
    raise CLIError(f"unknown agent {name!r}; choose from {', '.join(AGENTS)}")
