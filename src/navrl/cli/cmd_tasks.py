"""``navrl tasks``: the registered suites, and the templates (task families) of one."""
from __future__ import annotations


def register(sub) -> None:
    t = sub.add_parser("tasks", help="list suites and task templates")
    from navrl.cli.parts import add_suite_arguments
    add_suite_arguments(t, None, "only the templates of this suite")
    t.set_defaults(fn=run)


def run(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from navrl.cli.common import CLIError
    from navrl.tasks.registry import get_suite, suite_names, suites
    con = Console()
    if args.suite:
        try:
            rows = get_suite(args.suite).describe()
        except ValueError as e:
            raise CLIError(f"--suite: {e}") from None
        s = get_suite(args.suite)
        tt = Table(title=f"{args.suite}: {s.summary} ({len(rows)} templates)")
        for c in rows[0] if rows else ("template",):
            if c == "template":   # the names --task takes: whole, on one line, at any width
                tt.add_column(c, no_wrap=True, min_width=max((len(r[c]) for r in rows), default=8))
            else:
                tt.add_column(c, overflow="fold")
        for r in rows:
            tt.add_row(*r.values())
        con.print(tt)
        return 0
    tab = Table(title="Suites")
    for c in ("suite", "world", "templates", "devices", "judges", "description"):
        tab.add_column(c, overflow="fold")
    for name, s in suites().items():
        tab.add_row(name, s.world, str(len(s.describe())), ", ".join(s.devices), ", ".join(s.judges), s.summary)
    families = [n for n in suite_names() if ":" in n]
    con.print(tab)
    if families:
        con.print(f"also: {', '.join(families)}; `navrl tasks --suite SUITE` lists a suite's templates")
    return 0
