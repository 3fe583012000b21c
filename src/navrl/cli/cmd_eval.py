"""``navrl eval``: an agent on a suite, with a progress bar and a summary line."""
from __future__ import annotations

import json
from pathlib import Path

from navrl.cli.common import AGENTS, FAULTS_HELP, CLIError, make_planner, parse_faults, prepare_out_dir
from navrl.cli.farm_args import add_farm_arguments


def register(sub) -> None:
    e = sub.add_parser("eval", help="evaluate an agent on a suite")
    e.add_argument("--agent", default="expert", choices=AGENTS)
    e.add_argument("--policy", default=None, metavar="CHECKPOINT",
                   help="evaluate a trained planner instead of --agent: sft.pt, a trainer checkpoint or a run "
                        "directory (pointer, tiny text or Hugging Face planner); decodes greedily")
    e.add_argument("--suite", default="test-ios", choices=["train", "test-ios", "test-android", "test-unseen", "miniwob"],
                   help="a phone-world suite, or miniwob (MiniWoB++ on the Chromium device; expert = scripted solutions)")
    e.add_argument("-n", "--episodes", type=int, default=None, help="episodes (default: two per template)")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--batch", type=int, default=64, help="episodes run side by side")
    e.add_argument("--out", default=None, help="where trajectories and results.json go (default runs/eval-<suite>)")
    e.add_argument("--frames", action="store_true", help="also save PNG frames")
    e.add_argument("--overwrite", action="store_true", help="replace an evaluation already in OUT")
    e.add_argument("--faults", default=None, metavar="NAME=RATE,...", help=FAULTS_HELP)
    add_farm_arguments(e)
    e.set_defaults(fn=run)


def run(args) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from navrl.rollout.evaluate import EvalAborted, evaluate
    from navrl.fileio import atomic_write_text
    from navrl.rollout.storage import save_trajectories
    from navrl.tasks.suites import suite_tasks
    if args.episodes is not None and args.episodes <= 0:
        raise CLIError("--episodes must be positive")
    if args.batch <= 0:
        raise CLIError("--batch must be positive")
    faults = parse_faults(args.faults)
    if args.suite == "miniwob":
        return _run_web(args)
    planner = _policy(args.policy) if args.policy else make_planner(args.agent, args.seed)
    tasks = suite_tasks(args.suite, args.episodes, seed=args.seed)
    if faults is not None:
        tasks = [t.with_(faults=faults) for t in tasks]
    out = prepare_out_dir(args.out or f"runs/eval-{args.suite}", overwrite=args.overwrite)
    farm = None
    if args.ray is not None:
        if args.hosts <= 0:
            raise CLIError("--hosts must be positive")
        from navrl.device.ray_farm import FarmUnavailable, make_device_factory
        try:
            farm = make_device_factory(args.ray, devices=min(args.batch, len(tasks)), hosts=args.hosts,
                                       screenshots="eager" if args.frames else "lazy")
        except FarmUnavailable as e:
            raise CLIError(str(e)) from None
    total_steps = sum(t.max_steps for t in tasks)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("steps (upper bound)"), TimeElapsedColumn()) as prog:
        who = f"policy {Path(args.policy).name}" if args.policy else args.agent
        bar = prog.add_task(f"{who} on {args.suite}", total=total_steps)
        try:
            res = evaluate(planner, args.suite, tasks=tasks, batch_size=args.batch, record_frames=args.frames,
                           progress=lambda k: prog.advance(bar, k), devices=farm)
        except EvalAborted as e:   # e.g. HTTP 401: one line, exit 2, the finished episodes saved
            save_trajectories(e.result.trajectories, out, frames=args.frames)
            atomic_write_text(out / "results.json", json.dumps({**e.result.to_dict(), "aborted": str(e)}, indent=2))
            raise CLIError(f"{e}; the {len(e.result.trajectories)} finished episodes are saved in {out}") from None
        finally:
            farm_stats = farm.stats() if farm is not None else None
            if farm is not None:
                farm.close()
        prog.update(bar, completed=total_steps)
    save_trajectories(res.trajectories, out, frames=args.frames)
    atomic_write_text(out / "results.json", json.dumps(res.to_dict(), indent=2))
    res.require_measured()   # every episode masked: an outage, not 0% (exit 3)
    print(res.summary())
    if farm_stats is not None:
        print(f"device farm: {farm_stats['hosts']} hosts, {farm_stats['devices']} devices, "
              f"{farm_stats['resets']} resets, {farm_stats['failures']} device failures, "
              f"{farm_stats['masked_host_lost']} masked (device_host_lost)")
    print(f"trajectories: {out / 'trajectories.jsonl'}")
    return 0


def _policy(path: str):
    """A trained planner from a checkpoint, set to greedy decoding."""
    from navrl.experiments.pipeline import load_policy
    from navrl.rl.trainer import CheckpointError
    try:
        policy = load_policy(path)
    except CheckpointError as e:
        raise CLIError(f"--policy: {e}") from None
    policy.sample = False
    return policy


def _run_web(args) -> int:
    """``--suite miniwob``: the browser device from a pool (or the Ray farm), the page's reward as judge."""
    from navrl.agent.grounders.accessibility import AccessibilityGrounder
    from navrl.device.browser import BrowserBackend, browser_ready
    from navrl.device.ray_farm import FarmUnavailable, make_device_factory
    from navrl.fileio import atomic_write_text
    from navrl.judge.web import web_judges
    from navrl.rollout.evaluate import summarize
    from navrl.rollout.runner import EpisodeRunner, RunnerConfig
    from navrl.rollout.storage import save_trajectories
    from navrl.tasks.spec import TaskError
    from navrl.tasks.web import ScriptedWebPlanner, miniwob_available, miniwob_tasks
    why = browser_ready() or miniwob_available()
    if why:
        raise CLIError(f"--suite miniwob needs the browser device: {why}")
    if args.ray is not None:
        raise CLIError("--suite miniwob runs on the in-process browser pool: the Ray farm's observations do not "
                       "carry the page's reward, which the miniwob judge reads")
    if args.faults is not None:
        raise CLIError("--faults injects faults into the phone world; --suite miniwob runs in the browser")
    planner = (_policy(args.policy) if args.policy else
               ScriptedWebPlanner() if args.agent == "expert" else make_planner(args.agent, args.seed))
    try:
        tasks = miniwob_tasks(args.episodes, seed=args.seed)
    except TaskError as e:
        raise CLIError(str(e)) from None
    out = prepare_out_dir(args.out or "runs/eval-miniwob", overwrite=args.overwrite)
    shots = "eager" if (args.frames or args.agent == "api") else "off"
    try:
        farm = make_device_factory(None, devices=min(args.batch, len(tasks)), backend=BrowserBackend(screenshots=shots))
    except FarmUnavailable as e:
        raise CLIError(str(e)) from None
    sj, aj, tj = web_judges()
    runner = EpisodeRunner(planner, AccessibilityGrounder(), sj, aj, tj, config=RunnerConfig(record_frames=args.frames))
    trajs = []
    try:
        for i in range(0, len(tasks), args.batch):
            trajs += runner.run(tasks[i:i + args.batch], devices=farm)
    finally:
        farm.close()
    res = summarize("miniwob", trajs)
    save_trajectories(res.trajectories, out, frames=args.frames)
    atomic_write_text(out / "results.json", json.dumps(res.to_dict(), indent=2))
    res.require_measured()
    print(res.summary())
    print(f"trajectories: {out / 'trajectories.jsonl'}")
    return 0
