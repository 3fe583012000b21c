"""``--suite``, ``--judge`` and ``--devices``: the parts of a run, assembled from flags.

The trainer and the evaluator take a task source, a judge set and a device farm; this module
is the one place that turns command-line flags into those parts and refuses the combinations
that cannot work (one clear line each, exit 2). Suites come from the suite registry
(:mod:`navrl.tasks.registry`): each says which devices and judges can run it, so a world's
new suite appears in every command by registration alone. The built-in ones:

========================  ===================  ===============  ======================
``--suite``               tasks                default judge    default devices
========================  ===================  ===============  ======================
``train``, ``test-*``     phone world          ``oracle``       ``phone`` (in-process)
``miniwob``               MiniWoB++ pages      ``page``         ``browser`` (Chromium)
``web:PATH.yaml``         a user's web app     ``page``         ``browser``
``synth:PATH.json``       synthesised tasks    ``llm``          ``phone``
========================  ===================  ===============  ======================

``--devices android|ios`` runs goal tasks (``synth:``, phone-world goals) on real devices
(``--serials``; Android through the adb server at ``--adb``); their screens have no oracle,
so they are judged by ``--judge llm`` (the default there). ``--ray [ADDRESS]`` puts phone-world, Android and iOS
devices in Ray device-host actors.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from typing import Any

from navrl.cli.common import FAULTS_HELP, CLIError, parse_faults
from navrl.cli.farm_args import add_farm_arguments

DEVICE_KINDS = ("phone", "browser", "android", "ios")


def add_suite_arguments(p: argparse.ArgumentParser, default: str | None = "train", help_: str = "tasks",
                        group=None) -> None:
    """``--suite`` (with ``--tasks`` and ``--phone``, the options a suite may read): the one
    declaration every command uses; choices are whatever the suite registry holds. ``group``:
    a mutually exclusive group of ``p`` to put ``--suite`` in (``navrl play``: ``--task`` or ``--suite``)."""
    (group or p).add_argument("--suite", default=default, metavar="SUITE",
                   help=f"{help_}: a registered suite (`navrl tasks` lists them: the phone world's train, test-ios, "
                        f"test-android, test-unseen; miniwob; web:PATH.yaml; synth:PATH.json ...)"
                        + (f"; default {default}" if default else ""))
    p.add_argument("--tasks", default=None, metavar="A,B,...",
                   help="a subset of the suite's tasks by name, comma-separated, for suites that take one (the "
                        "phone world's: template names, as `navrl tasks --suite S` lists them; miniwob: any page of "
                        "the installed miniwob package, or a group: all, ccnet, table23, scripted)")
    p.add_argument("--phone", default=None, metavar="PHONE",
                   help="for browser suites: the screen (iphone, pixel, or WxH@scale: 160x210@1 is MiniWoB's own "
                        "frame, as navrl experiment miniwob uses); default iphone")


def add_part_arguments(p: argparse.ArgumentParser, default_suite: str = "train") -> None:
    """The part flags on a subcommand's parser (``navrl train``, ``navrl eval``)."""
    add_suite_arguments(p, default_suite)
    add_judge_arguments(p)
    p.add_argument("--devices", default=None, choices=DEVICE_KINDS,
                   help="phone (embedded phone world), browser (Chromium), android (adb) or ios (WebDriverAgent); "
                        "default: by suite")
    p.add_argument("--serials", default=None, metavar="S1,S2,...",
                   help="--devices android: adb serials; --devices ios: WebDriverAgent URLs")
    p.add_argument("--adb", default="127.0.0.1:5037", metavar="HOST:PORT", help="--devices android: the adb server")
    p.add_argument("--reset", default=None, metavar="SPEC",
                   help="--devices android: emulator:NAME (default emulator:navrl-base), clear:PKG,... or "
                        "app_data:NAME:PKG,...; --devices ios: BUNDLE_ID,... to terminate and relaunch")
    p.add_argument("--faults", default=None, metavar="NAME=RATE,...", help=FAULTS_HELP)
    add_farm_arguments(p)


