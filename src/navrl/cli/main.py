"""The ``navrl`` command line.

Each subcommand lives in a ``cmd_*.py`` module of this package with a
``register(subparsers)`` function; they are discovered at start-up. Bad input: one clear
line on stderr and exit code 2.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys
from pathlib import Path

from navrl.cli.common import EXIT_BAD_INPUT, CLIError

FILE_OUT = ("report", "synth-tasks")
"""Commands whose ``--out`` is a file; every other ``--out`` is a directory."""
EXIT_OUTAGE = 3
"""Exit code when infrastructure failed for everything (nothing measured): not bad input."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not argparse's usage block
        sys.stderr.write(f"navrl: error: {message}\n")
        raise SystemExit(EXIT_BAD_INPUT)


class _Version(argparse.Action):
    """``navrl --version``: the version and the commit of navrl's checkout (looked up only when asked)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from navrl import __version__
        from navrl.provenance import git_commit
        sys.stdout.write(f"navrl {__version__} (commit {git_commit()}, python {sys.version.split()[0]})\n")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="navrl", description="Online dense RL for planner-grounder UI agents.")
    p.add_argument("--version", action=_Version, help="print navrl's version and commit, then exit")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    import navrl.cli as pkg
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("cmd_"):
            importlib.import_module(f"navrl.cli.{info.name}").register(sub)
    return p


def _input_errors() -> tuple[type[BaseException], ...]:
    """The library's typed bad-input exceptions: one line and exit 2 wherever they surface."""
    from navrl.api.client import APIRequestError
    from navrl.rl.config import ConfigError
    from navrl.rl.metrics import MetricsError
    from navrl.tasks.task import TaskError
    errs: list[type[BaseException]] = [CLIError, ConfigError, TaskError, MetricsError, APIRequestError]
    for mod, name in (("navrl.rl.trainer", "CheckpointError"), ("navrl.report.html", "ReportError")):
        m = sys.modules.get(mod)   # only if loaded: importing them pulls in torch / matplotlib
        if m is not None:
            errs.append(getattr(m, name))
    return tuple(errs)


def _one_line(e: BaseException) -> str:
    s = " ".join(str(e).split()) or type(e).__name__
    return s if len(s) <= 400 or getattr(e, "whole", False) else s[:397] + "..."


def main(argv: list[str] | None = None) -> int:
    if not logging.getLogger().handlers:
        logging.basicConfig(format="navrl: %(levelname)s: %(message)s", level=logging.WARNING)
    args = build_parser().parse_args(argv)
    from navrl.cli.common import CREATED, remove_empty_created
    CREATED.clear()
    ok = False
    try:
        rc = _run(args)
        ok = rc == 0
        return rc
    finally:
        if not ok:   # refused or failed: no empty output folders left behind
            remove_empty_created()
        CREATED.clear()


def _run(args) -> int:
    from navrl.api.client import APIUnavailable
    from navrl.errors import Outage
    try:
        out = getattr(args, "out", None)
        if out is not None:   # a file where a folder goes, or an unwritable place: refused before any work
            from navrl.cli.common import prepare_out_file, _probe_dir
            if args.cmd in FILE_OUT:
                prepare_out_file(out)
            else:
                _probe_dir(Path(out), "--out")
        return int(args.fn(args) or 0)
    except (Outage, APIUnavailable) as e:   # infrastructure, not bad input
        sys.stderr.write(f"navrl: error: {_one_line(e)}\n")
        return EXIT_OUTAGE
    except KeyboardInterrupt:
        sys.stderr.write("navrl: interrupted\n")
        return 130
    except Exception as e:
        if isinstance(e, _input_errors()):
            sys.stderr.write(f"navrl: error: {_one_line(e)}\n")
            return EXIT_BAD_INPUT
        raise


if __name__ == "__main__":
    raise SystemExit(main())
