"""``navrl experiment paper-table``: the transcript's comparison on the phone world."""
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


def run(args) -> int:
    from navrl.experiments.paper_table import TableConfig, run_paper_table
    from navrl.rl.config import ConfigError
    name = "paper_table_quick.yaml" if args.quick else "paper_table.yaml"
    path = Path(args.config) if args.config else CONFIGS / name
    try:
        cfg = TableConfig.load(path)
    except ConfigError as e:
        raise CLIError(str(e)) from None
    prepare_out_dir(args.out, overwrite=args.overwrite)
    cmd = "navrl " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    md = run_paper_table(cfg, args.out, command=cmd)
    print(f"results: {md}")
    return 0