def add_judge_arguments(p: argparse.ArgumentParser, default: str | None = None) -> None:
    """``--judge`` and the LLM judges' endpoint flags."""
    p.add_argument("--judge", default=default, metavar="JUDGE",
                   help="oracle (phone world), llm (OpenAI-compatible endpoint from $NAVRL_API_BASE/$NAVRL_API_MODEL, "
                        "key from $OPENAI_API_KEY), page (web tasks), or another a world registers; "
                        "noisy:step_fp=P,step_fn=P,lenient=L,seed=S (or noisy:audit=PATH/audit.json): the suite's "
                        "exact judge with simulated errors (docs/judges.md); default: by suite")
    p.add_argument("--judge-model", default=None, metavar="MODEL", help="--judge llm: model of the step and ask judges")
    p.add_argument("--terminal-model", default=None, metavar="MODEL",
                   help="--judge llm: a (stronger) model for the terminal judge (default: --judge-model)")
    p.add_argument("--judge-retries", type=int, default=None, metavar="N",
                   help="--judge llm: retries of a failed request (timeouts, 429, 5xx; default 4)")
    p.add_argument("--judge-timeout", type=float, default=None, metavar="S",
                   help="--judge llm: seconds one request may take (default 60)")


@dataclass
class SuiteChoice:
    """What ``--suite`` (with ``--tasks``, ``--phone``, ``--faults``) names: the registered
    suite, the options it is asked for, and the spelling given."""

    spec: str
    suite: Any
    options: Any

    @property
    def name(self) -> str:
        return self.suite.name

    @property
    def web(self) -> bool:
        return self.suite.devices == ("browser",)


def parse_suite(args) -> SuiteChoice:
    """The suite ``--suite`` names, with the options it reads; CLIError for anything else."""
    from navrl.tasks.registry import SuiteOptions, get_suite, suites_taking
    from navrl.tasks.task import TaskError
    try:
        suite = get_suite(args.suite)
    except TaskError as e:
        raise CLIError(str(e)) from None
    names = tuple(split_names(getattr(args, "tasks", None)))
    if names and "names" not in suite.option_names:
        raise CLIError(f"--tasks picks tasks of --suite {suites_taking('option_names', 'names')}, "
                       f"not --suite {args.suite}")
    try:
        names = suite.task_names(names)
    except TaskError as e:
        raise CLIError(f"--tasks: {e}") from None
    phone = None
    if "phone" in suite.option_names:
        phone = miniwob_phone(args)
    elif getattr(args, "phone", None):
        raise CLIError(f"--phone sets the screen of --suite {suites_taking('option_names', 'phone')}, "
                       f"not --suite {args.suite}")
    faults = parse_faults(getattr(args, "faults", None), suite.faults) if getattr(args, "faults", None) else None
    return SuiteChoice(args.suite, suite, SuiteOptions(names=names, phone=phone, faults=faults))


def choose(args) -> tuple[SuiteChoice, str, str]:
    """(suite, judge, devices) with the defaults filled in and impossible combinations refused."""
    sc = parse_suite(args)
    devices = args.devices or sc.suite.devices[0]
    judge = resolve_judge(args.judge or sc.suite.default_judge(devices), sc, devices)
    if args.ray is not None and devices == "browser":
        raise CLIError("--devices browser runs on the in-process browser pool: the Ray farm's observations do "
                       "not carry the page's reward, which the page judge reads")
    if args.ray is not None and args.hosts <= 0:
        raise CLIError("--hosts must be positive")
    if devices in ("android", "ios") and not args.serials:
        raise CLIError(f"--devices {devices} needs --serials (adb serials or WebDriverAgent URLs)")
    return sc, judge, devices


