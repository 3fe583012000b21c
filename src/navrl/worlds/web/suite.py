"""The web world's suites as registry entries (:class:`navrl.tasks.registry.Suite`)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from navrl.tasks.registry import Suite, SuiteOptions
from navrl.tasks.task import TaskError


class _WebSuite(Suite):
    world = "web"
    devices = ("browser",)
    judges = ("page", "page-fields", "llm")

    def check(self, devices: str, judge: str, options: SuiteOptions = SuiteOptions()) -> str | None:
        if devices != "browser":
            return f"--suite {self.spec} is a web suite: it runs on --devices browser"
        if judge == "oracle":
            return ("--judge oracle replays the phone world's experts: it needs a phone-world suite on "
                    "--devices phone (use --judge llm, or page for web suites)")
        return super().check(devices, judge, options)

    def available(self) -> str | None:
        from navrl.device.browser import browser_ready
        return browser_ready()

    @property
    def spec(self) -> str:
        return self.name


class MiniWoBSuite(_WebSuite):
    """``miniwob``: MiniWoB++ task pages of the installed ``miniwob`` package (``--tasks`` picks any)."""

    name = "miniwob"
    summary = ("MiniWoB++ in Chromium (the page's own reward); --tasks picks any page of the installed package "
               "or a group: all, ccnet, table23, scripted (the default)")
    option_names = ("names", "phone")

    def available(self) -> str | None:
        from navrl.worlds.web.tasks import miniwob_available
        return super().available() or miniwob_available()

    def task_names(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """Pages of the installed package and groups (``all``, ``ccnet``, ``table23``, ``scripted``) expanded."""
        from navrl.worlds.web.tasks import resolve_miniwob_names
        return resolve_miniwob_names(names) if names else ()

    def tasks(self, n: int | None, seed: int, options: SuiteOptions = SuiteOptions()) -> list[Any]:
        from navrl.worlds.web.tasks import miniwob_tasks
        return miniwob_tasks(n, seed=seed, names=list(options.names) or None, phone=options.phone or "iphone")

    def source(self, options: SuiteOptions = SuiteOptions()) -> Any:
        from navrl.worlds.web.source import MiniWoBTasks
        return MiniWoBTasks(options.names, phone=options.phone or "iphone")

    def expert_names(self) -> tuple[str, ...] | None:
        from navrl.worlds.web.tasks import MINIWOB_SCRIPTS
        return tuple(MINIWOB_SCRIPTS)

    def describe(self) -> list[dict[str, str]]:
        from navrl.worlds.web.tasks import MINIWOB_SCRIPTS, MINIWOB_TASKS
        return [{"task": t.name, "max steps": str(t.max_steps), "scripted": "yes" if t.name in MINIWOB_SCRIPTS else "",
                 "what": t.description} for t in MINIWOB_TASKS.values()]

    def task_from_name(self, template: str, seed: int, options: SuiteOptions = SuiteOptions()) -> Any:
        from navrl.worlds.web.tasks import miniwob_task
        return miniwob_task(template, seed, phone=options.phone or "iphone")


class WebAppSuite(_WebSuite):
    """``web:PATH.yaml``: a user's web app, its tasks and success checks from a suite file."""

    def __init__(self, path: str) -> None:
        if not Path(path).is_file():
            raise TaskError(f"--suite web:{path}: no such file {path}")
        self.path = path
        self.name = Path(path).stem
        self.summary = f"web-app tasks from {path}"
        self._tasks: list | None = None

    @property
    def spec(self) -> str:
        return f"web:{self.path}"

    def tasks(self, n: int | None, seed: int, options: SuiteOptions = SuiteOptions()) -> list[Any]:
        if self._tasks is None:
            from navrl.worlds.web.tasks import load_web_suite
            self._tasks = load_web_suite(self.path)
        return self._tasks[:n]

    def expert_names(self) -> tuple[str, ...] | None:
        """None of a web app's tasks has a scripted solution (MiniWoB++'s are for its own pages)."""
        return ()

    def describe(self) -> list[dict[str, str]]:
        return [{"task": t.id, "goal": t.instruction or "(stated by the page)", "what": t.description}
                for t in self.tasks(None, 0)]


def page_judges(**_: Any):
    """The page judge: the page's own reward or success check ends the episode; steps judged sparsely."""
    from navrl.worlds.web.judges import web_judges
    return web_judges("page")


def page_fields_judges(**_: Any):
    """The page judge with dense form steps: a step that puts a value the goal quotes into a text
    field succeeds (QWeb's potential); the rest as ``page``."""
    from navrl.worlds.web.judges import web_judges
    return web_judges("fields")
