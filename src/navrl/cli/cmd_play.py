"""``navrl play``: one task, one agent or trained planner (``--policy``); PNG frames, a trajectory and a filmstrip."""
from __future__ import annotations

from pathlib import Path

from navrl.cli.common import AGENTS, FAULTS_HELP, make_planner, prepare_out_dir, task_from_args
from navrl.report.filmstrip import trajectory_filmstrip


PLAY_FILES = ("trajectories.jsonl", "frames", "filmstrip.png")
"""What ``navrl play`` writes; a new play into the same folder replaces them (no stale frames)."""


def register(sub) -> None:
    pl = sub.add_parser("play", help="run one task with an agent or a trained planner (--policy); save frames and a filmstrip")
    g = pl.add_mutually_exclusive_group()
    g.add_argument("--task", help="TEMPLATE[:SEED] of the phone world (see `navrl tasks`)")
    from navrl.cli.parts import add_suite_arguments
    add_suite_arguments(pl, "test-ios", "take instance --index of this suite", group=g)
    pl.add_argument("--index", type=int, default=0, help="instance index within --suite")
    pl.add_argument("--agent", default="expert", choices=AGENTS)
    pl.add_argument("--policy", default=None, metavar="CHECKPOINT",
                    help="watch a trained planner instead of --agent: sft.pt, a trainer checkpoint or a run "
                         "directory (navrl train's --out); decodes greedily")
    pl.add_argument("--skin", choices=["ios", "android"])
    pl.add_argument("--no-perturb", action="store_true", help="clean world: no pop-ups, shuffles or loading")
    pl.add_argument("--seed", type=int, default=0, help="agent seed (random agent)")
    pl.add_argument("--out", default="runs/play",
                    help="folder for frames, trajectory and filmstrip (an earlier play's files there are replaced)")
    pl.add_argument("--overwrite", action="store_true", help="replace a run (training, evaluation) already in OUT")
    pl.add_argument("--faults", default=None, metavar="NAME=RATE,...", help=FAULTS_HELP)
    pl.set_defaults(fn=run)


def play_episode(task, planner, out: Path, quiet: bool = False, suite=None) -> Path:
    """Run one episode, save frames, trajectory and a filmstrip; return the filmstrip path.
    ``suite``: the task's suite (its default judges score the episode; default: the registered
    suite the task names, else the phone world's). A device that fails before the episode can
    start (a page that never loads) is an :class:`~navrl.errors.Outage` (exit 3)."""
    from navrl.agent.grounders.accessibility import AccessibilityGrounder
    from navrl.device.base import DeviceError
    from navrl.errors import Outage
    from navrl.fileio import save_image
    from navrl.judge.sets import make_judges
    from navrl.rollout.runner import EpisodeRunner, RunnerConfig
    from navrl.rollout.storage import save_trajectories
    from navrl.tasks.registry import get_suite, suites
    s = suite or (get_suite(task.suite) if task.suite in suites() else get_suite("train"))
    judges = make_judges(s.default_judge(s.devices[0]))
    runner = EpisodeRunner(planner, AccessibilityGrounder(), *judges[:3], config=RunnerConfig(record_frames=True))
    try:
        tr = runner.run([task])[0]
    except DeviceError as e:
        raise Outage(f"{task.id}: the device failed before the episode could start ({e}); nothing was played") from None
    save_trajectories([tr], out)
    title = f"[{planner.name}] {task.goal}  -  {tr.terminal_verdict}, return {tr.total_reward:+.2f}"
    path = save_image(out / "filmstrip.png", trajectory_filmstrip(tr, title))
    if not quiet:
        print(f"task: {task.id}\ngoal: {task.goal}")
        for s in tr.steps:
            print(f"  {s.t + 1:2d}. {(s.step or '(unparseable)')[:60]:60s} {s.verdict or '':12s} {s.reward:+.2f}")
        print(f"end: {tr.end} · terminal: {tr.terminal_verdict} ({tr.terminal_reward:+.2f}) · valid: {tr.valid}"
              + (f" ({tr.invalid_reason})" if not tr.valid else ""))
    return path


def run(args) -> int:
    from navrl.cli.common import CLIError
    from navrl.cli.parts import need_expert
    from navrl.tasks.registry import get_suite
    from navrl.tasks.task import TaskError
    try:
        suite = get_suite("train" if args.task else args.suite)
    except TaskError as e:
        raise CLIError(str(e)) from None
    task = task_from_args(args, suite)
    if not args.policy:
        need_expert(suite, [task], args)
    if args.policy:
        from navrl.cli.cmd_eval import _policy
        planner = _policy(args.policy)
        print(f"planner: the trained planner of {args.policy} (greedy)")
    else:
        planner = make_planner(args.agent, args.seed)
    out = prepare_out_dir(args.out, overwrite=args.overwrite, replace_own=PLAY_FILES)
    path = play_episode(task, planner, out, suite=suite)
    print(f"filmstrip: {path}")
    return 0
