"""Shared CLI helpers. Bad input raises CLIError: one line on stderr, exit code 2."""
from __future__ import annotations

from pathlib import Path

EXIT_BAD_INPUT = 2


class CLIError(Exception):
    """Bad arguments or files: reported as one line, exit code 2. ``whole``: the line is not
    shortened (it lists what is valid)."""

    def __init__(self, *args, whole: bool = False):
        super().__init__(*args)
        self.whole = whole


def task_from_args(args, suite=None):
    """One task from ``--task TEMPLATE[:SEED]`` (of ``suite``, default ``train``) or ``--suite S
    --index N`` (+ ``--skin``, ``--no-perturb``, ``--faults``), through the suite registry."""
    from navrl.tasks.registry import SuiteOptions, get_suite
    from navrl.tasks.task import TaskError
    try:
        s = suite or get_suite("train" if args.task else args.suite)
        faults = parse_faults(args.faults, s.faults) if getattr(args, "faults", None) else None
        if faults is not None and not s.faults:
            raise CLIError(f"--suite {s.name} takes no --faults")
        phone = None
        if "phone" in s.option_names:
            from navrl.cli.parts import miniwob_phone
            phone = miniwob_phone(args)
        names: tuple[str, ...] = ()
        if getattr(args, "tasks", None) and not args.task:     # --suite S --tasks A,B: instance --index of those
            from navrl.cli.parts import split_names
            from navrl.tasks.registry import suites_taking
            if "names" not in s.option_names:
                raise CLIError(f"--tasks picks tasks of --suite {suites_taking('option_names', 'names')}, "
                               f"not --suite {s.name}")
            names = s.task_names(tuple(split_names(args.tasks)))
        opts = SuiteOptions(perturb=False if getattr(args, "no_perturb", False) else None, faults=faults, phone=phone,
                            names=names)
        if args.task:
            name, _, seed = args.task.partition(":")
            try:
                seed_i = int(seed) if seed else 0
            except ValueError:
                raise CLIError(f"bad seed in --task {args.task!r}: use TEMPLATE[:SEED]") from None
            t = s.task_from_name(name, seed_i, opts)
        else:
            if args.index < 0:
                raise CLIError("--index must be >= 0")
            t = s.tasks(args.index + 1, 0, opts)[args.index]
        if getattr(args, "skin", None) is not None:
            try:
                t = t.with_(skin=args.skin)
            except TypeError:
                raise CLIError(f"--skin does not apply to --suite {s.name}") from None
        return t
    except TaskError as e:
        raise CLIError(str(e)) from None


def add_preset_arguments(p) -> None:
    """``--preset`` and ``--list-presets`` (``navrl sft``, ``train``, ``demo``)."""
    import argparse

    from navrl.rl.presets import ALIASES, DEFAULT_PRESET, PRESETS

    class ListPresets(argparse.Action):
        def __init__(self, option_strings, dest, **kw):
            super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, **kw)

        def __call__(self, parser, namespace, values, option_string=None):
            from navrl.rl.presets import describe_presets
            print(describe_presets())
            parser.exit()
    names = " | ".join(n + (" (default)" if n == DEFAULT_PRESET else "")
                       + "".join(f" (alias {a})" for a, b in ALIASES.items() if b == n) for n in PRESETS)
    p.add_argument("--preset", default=DEFAULT_PRESET, metavar="NAME",
                   help=f"run sizes: {names}; --list-presets says what each is")
    p.add_argument("--list-presets", action=ListPresets, help="describe the presets and exit")


