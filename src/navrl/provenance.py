"""Where a result came from: navrl's version, the commit of navrl's own checkout, the seed and
a digest of the configuration. Every summary and results file carries these
(``summary.json``, ``results.json``), so two results can be told apart or matched later."""
from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

PACKAGE_DIR = Path(__file__).resolve().parent
UNKNOWN = "unknown"


def _git(where: Path, *args: str) -> str | None:
    try:
        r = subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def git_commit(package_dir: Path | None = None) -> str:
    """The commit of the checkout navrl itself is imported from (``HEAD``, ``-dirty`` appended
    when tracked files differ from it), never that of the current directory's repository;
    ``"unknown"`` when navrl is not imported from a git checkout (an installed wheel)."""
    pkg = Path(package_dir or PACKAGE_DIR).resolve()
    # navrl's own files tracked there: a navrl installed inside another repository (a venv in a
    # user's project) is not that repository's commit
    if _git(pkg, "ls-files", "--error-unmatch", "__init__.py") is None:
        return UNKNOWN
    head = _git(pkg, "rev-parse", "HEAD")
    if not head:
        return UNKNOWN
    dirty = _git(pkg, "status", "--porcelain", "--untracked-files=no")
    return head + ("-dirty" if dirty else "")


def _plain(config: Any) -> Any:
    if is_dataclass(config) and not isinstance(config, type):
        return asdict(config)
    if hasattr(config, "model_dump"):   # pydantic
        return config.model_dump()
    if hasattr(config, "__dict__") and not isinstance(config, (dict, list, tuple, str, int, float, bool)):
        return {k: _plain(v) for k, v in vars(config).items()}
    return config


def config_digest(config: Any) -> str:
    """A short, stable digest (16 hex digits of SHA-256) of a configuration: a dataclass, a
    pydantic model or plain JSON data; equal configurations give equal digests."""
    text = json.dumps(_plain(config), sort_keys=True, default=lambda o: _plain(o) if not isinstance(o, (set, frozenset))
                      else sorted(o, key=str))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def provenance(seed: Any = None, config: Any = None) -> dict:
    """``{"navrl_version", "commit", "seed", "config_digest"}`` for a summary or results file."""
    from navrl import __version__
    return {"navrl_version": __version__, "commit": git_commit(), "seed": seed,
            "config_digest": None if config is None else config_digest(config)}
