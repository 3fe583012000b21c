"""The suite registry: the one list of task suites, filled by the worlds.

A *world* (``navrl.worlds.phone``, ``navrl.worlds.web``, or a user's package) registers its
suites here when it is imported; the framework — the trainer's default task source, the
evaluator, every CLI command — finds suites only through :func:`get_suite` and
:func:`suites`, never by importing a world. Built-in worlds are imported on the first
lookup (:data:`BUILTIN_WORLDS`), third-party worlds through the ``navrl.worlds`` entry-point
group or by calling :func:`register_suite` themselves.

A suite answers: which tasks (``tasks`` for a fixed evaluation list, ``source`` for online
RL draws), which devices and judges can run them (``check``), and what its templates are
(``describe``, for ``navrl tasks``). A *suite family* (``web:PATH.yaml``, ``synth:PATH.json``)
makes a suite from an argument. A world may also offer named *hooks* (its vocabulary for
the pointer planner, its interactive player ...) that the framework asks for by name.
"""
from __future__ import annotations

import importlib
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from navrl.tasks.task import TaskError

__all__ = ["BUILTIN_WORLDS", "Suite", "SuiteOptions", "World", "get_suite", "get_world", "judge_factory",
           "register_judges", "register_suite", "register_suite_family", "register_world", "suite_names", "suites",
           "worlds"]

BUILTIN_WORLDS = ("navrl.worlds.phone", "navrl.worlds.web")
"""Worlds shipped with navrl, imported (and so registered) on the first lookup."""

ENTRY_POINT_GROUP = "navrl.worlds"
"""Entry-point group of third-party worlds: each entry names a module that registers on import."""


@dataclass(frozen=True)
class SuiteOptions:
    """What a command line or config may ask of a suite beyond its name."""

    names: tuple[str, ...] = ()
    """A subset of the suite's tasks by template name (``--tasks``); empty: all."""
    phone: str | None = None
    """The screen a browser suite runs at (``--phone``); None: the suite's default."""
    faults: dict[str, float] | None = None
    """Infrastructure faults to inject, name -> rate (``--faults``); None: none."""
    perturb: bool | None = None
    """Perturbations (pop-ups, sheets ...): False turns them off; None: the suite's default."""


