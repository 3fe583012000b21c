"""``navrl demo``: the main job on the embedded default (what ``make demo`` runs)."""
from __future__ import annotations

from pathlib import Path


def register(sub) -> None:
    d = sub.add_parser("demo", help="the main job on the embedded default")
    d.add_argument("--out", default="runs/demo")
    d.set_defaults(fn=run)


def run(args) -> int:
    from navrl.agent.planner import ExpertPlanner
    from navrl.cli.cmd_play import play_episode
    from navrl.tasks.spec import make_task
    task = make_task("shop_checkout", 3, suite="demo")
    path = play_episode(task, ExpertPlanner(), Path(args.out))
    print(f"filmstrip: {path.resolve()}")
    return 0
