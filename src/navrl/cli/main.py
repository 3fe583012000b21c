"""The ``navrl`` command line. Bad input: one clear line on stderr and exit code 2."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXIT_BAD_INPUT = 2


class CLIError(Exception):
    """Bad arguments or files: reported as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not argparse's usage block
        sys.stderr.write(f"navrl: error: {message}\n")
        raise SystemExit(EXIT_BAD_INPUT)


def _task_from_args(args) -> "object":
    from navrl.device.phone import PerturbConfig
    from navrl.tasks.spec import TaskError, make_task
    from navrl.tasks.suites import SUITES, suite_tasks
    perturb = PerturbConfig.off() if args.no_perturb else None
    try:
        if args.task:
            name, _, seed = args.task.partition(":")
            try:
                seed_i = int(seed) if seed else 0
            except ValueError:
                raise CLIError(f"bad seed in --task {args.task!r}: use TEMPLATE[:SEED]") from None
            return make_task(name, seed_i, skin=args.skin or "ios", perturb=perturb)
        tasks = suite_tasks(args.suite, args.index + 1, perturb=perturb)
        t = tasks[args.index]
        return t if args.skin is None else t.with_(skin=args.skin)
    except TaskError as e:
        raise CLIError(str(e)) from None


def _make_planner(name: str, seed: int):
    from navrl.agent.planner import ExpertPlanner, RandomPlanner
    if name == "expert":
        return ExpertPlanner()
    if name == "random":
        return RandomPlanner(seed)
    raise CLIError(f"unknown agent {name!r}; choose expert or random")


def cmd_tasks(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from navrl.tasks.suites import SUITES, suite_templates
    from navrl.tasks.spec import make_task, templates
    con = Console()
    tab = Table(title="Suites")
    for c in ("suite", "skin", "layout", "templates", "description"):
        tab.add_column(c)
    for s in SUITES.values():
        tab.add_row(s.name, s.skin, s.layout, str(len(set(t.name for t in suite_templates(s.name)))), s.description)
    con.print(tab)
    tt = Table(title=f"Templates ({len(templates())})")
    for c in ("template", "family", "apps", "held out", "example goal"):
        tt.add_column(c)
    for name, t in sorted(templates().items()):
        if args.suite and t not in suite_templates(args.suite):
            continue
        tt.add_row(name, t.family.value, ", ".join(t.apps), "yes" if t.heldout else "", make_task(name, 0).goal)
    con.print(tt)
    return 0


def play_episode(task, agent: str, out: Path, seed: int = 0, quiet: bool = False) -> Path:
    """Run one episode, save frames, trajectory and a filmstrip; return the filmstrip path."""
    from PIL import Image
    import io

    from navrl.actions import Action
    from navrl.agent.grounders.accessibility import AccessibilityGrounder
    from navrl.fileio import save_image
    from navrl.judge.oracle import OracleJudge
    from navrl.report.filmstrip import Frame, filmstrip
    from navrl.rollout.runner import EpisodeRunner, RunnerConfig
    from navrl.rollout.storage import save_trajectories
    judge = OracleJudge()
    runner = EpisodeRunner(_make_planner(agent, seed), AccessibilityGrounder(), judge, judge, judge,
                           config=RunnerConfig(record_frames=True))
    tr = runner.run([task])[0]
    save_trajectories([tr], out)
    frames = []
    for i, png in enumerate(tr.frames):
        img = Image.open(io.BytesIO(png)).convert("RGB")
        if i < len(tr.steps):
            s = tr.steps[i]
            act = Action.from_text(s.action) if s.action and s.kind == "device" else None
            frames.append(Frame(img, s.step or "(unparseable)", act, s.verdict))
        else:
            end = f"END: {tr.terminal_verdict}" + (f" ({tr.answer})" if tr.answer else "")
            frames.append(Frame(img, end, None, "success" if tr.success else "fail"))
    title = f"[{agent}] {task.goal}  —  {tr.terminal_verdict}, return {tr.total_reward:+.2f}".replace("—", "-")
    path = save_image(out / "filmstrip.png", filmstrip(frames, title))
    if not quiet:
        print(f"task: {task.id}\ngoal: {task.goal}")
        for s in tr.steps:
            print(f"  {s.t + 1:2d}. {s.step or '(unparseable)':45s} {s.verdict or '':12s} {s.reward:+.2f}")
        print(f"end: {tr.end} · terminal: {tr.terminal_verdict} ({tr.terminal_reward:+.2f}) · valid: {tr.valid}")
    return path


def cmd_play(args) -> int:
    task = _task_from_args(args)
    out = Path(args.out)
    path = play_episode(task, args.agent, out, args.seed)
    print(f"filmstrip: {path}")
    return 0


def cmd_demo(args) -> int:
    from navrl.tasks.spec import make_task
    out = Path(args.out)
    task = make_task("shop_checkout", 3, suite="demo")
    path = play_episode(task, "expert", out)
    print(f"filmstrip: {path.resolve()}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="navrl", description="Online dense RL for planner-grounder UI agents.")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    t = sub.add_parser("tasks", help="list suites and task templates")
    t.add_argument("--suite", choices=["train", "test-ios", "test-android", "test-unseen"])
    t.set_defaults(fn=cmd_tasks)
    pl = sub.add_parser("play", help="run one task with an agent; save frames and a filmstrip")
    g = pl.add_mutually_exclusive_group()
    g.add_argument("--task", help="TEMPLATE[:SEED]")
    g.add_argument("--suite", default="test-ios")
    pl.add_argument("--index", type=int, default=0, help="instance index within --suite")
    pl.add_argument("--agent", default="expert", help="expert | random")
    pl.add_argument("--skin", choices=["ios", "android"])
    pl.add_argument("--no-perturb", action="store_true", help="clean world: no pop-ups, shuffles or loading")
    pl.add_argument("--seed", type=int, default=0, help="agent seed (random agent)")
    pl.add_argument("--out", default="runs/play")
    pl.set_defaults(fn=cmd_play)
    d = sub.add_parser("demo", help="the main job on the embedded default")
    d.add_argument("--out", default="runs/demo")
    d.set_defaults(fn=cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args) or 0)
    except CLIError as e:
        sys.stderr.write(f"navrl: error: {e}\n")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        sys.stderr.write("navrl: interrupted\n")
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
