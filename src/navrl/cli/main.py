"""The ``navrl`` command line.

Each subcommand lives in a ``cmd_*.py`` module of this package with a
``register(subparsers)`` function; they are discovered at start-up. Bad input: one clear
line on stderr and exit code 2.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from navrl.cli.common import EXIT_BAD_INPUT, CLIError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not argparse's usage block
        sys.stderr.write(f"navrl: error: {message}\n")
        raise SystemExit(EXIT_BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="navrl", description="Online dense RL for planner-grounder UI agents.")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    import navrl.cli as pkg
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("cmd_"):
            importlib.import_module(f"navrl.cli.{info.name}").register(sub)
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