def resolve_judge(judge: str, sc: SuiteChoice, devices: str) -> str:
    """``--judge`` checked against the suite and devices; a ``noisy:`` kind comes back in its
    canonical form, standing on the suite's default judge unless it names a ``base``."""
    from navrl.judge.sets import judge_kinds
    exact = judge
    if judge.partition(":")[0] == "noisy":
        from navrl.judge.noisy import NoisySpec
        try:
            spec = NoisySpec.parse(judge.partition(":")[2]).with_base(sc.suite.default_judge(devices))
            spec.model()   # a bad audit file is bad input now, not after the set-up
        except ValueError as e:
            raise CLIError(f"--judge {e}") from None
        judge, exact = spec.text(), spec.base
    elif judge not in judge_kinds():
        raise CLIError(f"unknown --judge {judge!r}: use one of {', '.join(judge_kinds())}")
    why = sc.suite.check(devices, exact, sc.options)
    if why:
        raise CLIError(why)
    return judge


# ------------------------------------------------------------------------------- tasks
def task_source(suite: SuiteChoice, args, perturb: bool | None = None):
    """The task source online RL draws from (fresh instances each update where it can);
    ``perturb=False`` turns the suite's perturbations off."""
    from navrl.tasks.task import TaskError
    need_available(suite)
    try:
        return suite.suite.source(replace(suite.options, perturb=perturb))
    except TaskError as e:
        raise CLIError(str(e)) from None


def miniwob_phone(args) -> str:
    """``--phone``, checked (CLIError on a name that is neither a phone nor WxH@scale)."""
    from navrl.device.browser.app import check_phone
    try:
        return check_phone(getattr(args, "phone", None) or "iphone")
    except ValueError as e:
        raise CLIError(f"--phone: {e}") from None


def eval_tasks(suite: SuiteChoice, args, n: int | None, seed: int) -> list:
    """The fixed, deterministic tasks an evaluation runs (the first ``n`` of the suite)."""
    from navrl.tasks.task import TaskError
    need_available(suite)
    try:
        return suite.suite.tasks(n, seed, suite.options)
    except TaskError as e:
        raise CLIError(str(e)) from None


def need_expert(suite, tasks: list, args) -> None:
    """``--agent expert`` (the default) needs every task's scripted solution: a suite without
    one for a task (a web app's, MiniWoB++ pages without a script) is refused in one line
    naming what works instead. ``suite``: a registry suite or a :class:`SuiteChoice`."""
    if getattr(args, "agent", "expert") != "expert":
        return
    s = getattr(suite, "suite", suite)
    have = s.expert_names()
    lacking = [t.template for t in tasks if have is not None and t.template not in have]
    if lacking:
        raise CLIError(f"--agent expert (the default) has no scripted solution for {lacking[0]!r} of --suite "
                       f"{args.suite}; use --agent random, --agent api (an OpenAI-compatible model) or --policy "
                       "CHECKPOINT (a trained planner)")


def split_names(spec: str | None) -> list[str]:
    return [x.strip() for x in (spec or "").split(",") if x.strip()]


def need_available(suite: SuiteChoice) -> None:
    """CLIError when the suite cannot run on this machine (no Chromium, no miniwob package ...)."""
    why = suite.suite.available()
    if why:
        raise CLIError(f"--suite {suite.spec} needs the {'browser device' if suite.web else 'world'}: {why}")


# ------------------------------------------------------------------------------- judges
def judge_set(kind: str, args):
    """The judges; ``llm`` reads the endpoint from the environment (the key never leaves it)."""
    from navrl.judge.sets import make_judges
    if kind != "llm":
        return make_judges(kind)
    from navrl.api import APIConfig, ChatClient
    try:
        knobs = {"max_retries": args.judge_retries, "timeout": args.judge_timeout}
        cfg = APIConfig.from_env(model=args.judge_model, **knobs).require()
        term = APIConfig.from_env(model=args.terminal_model, **knobs).require() if args.terminal_model else None
    except (ValueError, TypeError) as e:
        raise CLIError(f"--judge llm: {e}") from None
    return make_judges("llm", ChatClient(cfg), ChatClient(term) if term else None)


