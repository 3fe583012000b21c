"""``navrl experiment paper-table`` (the transcript's comparison on the phone world) and
``navrl experiment miniwob`` (MiniWoB++ as a learning benchmark)."""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

from navrl.cli.common import CLIError, prepare_out_dir

CONFIGS = Path(__file__).resolve().parents[1] / "experiments" / "configs"


def register(sub) -> None:
    e = sub.add_parser("experiment", help="reproducible experiments")
    esub = e.add_subparsers(dest="experiment", required=True, parser_class=type(e))
    p = esub.add_parser("paper-table", help="SFT once, then PPO, terminal-only PPO, GiGPPO, GRPO, GiGPO, cautionary GRPO")
    p.add_argument("--config", default=None,
                   help="YAML (default src/navrl/experiments/configs/paper_table.yaml)")
    p.add_argument("--quick", action="store_true", help="tiny sizes: checks the plumbing, not the result")
    p.add_argument("--out", default="runs/paper-table")
    p.add_argument("--overwrite", action="store_true", help="replace results already in OUT")
    p.set_defaults(fn=run)
    m = esub.add_parser("miniwob", help="MiniWoB++: BC only vs BC + RL vs RL only, next to the published anchors")
    m.add_argument("--config", default=None,
                   help="YAML, or a name of the shipped configs: 'all' (every task that runs: "
                        "configs/miniwob_all.yaml); default configs/miniwob.yaml (the 23-task table)")
    m.add_argument("--quick", action="store_true", help="2 tasks, tiny sizes: checks the plumbing, not the result")
    m.add_argument("--out", default="runs/miniwob")
    m.add_argument("--overwrite", action="store_true", help="replace results already in OUT")
    m.add_argument("--resume", action="store_true",
                   help="continue the stopped run in OUT (same config): its finished methods and BC planner kept")
    m.set_defaults(fn=run_miniwob)


def _experiment(args, stem: str, load, run_it) -> int:
    """Load the config (``--config``, or ``configs/STEM[_quick].yaml``), prepare OUT, run, say where."""
    from navrl.rl.config import ConfigError
    path = Path(args.config) if args.config else CONFIGS / f"{stem}{'_quick' if args.quick else ''}.yaml"
    if args.config and path.suffix == "" and "/" not in args.config:      # a shipped config's name
        named = CONFIGS / f"{stem}_{args.config}.yaml"
        if not named.is_file():
            have = sorted(f.stem[len(stem) + 1:] for f in CONFIGS.glob(f"{stem}_*.yaml"))
            raise CLIError(f"no config named {args.config!r} for {stem}; shipped: {', '.join(have)} (or a YAML path)")
        path = named
    try:
        cfg = load(path)
    except ConfigError as e:
        raise CLIError(str(e)) from None
    resume = getattr(args, "resume", False)
    prepare_out_dir(args.out, overwrite=args.overwrite, resume=resume, resumable=hasattr(args, "resume"))
    cmd = "navrl " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    try:
        # each line flushed: an hours-long run's log, redirected to a file, is read while it runs
        res = run_it(cfg, args.out, command=cmd, log=lambda line: print(line, flush=True),
                     **({"resume": True} if resume else {}))
    except ConfigError as e:      # --resume of a run that is not this config's
        raise CLIError(str(e)) from None
    print(f"results: {res}")
    return 0


def run(args) -> int:
    from navrl.experiments.paper_table import TableConfig, run_paper_table
    return _experiment(args, "paper_table", TableConfig.load, run_paper_table)


def run_miniwob(args) -> int:
    from navrl.experiments.miniwob import MiniWoBConfig, run_miniwob as run_it
    from navrl.tasks.registry import get_suite
    why = get_suite("miniwob").available()
    if why:
        raise CLIError(f"navrl experiment miniwob needs the browser device: {why}")
    return _experiment(args, "miniwob", MiniWoBConfig.load, run_it)
