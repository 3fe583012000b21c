"""``--suite``, ``--judge`` and ``--devices``: the parts of a run, assembled from flags.

The trainer and the evaluator take a task source, a judge set and a device farm; this module
is the one place that turns command-line flags into those parts and refuses the combinations
that cannot work (one clear line each, exit 2):

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from navrl.cli.common import FAULTS_HELP, CLIError, parse_faults
from navrl.cli.farm_args import add_farm_arguments

PHONE_SUITES = ("train", "test-ios", "test-android", "test-unseen")
DEVICE_KINDS = ("phone", "browser", "android", "ios")
JUDGES = ("oracle", "llm", "page")


def add_part_arguments(p: argparse.ArgumentParser, default_suite: str = "train") -> None:
    """The part flags on a subcommand's parser (``navrl train``, ``navrl eval``)."""
    p.add_argument("--suite", default=default_suite, metavar="SUITE",
                   help=f"tasks: a phone-world suite ({', '.join(PHONE_SUITES)}), miniwob (MiniWoB++ in Chromium), "
                        f"web:PATH.yaml (a web-app suite) or synth:PATH.json (navrl synth-tasks export); "
                        f"default {default_suite}")
    p.add_argument("--tasks", default=None, metavar="A,B,...",
                   help="with --suite miniwob: which MiniWoB++ tasks (any page of the installed miniwob package)")
    p.add_argument("--phone", default="iphone", metavar="PHONE",
                   help="with --suite miniwob: the screen (iphone, pixel, or WxH@scale: 160x210@1 is MiniWoB's own "
                        "frame, as navrl experiment miniwob uses); default iphone")
    p.add_argument("--judge", default=None, choices=JUDGES,
                   help="oracle (phone world), llm (OpenAI-compatible endpoint from $NAVRL_API_BASE/$NAVRL_API_MODEL, "
                        "key from $OPENAI_API_KEY) or page (web tasks); default: by suite")
    p.add_argument("--judge-model", default=None, metavar="MODEL", help="--judge llm: model of the step and ask judges")
    p.add_argument("--terminal-model", default=None, metavar="MODEL",
                   help="--judge llm: a (stronger) model for the terminal judge (default: --judge-model)")
    p.add_argument("--judge-retries", type=int, default=None, metavar="N",
                   help="--judge llm: retries of a failed request (timeouts, 429, 5xx; default 4)")
    p.add_argument("--judge-timeout", type=float, default=None, metavar="S",
                   help="--judge llm: seconds one request may take (default 60)")
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


@dataclass
class SuiteChoice:
    """What ``--suite`` names: its kind (phone, miniwob, web, synth), its argument and name."""

    kind: str
    arg: str
    name: str

    @property
    def web(self) -> bool:
        return self.kind in ("miniwob", "web")


def parse_suite(spec: str) -> SuiteChoice:
    if spec in PHONE_SUITES:
        return SuiteChoice("phone", spec, spec)
    if spec == "miniwob":
        return SuiteChoice("miniwob", "", "miniwob")
    kind, colon, path = spec.partition(":")
    if colon and kind in ("web", "synth") and path:
        if not Path(path).is_file():
            raise CLIError(f"--suite {spec}: no such file {path}")
        return SuiteChoice(kind, path, Path(path).stem)
    raise CLIError(f"unknown --suite {spec!r}: use one of {', '.join(PHONE_SUITES)}, miniwob, web:PATH.yaml "
                   "or synth:PATH.json")


def choose(args) -> tuple[SuiteChoice, str, str]:
    """(suite, judge, devices) with the defaults filled in and impossible combinations refused."""
    suite = parse_suite(args.suite)
    devices = args.devices or ("browser" if suite.web else "phone")
    judge = args.judge or ("page" if suite.web else "oracle" if suite.kind == "phone" and devices == "phone"
                           else "llm")
    if args.tasks and suite.kind != "miniwob":
        raise CLIError("--tasks chooses MiniWoB++ tasks: use it with --suite miniwob")
    if suite.web and devices != "browser":
        raise CLIError(f"--suite {args.suite} is a web suite: it runs on --devices browser")
    if devices == "browser" and not suite.web:
        raise CLIError(f"--devices browser runs web suites (miniwob, web:PATH.yaml), not {args.suite}")
    if judge == "oracle" and (suite.kind != "phone" or devices != "phone"):
        raise CLIError("--judge oracle replays the phone world's experts: it needs a phone-world suite on "
                       "--devices phone (use --judge llm, or page for web suites)")
    if judge == "page" and not suite.web:
        raise CLIError("--judge page reads the web page's own reward: it needs --suite miniwob or web:PATH.yaml")
    if args.faults is not None and devices != "phone":
        raise CLIError("--faults injects faults into the embedded phone world (--devices phone)")
    if args.ray is not None and devices == "browser":
        raise CLIError("--devices browser runs on the in-process browser pool: the Ray farm's observations do "
                       "not carry the page's reward, which the page judge reads")
    if args.ray is not None and args.hosts <= 0:
        raise CLIError("--hosts must be positive")
    if devices in ("android", "ios") and not args.serials:
        raise CLIError(f"--devices {devices} needs --serials (adb serials or WebDriverAgent URLs)")
    return suite, judge, devices


# ------------------------------------------------------------------------------- tasks
def task_source(suite: SuiteChoice, args, perturb=None):
    """The task source online RL draws from (fresh instances each update where it can)."""
    from navrl.tasks.source import FixedTasks, MiniWoBTasks, PhoneWorldTasks
    from navrl.tasks.spec import TaskError
    try:
        if suite.kind == "phone":
            return PhoneWorldTasks(suite.arg, perturb=perturb, faults=parse_faults(args.faults))
        if suite.kind == "miniwob":
            need_browser()
            return MiniWoBTasks(split_names(args.tasks), phone=miniwob_phone(args))
        return FixedTasks(_load_file_suite(suite, args), name=suite.name)
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
    from navrl.tasks.spec import TaskError
    try:
        if suite.kind == "phone":
            from navrl.tasks.suites import suite_tasks
            tasks = suite_tasks(suite.arg, n, seed=seed)
        elif suite.kind == "miniwob":
            need_browser()
            from navrl.tasks.web import miniwob_tasks
            tasks = miniwob_tasks(n, seed=seed, names=split_names(args.tasks) or None, phone=miniwob_phone(args))
        else:
            tasks = _load_file_suite(suite, args)[:n]
    except TaskError as e:
        raise CLIError(str(e)) from None
    faults = parse_faults(args.faults)
    return [t.with_(faults=faults) for t in tasks] if faults is not None else tasks


def split_names(spec: str | None) -> list[str]:
    return [x.strip() for x in (spec or "").split(",") if x.strip()]


def need_browser() -> None:
    from navrl.device.browser import browser_ready
    from navrl.tasks.web import miniwob_available
    why = browser_ready() or miniwob_available()
    if why:
        raise CLIError(f"--suite miniwob needs the browser device: {why}")


def _load_file_suite(suite: SuiteChoice, args) -> list:
    if suite.kind == "web":
        from navrl.tasks.web import load_web_suite
        return load_web_suite(suite.arg)
    from navrl.tasks.synth import load_suite
    return load_suite(suite.arg, faults=parse_faults(args.faults))


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