# ------------------------------------------------------------------------------- devices
def device_farm(kind: str, args, batch: int, screenshots: bool | str = False) -> Any | None:
    """The device farm for ``kind`` holding ``batch`` devices (at most ``--parallel``, and for
    phones the devices named: a bigger batch queues), or None for the phone world's
    in-process devices (one per task, made by the task). ``screenshots``: the run reads
    screens (True or ``"eager"``: an LLM judge, frames), so the browser renders every one;
    ``"thumb"``: it only hashes them (GiGPO with a text planner), so small images do.

    Browser farms are sized to the machine, not to the batch: at most ``--parallel`` pages,
    else :func:`navrl.device.browser.backend.default_pages` (pages per core x cores), and
    adaptive under contention (fewer pages in flight while restores miss their deadlines)."""
    from navrl.device.ray_farm import FarmUnavailable, make_device_factory
    if kind == "phone" and args.ray is None:
        return None
    shots = "eager" if screenshots is True else "off" if screenshots is False else screenshots
    backend = pool = None
    parallel = getattr(args, "parallel", None)
    if parallel is not None:    # the runner queues the rest of the batch (a rolling queue)
        batch = min(batch, parallel)
    if kind == "browser":
        from navrl.device.browser.backend import BrowserBackend, default_pages, farm_config
        batch = min(batch, parallel if parallel is not None else default_pages())
        pool = farm_config(batch)
        backend = BrowserBackend(screenshots=shots)
    elif kind in ("android", "ios"):
        backend = _mobile_backend(kind, args)
        # one episode per named device at a time; the rest of the batch queues for them
        batch = min(batch, len(backend.serials if kind == "android" else backend.urls))  # type: ignore[union-attr]
    try:
        return make_device_factory(args.ray, devices=batch, hosts=args.hosts, backend=backend, pool=pool,
                                   screenshots="eager" if shots == "eager" else "lazy")
    except FarmUnavailable as e:
        raise CLIError(str(e)) from None


def _mobile_backend(kind: str, args):
    serials = split_names(args.serials)
    if kind == "android":
        from navrl.device.android import AndroidBackend, AndroidConfig, AndroidSnapshot
        host, _, port = args.adb.rpartition(":")
        if not host or not port.isdigit():
            raise CLIError(f"--adb {args.adb!r}: use HOST:PORT")
        snap = _android_reset(args.reset or "emulator:navrl-base", AndroidSnapshot)
        return AndroidBackend(serials=serials, config=AndroidConfig(adb_host=host, adb_port=int(port)),
                              snapshot_for=lambda task: snap)
    from navrl.device.ios import IOSBackend, IOSSnapshot
    try:
        snap = IOSSnapshot(tuple(split_names(args.reset)), relaunch=bool(args.reset))
    except ValueError as e:
        raise CLIError(f"--reset: {e}") from None
    return IOSBackend(urls=serials, snapshot_for=lambda task: snap)


def _android_reset(spec: str, snapshot_cls):
    kind, _, rest = spec.partition(":")
    try:
        if kind == "emulator":
            return snapshot_cls("emulator", rest)
        if kind == "clear":
            return snapshot_cls("clear", packages=tuple(split_names(rest)))
        if kind == "app_data":
            name, _, pkgs = rest.partition(":")
            return snapshot_cls("app_data", name, tuple(split_names(pkgs)))
    except ValueError as e:
        raise CLIError(f"--reset {spec!r}: {e}") from None
    raise CLIError(f"--reset {spec!r}: use emulator:NAME, clear:PKG,... or app_data:NAME:PKG,...")


def close_farm(farm) -> dict | None:
    """Close a farm made by :func:`device_farm` (None: nothing to close); returns its stats."""
    if farm is None:
        return None
    try:
        return farm.stats()
    finally:
        farm.close()