class Suite:
    """A named set of tasks. Worlds subclass it and override :meth:`tasks` (and the rest
    where their tasks differ from the defaults)."""

    name: str = ""
    world: str = ""
    summary: str = ""
    devices: tuple[str, ...] = ("phone",)
    """Device kinds that can run its tasks; the first is the default."""
    judges: tuple[str, ...] = ("llm",)
    """Judge kinds that can score its tasks; the first that :meth:`check` accepts with the
    chosen devices is the default."""
    faults: tuple[str, ...] = ()
    """Fault names ``--faults`` may inject (empty: the suite's devices take no faults)."""
    option_names: tuple[str, ...] = ()
    """Which :class:`SuiteOptions` fields besides ``faults`` and ``perturb`` it reads (``names``, ``phone``)."""

    def tasks(self, n: int | None, seed: int, options: SuiteOptions = SuiteOptions()) -> list[Any]:
        """The first ``n`` tasks of the suite for evaluation seed ``seed`` (None: its default count)."""
        raise NotImplementedError

    def source(self, options: SuiteOptions = SuiteOptions()) -> Any:
        """The task source online RL draws from (default: the evaluation list, cycled)."""
        from navrl.tasks.source import FixedTasks
        return FixedTasks(self.tasks(None, 0, options), name=self.name)

    def task_names(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """What ``--tasks`` names: task names, with the suite's group names expanded (default: as
        given); TaskError for a name the suite does not know."""
        return tuple(names)

    def check(self, devices: str, judge: str, options: SuiteOptions = SuiteOptions()) -> str | None:
        """Why ``devices`` with ``judge`` (and ``options``) cannot run this suite (None: they can)."""
        if devices not in self.devices:
            return (f"--devices {devices} runs {_takers('devices', devices)}, not --suite {self.name} "
                    f"(which runs on --devices {' or '.join(self.devices)})")
        if judge not in self.judges:
            return (f"--judge {judge} scores {_takers('judges', judge)}, not --suite {self.name} "
                    f"(which --judge {' or '.join(self.judges)} scores)")
        if options.faults is not None and not self.faults:
            return f"--suite {self.name} takes no --faults (its devices have no fault injection)"
        return None

    def default_judge(self, devices: str) -> str:
        for j in self.judges:
            if self.check(devices, j) is None:
                return j
        return self.judges[0]

    def available(self) -> str | None:
        """Why the suite cannot run on this machine (None: it can)."""
        return None

    def describe(self) -> list[dict[str, str]]:
        """One row per template for ``navrl tasks`` (column -> text; the first key is the name)."""
        return []

    def sft_tasks(self, n: int, seed: int = 0) -> list[Any]:
        """Tasks the expert demonstrates for supervised warm starts (default: the first ``n``,
        restricted to templates with an expert)."""
        names = self.expert_names()
        ts = self.tasks(n if names is None else None, seed)
        return ts if names is None else [t for t in ts if t.template in names][:n]

    def expert_names(self) -> tuple[str, ...] | None:
        """Templates whose tasks have an expert (``Task.expert_step``); None: all of them."""
        return None

    def task_from_name(self, template: str, seed: int, options: SuiteOptions = SuiteOptions()) -> Any:
        """One task by template name and seed (``--task TEMPLATE:SEED``)."""
        raise TaskError(f"suite {self.name!r} cannot build a task by name")

    def sample(self, k: int, rng: random.Random, options: SuiteOptions = SuiteOptions()) -> list[Any]:
        """``k`` tasks for online RL, drawn with ``rng`` (what :meth:`source` hands out)."""
        return self.source(options).sample(k, rng)


@dataclass
class World:
    """A world: its name, a one-line summary and its named hooks ("module:function", imported lazily)."""

    name: str
    summary: str = ""
    hooks: dict[str, str] = field(default_factory=dict)

    def hook(self, name: str) -> Callable[..., Any]:
        ref = self.hooks.get(name)
        if ref is None:
            raise TaskError(f"world {self.name!r} has no {name!r}")
        module, _, attr = ref.partition(":")
        return getattr(importlib.import_module(module), attr)


_SUITES: dict[str, Suite] = {}
_FAMILIES: dict[str, tuple[Callable[[str], Suite], str]] = {}
_WORLDS: dict[str, World] = {}
_JUDGES: dict[str, Callable[..., Any]] = {}
_loaded = False


def register_world(world: World) -> World:
    _WORLDS[world.name] = world
    return world


def register_suite(suite: Suite) -> Suite:
    """Add ``suite`` under its name (replacing a suite of the same name and world)."""
    if not suite.name:
        raise TaskError(f"{type(suite).__name__} has no name")
    old = _SUITES.get(suite.name)
    if old is not None and old.world != suite.world:
        raise TaskError(f"suite {suite.name!r} is registered by world {old.world!r} already")
    _SUITES[suite.name] = suite
    return suite


def register_suite_family(prefix: str, make: Callable[[str], Suite], usage: str) -> None:
    """Suites named ``PREFIX:ARG`` are made by ``make(ARG)`` (a :class:`Suite` subclass, whose
    class attributes say its devices, judges and options); ``usage`` shows it (``web:PATH.yaml``)."""
    _FAMILIES[prefix] = (make, usage)


def _takers(attr: str, value: str) -> str:
    """The suites (and families) whose ``attr`` (``devices``, ``judges``, ``option_names``) holds ``value``."""
    _load()
    names = [n for n, s in _SUITES.items() if value in getattr(s, attr)]
    names += [usage for make, usage in _FAMILIES.values() if value in getattr(make, attr, ())]
    return ", ".join(names) or "no registered suite"


def suites_taking(attr: str, value: str) -> str:
    """Names of the suites whose ``attr`` holds ``value``, for messages (``--suite miniwob, web:PATH.yaml``)."""
    return _takers(attr, value)


def register_judges(kind: str, factory: Callable[..., Any]) -> None:
    """A judge set kind a world provides (``oracle``, ``page``): ``factory(**kw)`` -> (step, ask, terminal)."""
    _JUDGES[kind] = factory


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in BUILTIN_WORLDS:
        importlib.import_module(mod)
    try:
        from importlib.metadata import entry_points
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            importlib.import_module(ep.value.partition(":")[0])
    except Exception as e:  # pragma: no cover - a broken third-party world must not hide the built-ins
        import warnings
        warnings.warn(f"navrl: a world from entry point group {ENTRY_POINT_GROUP!r} failed to load: {e}")


def suites() -> dict[str, Suite]:
    """Every named suite, by name."""
    _load()
    return dict(_SUITES)


def suite_names() -> list[str]:
    """Names of the named suites, then the families' usages (``web:PATH.yaml`` ...), for help and errors."""
    _load()
    return list(_SUITES) + [usage for _, usage in _FAMILIES.values()]


def get_suite(spec: str) -> Suite:
    """The suite ``spec`` names: a registered name or ``PREFIX:ARG`` of a family. TaskError if none."""
    _load()
    if spec in _SUITES:
        return _SUITES[spec]
    prefix, colon, arg = spec.partition(":")
    if colon and prefix in _FAMILIES and arg:
        return _FAMILIES[prefix][0](arg)
    raise TaskError(f"unknown --suite {spec!r}: use one of {', '.join(suite_names())}")


def worlds() -> dict[str, World]:
    _load()
    return dict(_WORLDS)


def get_world(name: str) -> World:
    _load()
    if name not in _WORLDS:
        raise TaskError(f"unknown world {name!r}; known: {', '.join(sorted(_WORLDS))}")
    return _WORLDS[name]


def judge_factory(kind: str) -> Callable[..., Any] | None:
    """The factory of a world's judge set ``kind`` (None if no world provides it)."""
    _load()
    return _JUDGES.get(kind)


def judge_kinds() -> list[str]:
    _load()
    return list(_JUDGES)


def split_names(names: Sequence[str] | str | None) -> tuple[str, ...]:
    if isinstance(names, str):
        names = names.split(",")
    return tuple(x.strip() for x in (names or ()) if x and x.strip())
