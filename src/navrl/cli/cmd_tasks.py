"""``navrl tasks``: list suites and task templates."""
from __future__ import annotations


def register(sub) -> None:
    t = sub.add_parser("tasks", help="list suites and task templates")
    t.add_argument("--suite", choices=["train", "test-ios", "test-android", "test-unseen", "miniwob"],
                   help="only the templates of this suite")
    t.set_defaults(fn=run)


def run(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from navrl.tasks.spec import make_task, templates
    from navrl.tasks.suites import SUITES, suite_templates
    con = Console()
    if args.suite == "miniwob":
        return _miniwob(con)
    tab = Table(title="Suites")
    for c in ("suite", "skin", "layout", "templates", "description"):
        tab.add_column(c)
    for s in SUITES.values():
        tab.add_row(s.name, s.skin, s.layout, str(len({t.name for t in suite_templates(s.name)})), s.description)
    from navrl.tasks.web import MINIWOB_TASKS
    tab.add_row("miniwob", "web", "iphone", str(len(MINIWOB_TASKS)),
                "MiniWoB++ pages on the Chromium device (navrl[browser]); navrl tasks --suite miniwob")
    con.print(tab)
    keep = {t.name for t in suite_templates(args.suite)} if args.suite else None
    tt = Table(title=f"Templates ({len(templates())})")
    for c in ("template", "family", "apps", "held out", "example goal"):
        tt.add_column(c)
    for name, t in sorted(templates().items()):
        if keep is not None and name not in keep:
            continue
        tt.add_row(name, t.family.value, ", ".join(t.apps), "yes" if t.heldout else "", make_task(name, 0).goal)
    con.print(tt)
    return 0


def _miniwob(con) -> int:
    from rich.table import Table

    from navrl.tasks.web import MINIWOB_SCRIPTS, MINIWOB_TASKS
    tt = Table(title=f"miniwob: MiniWoB++ tasks ({len(MINIWOB_TASKS)}), goals stated by each page per seed")
    for c in ("task", "max steps", "scripted", "what"):
        tt.add_column(c)
    for name, t in MINIWOB_TASKS.items():
        tt.add_row(name, str(t.max_steps), "yes" if name in MINIWOB_SCRIPTS else "", t.description)
    con.print(tt)
    return 0
