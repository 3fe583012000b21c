"""``navrl report RUN_DIR``: a self-contained HTML report of a training run."""
from __future__ import annotations

from navrl.cli.common import CLIError


def register(sub) -> None:
    r = sub.add_parser("report", help="write RUN_DIR/report.html (curves, evaluation, filmstrips)")
    r.add_argument("run_dir")
    r.add_argument("--out", default=None, help="HTML file to write (default RUN_DIR/report.html)")
    r.set_defaults(fn=run)


def run(args) -> int:
    from navrl.report.html import ReportError, build_report
    try:
        path = build_report(args.run_dir, args.out)
    except ReportError as e:
        raise CLIError(str(e)) from None
    print(f"report: {path}")
    return 0
