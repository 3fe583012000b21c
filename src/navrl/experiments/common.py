"""Shared by the experiments: reading a YAML config strictly, the first validation error as
one line, the CPU time of child processes (the commit a result was produced at:
:mod:`navrl.provenance`)."""
from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError

from navrl.rl.config import ConfigError


def first_error(e: ValidationError) -> str:
    """A pydantic error as one line: where, what, and the offending value."""
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err["loc"]) or "file"
    got = err.get("input")
    shown = "" if isinstance(got, dict) else f", got {got!r:.60}"
    return f"{loc}: {err['msg'][0].lower() + err['msg'][1:]}{shown}"


def load_config_file(path: str | Path, schema: type[BaseModel]) -> BaseModel:
    """``path``'s YAML mapping checked against ``schema``; any problem is one ConfigError line."""
    p = Path(path)
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"cannot read {p}: not a UTF-8 text file") from None
    except OSError as e:
        raise ConfigError(f"cannot read {p}: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise ConfigError(f"{p}: YAML syntax error{where}: {getattr(e, 'problem', None) or e}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{p}: expected a mapping of settings, got {type(raw).__name__}")
    try:
        return schema(**{str(k): v for k, v in raw.items()})
    except ValidationError as e:
        raise ConfigError(f"{p}: {first_error(e)}") from None


def child_cpu_seconds() -> float | None:
    """CPU seconds (user + system) used so far by this process's live descendants (the
    browser, its renderers): read from ``/proc``, None where there is no ``/proc``."""
    import os
    if not os.path.isdir("/proc"):
        return None
    parent: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except OSError:       # gone meanwhile
            continue
        parent[int(name)], ticks[int(name)] = int(rest[1]), int(rest[11]) + int(rest[12])
    me, total = os.getpid(), 0
    for pid in ticks:
        p, seen = parent.get(pid), 0
        while p and p != me and seen < 64:
            p, seen = parent.get(p), seen + 1
        if p == me:
            total += ticks[pid]
    return total / os.sysconf("SC_CLK_TCK")
