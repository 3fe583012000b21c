"""Rich progress bars shared by the long-running commands."""
from __future__ import annotations

from contextlib import contextmanager

from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Column
from rich.text import Text

TIME = 7
"""Width of a time column (``0:00:20``)."""
BAR = 6
"""The narrowest bar."""


class _Cut(ProgressColumn):
    """A text column of at most ``width`` cells: longer text ends in '…' on one line."""

    def __init__(self, template: str, width: int, style: str = "") -> None:
        self.template, self.width, self.style = template, width, style
        super().__init__(table_column=Column(no_wrap=True))

    def render(self, task) -> Text:
        t = Text(self.template.format(task=task), style=self.style, no_wrap=True)
        t.truncate(self.width, overflow="ellipsis")
        return t


def columns(width: int, description: str, total: int, info: bool = True) -> tuple:
    """The columns of a navrl progress bar ``width`` cells wide: description, bar, done/total,
    info, elapsed and remaining time. The description and info line give way on a narrow
    terminal (shortened with '…') and the bar takes what they leave (:data:`BAR` cells at least); the
    time columns are never cut (``0:0…``), the remaining time dropped below 60 columns.
    ``info``: whether the bar shows an info line (else the description may take its room)."""
    remaining = width >= 60
    n_cols = 4 + int(info) + int(remaining)
    fixed = BAR + 2 * len(str(total)) + 1 + TIME * (2 if remaining else 1) + (n_cols - 1)
    avail = max(0, width - fixed)
    desc = max(8, min(len(description), avail - (min(24, avail // 2) if info else 0)))
    cols = [_Cut("{task.description}", desc, "bold"), BarColumn(bar_width=None),
            MofNCompleteColumn(table_column=Column(no_wrap=True))]
    if info:
        cols.append(_Cut("{task.fields[info]}", max(0, avail - desc)))
    cols.append(TimeElapsedColumn(table_column=Column(no_wrap=True, min_width=TIME)))
    if remaining:
        cols.append(TimeRemainingColumn(table_column=Column(no_wrap=True, min_width=TIME)))
    return tuple(cols)


@contextmanager
def bar(description: str, total: int, console=None, info: bool = True):
    """A progress bar on ``console`` (default: the terminal); yields ``advance(k, info=None)``
    (never past ``total``), with ``.set_total``, ``.complete`` and ``.set_description``."""
    from rich.console import Console
    console = console or Console()
    with Progress(*columns(console.width, description, total, info), console=console) as prog:
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