def config_field_names(cls) -> list[str]:
    """The settable names of a dataclass config, read from the class itself: a field whose
    default is itself a dataclass (a section) gives ``section.field`` names, any other field its
    own name. Works for a flat ``TrainConfig`` and for one grouped into sections."""
    import dataclasses
    names: list[str] = []
    for f in dataclasses.fields(cls):
        if f.name.startswith("_") or not f.init:
            continue
        sub = f.type if dataclasses.is_dataclass(f.type) else None
        if sub is None and f.default_factory is not dataclasses.MISSING:   # type: ignore[misc]
            try:
                d = f.default_factory()   # type: ignore[misc]
            except Exception:
                d = None
            sub = type(d) if dataclasses.is_dataclass(d) else None
        if sub is None and dataclasses.is_dataclass(f.default):
            sub = type(f.default)
        names += [f"{f.name}.{n}" for n in config_field_names(sub)] if sub is not None else [f.name]
    return names


def unknown_field(given: str, cls, flag: str = "--set") -> CLIError:
    """A bad ``FIELD=VALUE``: one line with the closest names and every valid one."""
    import difflib
    names = config_field_names(cls)
    leaves = {n.rpartition(".")[2]: n for n in names}     # a section's field matched by its own name too
    close = difflib.get_close_matches(given, names, n=3, cutoff=0.6)
    close += [leaves[x] for x in difflib.get_close_matches(given.rpartition(".")[2], list(leaves), n=3, cutoff=0.6)
              if leaves[x] not in close]
    close = close[:3]
    near = f" (did you mean {' or '.join(close)}?)" if close else ""
    return CLIError(f"bad {flag} {given!r}: not a {cls.__name__} field{near}; valid fields: {', '.join(names)}",
                    whole=True)


AGENTS = ("expert", "random", "api")


def make_planner(name: str, seed: int = 0, **kw):
    """Planner by name: expert (each task's own expert), random, api (OpenAI-compatible endpoint from env/config)."""
    from navrl.agent.planner import ExpertPlanner, RandomPlanner
    if name == "expert":
        return ExpertPlanner()
    if name == "random":
        return RandomPlanner(seed)
    if name == "api":
        try:
            from navrl.agent.api_planner import APIPlanner
        except ImportError as e:  # pragma: no cover
            raise CLIError(f"the api agent is unavailable: {e}") from None
        try:
            return APIPlanner.from_env(**kw)
        except ValueError as e:
            raise CLIError(str(e)) from None
    raise CLIError(f"unknown agent {name!r}; choose from {', '.join(AGENTS)}")


# ---------------------------------------------------------------------- output locations
RUN_FILES = ("metrics.jsonl", "checkpoints", "tb", "sft.pt", "sft.json", "results.json", "results.md", "results.csv",
             "summary.json", "report.html", "filmstrips", "trajectories.jsonl", "frames", "filmstrip.png", "runs",
             "sft", "rl", "success_vs_updates.png", "length_vs_updates.png", "audit.json", "audit.html",
             "verdicts.jsonl")
"""What navrl commands write into an ``--out`` directory (``--overwrite`` removes exactly these)."""
RUN_MARKERS = ("metrics.jsonl", "checkpoints", "sft.pt", "results.json", "summary.json", "trajectories.jsonl",
               "audit.json")
"""Any of these in a directory means it already holds a run."""


CREATED: list[Path] = []
"""Folders this command created for its outputs (the topmost new one of each): removed again,
if they hold no file, when the command is refused or fails (:func:`remove_empty_created`)."""


def remove_empty_created() -> None:
    """Remove the output folders this command created and left without a file."""
    import shutil
    while CREATED:
        top = CREATED.pop()
        if top.is_dir() and not any(q.is_file() or q.is_symlink() for q in top.rglob("*")):
            shutil.rmtree(top, ignore_errors=True)


def _probe_dir(p: Path, flag: str) -> None:
    """Create ``p`` (and parents) and write a probe file in it; CLIError when that fails."""
    import os
    import tempfile
    if p.exists() and not p.is_dir():
        raise CLIError(f"{flag} {p} is a file, not a directory")
    top = None
    for q in (p, *p.parents):   # the topmost folder that does not exist yet
        if q.exists():
            break
        top = q
    try:
        p.mkdir(parents=True, exist_ok=True)
        if top is not None:
            CREATED.append(top)
        fd, tmp = tempfile.mkstemp(prefix=".navrl-probe-", dir=p)
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise CLIError(f"{flag} {p} is not writable ({e.strerror or type(e).__name__})") from None


