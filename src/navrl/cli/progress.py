"""Rich progress bars shared by the long-running commands."""
from __future__ import annotations

from contextlib import contextmanager

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


@contextmanager
def bar(description: str, total: int):
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[info]}"), TimeElapsedColumn(), TimeRemainingColumn()) as prog:
        task = prog.add_task(description, total=total, info="")

        def advance(k: int = 1, info: str | None = None) -> None:
            t = prog.tasks[0]
            if t.total is not None and t.completed + k > t.total:   # never past the total: it was a bound
                k = max(0, int(t.total - t.completed))
            prog.advance(task, k)
            if info is not None:
                prog.update(task, info=info)
        advance.set_total = lambda n: prog.update(task, total=n)   # type: ignore[attr-defined]
        advance.complete = lambda: prog.update(task, completed=prog.tasks[0].total)  # type: ignore[attr-defined]
        advance.set_description = lambda d: prog.update(task, description=d)  # type: ignore[attr-defined]
        yield advance
