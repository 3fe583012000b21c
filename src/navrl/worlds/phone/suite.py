"""The phone world's suites as registry entries (:class:`navrl.tasks.registry.Suite`)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from navrl.tasks.registry import Suite, SuiteOptions
from navrl.tasks.task import TaskError

FAULT_NAMES = ("device_lost", "app_never_loads")


def _perturb(options: SuiteOptions):
    from navrl.worlds.phone.sim import PerturbConfig
    return PerturbConfig.off() if options.perturb is False else None


def _faults(options: SuiteOptions):
    if options.faults is None:
        return None
    from navrl.worlds.phone.sim import FaultConfig
    bad = [k for k in options.faults if k not in FAULT_NAMES]
    if bad:
        raise TaskError(f"unknown fault {bad[0]!r} (known: {', '.join(FAULT_NAMES)})")
    return FaultConfig(**options.faults)


def _with_faults(tasks: list, options: SuiteOptions) -> list:
    f = _faults(options)
    return [t.with_(faults=f) for t in tasks] if f is not None else tasks


class PhoneSuite(Suite):
    """``train``, ``val``, ``test-ios``, ``test-android``, ``test-unseen``: template instances by seed."""

    world = "phone"
    devices = ("phone", "android", "ios")
    judges = ("oracle", "llm")
    faults = FAULT_NAMES
    option_names = ("names",)
    """``--tasks``: a subset of the suite's templates by name."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def summary(self) -> str:   # type: ignore[override]
        from navrl.worlds.phone.suites import SUITES
        return SUITES[self.name].description

    def check(self, devices: str, judge: str, options: SuiteOptions = SuiteOptions()) -> str | None:
        why = super().check(devices, judge)
        if why:
            return why
        if judge == "oracle" and devices != "phone":
            return ("--judge oracle replays the phone world's experts: it needs a phone-world suite on "
                    "--devices phone (use --judge llm)")
        if options.faults is not None and devices != "phone":
            return "--faults injects faults into the embedded phone world (--devices phone)"
        return None

    def tasks(self, n: int | None, seed: int, options: SuiteOptions = SuiteOptions()) -> list[Any]:
        from navrl.worlds.phone.suites import suite_tasks
        return _with_faults(suite_tasks(self.name, n, seed=seed, perturb=_perturb(options), names=options.names),
                            options)

    def source(self, options: SuiteOptions = SuiteOptions()) -> Any:
        from navrl.worlds.phone.source import PhoneWorldTasks
        return PhoneWorldTasks(self.name, perturb=_perturb(options), faults=_faults(options), names=options.names)

    def sft_tasks(self, n: int, seed: int = 0) -> list[Any]:
        """Clean, single-app tasks (no multi-app: the paper's iOS data lacked them)."""
        from navrl.tasks.task import Family
        from navrl.worlds.phone.sim import PerturbConfig
        from navrl.worlds.phone.suites import suite_tasks
        fams = {Family.SINGLE, Family.ANSWER, Family.ASK_USER}
        return suite_tasks(self.name, n, seed=seed, perturb=PerturbConfig.off(), families=fams, single_app=True)

    def describe(self) -> list[dict[str, str]]:
        from navrl.worlds.phone.suites import SUITES, suite_templates
        from navrl.worlds.phone.task import make_task
        d = SUITES[self.name]
        rows: dict[str, dict[str, str]] = {}
        for t in suite_templates(self.name):
            rows.setdefault(t.name, {"template": t.name, "family": t.family.value, "apps": ", ".join(t.apps),
                                     "held out": "yes" if t.heldout else "",
                                     "example goal": make_task(t.name, d.seed_base, skin=d.skin).goal})
        return sorted(rows.values(), key=lambda r: r["template"])

    def task_from_name(self, template: str, seed: int, options: SuiteOptions = SuiteOptions()) -> Any:
        from navrl.worlds.phone.suites import SUITES
        from navrl.worlds.phone.task import make_task
        d = SUITES[self.name]
        return _with_faults([make_task(template, seed, suite=self.name, skin=d.skin, layout=d.layout,
                                       perturb=_perturb(options))], options)[0]


class SynthSuite(Suite):
    """``synth:PATH.json``: goal tasks exported by ``navrl synth-tasks`` (no oracle: LLM-judged)."""

    world = "phone"
    devices = ("phone", "android", "ios")
    judges = ("llm",)
    faults = FAULT_NAMES

    def __init__(self, path: str) -> None:
        if not Path(path).is_file():
            raise TaskError(f"--suite synth:{path}: no such file {path}")
        self.path = path
        self.name = Path(path).stem
        self.summary = f"synthesised goal tasks from {path}"

    def describe(self) -> list[dict[str, str]]:
        return [{"task": t.id, "apps": ", ".join(t.apps), "goal": t.goal} for t in self.tasks(None, 0)]

    def check(self, devices: str, judge: str, options: SuiteOptions = SuiteOptions()) -> str | None:
        if judge == "oracle":
            return ("--judge oracle replays the phone world's experts: it needs a phone-world suite on "
                    "--devices phone (use --judge llm)")
        why = super().check(devices, judge)
        if why:
            return why
        if options.faults is not None and devices != "phone":
            return "--faults injects faults into the embedded phone world (--devices phone)"
        return None

    def tasks(self, n: int | None, seed: int, options: SuiteOptions = SuiteOptions()) -> list[Any]:
        from navrl.worlds.phone.synth import load_suite
        return load_suite(self.path, faults=_faults(options))[:n]


def oracle_judges(**_: Any):
    """The phone world's oracle: one object judging steps, asks and episodes from the snapshots' facts."""
    from navrl.worlds.phone.judges import OracleJudge
    j = OracleJudge()
    return j, j, j


def oracle_best_judges(**_: Any):
    """The oracle whose step judge counts progress only past the episode's best (``oracle-best``):
    undoing one's own regression earns nothing (``OracleJudge(progress="best")``)."""
    from navrl.worlds.phone.judges import OracleJudge
    j = OracleJudge(progress="best")
    return j, j, j