def holds_run(p: Path) -> bool:
    return p.is_dir() and any((p / m).exists() for m in RUN_MARKERS)


def prepare_out_dir(path, *, resume: bool = False, overwrite: bool = False, replace_own: tuple[str, ...] = (),
                    flag: str = "--out", resumable: bool = False) -> Path:
    """Check an output directory before any work starts.

    Refused (CLIError): a file, a place that cannot be written, a directory that already
    holds a run unless ``resume`` or ``overwrite``. ``overwrite`` removes what navrl wrote
    there (:data:`RUN_FILES`, nothing else). ``replace_own``: files this command may replace
    without asking (``navrl play``'s frames and filmstrip), removed here so none go stale.
    """
    import shutil
    from pathlib import Path
    p = Path(path)
    if resume and overwrite:
        raise CLIError("--resume and --overwrite exclude each other")
    _probe_dir(p, flag)
    if holds_run(p) and not (resume or overwrite):
        own = set(replace_own)
        if not own or any((p / m).exists() for m in RUN_MARKERS if m not in own):
            how = "--resume to continue it or --overwrite" if resumable else "another --out, or --overwrite"
            raise CLIError(f"{flag} {p} already holds a run; use {how} to replace it")
    if overwrite or replace_own:
        for name in (RUN_FILES if overwrite else replace_own):
            q = p / name
            if q.is_dir() and not q.is_symlink():
                shutil.rmtree(q)
            elif q.exists() or q.is_symlink():
                q.unlink()
    return p


def prepare_out_file(path, flag: str = "--out") -> Path:
    """Check a file to be written: not a directory, its folder creatable and writable."""
    from pathlib import Path
    p = Path(path)
    if p.is_dir():
        raise CLIError(f"{flag} {p} is a directory, not a file")
    _probe_dir(p.parent if str(p.parent) else Path("."), flag + " folder")
    return p


# ---------------------------------------------------------------------- fault injection
FAULTS_HELP = ("inject infrastructure faults into the phone world, e.g. device_lost=0.1,app_never_loads=0.05 "
               "(rates in [0, 1]; the episodes they hit are masked, never scored)")


def parse_faults(spec: str | None, known: tuple[str, ...] = ("device_lost", "app_never_loads")) -> dict | None:
    """``--faults NAME=RATE[,NAME=RATE]`` -> {name: rate} (None when not given); names must be
    among ``known`` (the suite's fault names), rates in [0, 1] (validated with pydantic)."""
    if spec is None:
        return None
    from pydantic import TypeAdapter, ValidationError, confloat

    raw: dict[str, float] = {}
    for item in spec.split(","):
        name, eq, val = item.strip().partition("=")
        if not eq or not name:
            raise CLIError(f"bad --faults item {item.strip()!r}: use NAME=RATE, e.g. device_lost=0.1")
        try:
            raw[name.strip()] = float(val)
        except ValueError:
            raise CLIError(f"bad --faults rate {val!r} for {name.strip()}: not a number") from None
    rate = TypeAdapter(confloat(ge=0.0, le=1.0, allow_inf_nan=False))
    for name, value in raw.items():
        if name not in known:
            raise CLIError(f"bad --faults {name}: Extra inputs are not permitted (known: {', '.join(known) or 'none'}; "
                           "rates in [0, 1])")
        try:
            rate.validate_python(value)
        except ValidationError as e:
            raise CLIError(f"bad --faults {name}: {e.errors()[0]['msg']} (known: {', '.join(known)}; "
                           "rates in [0, 1])") from None
    return raw
