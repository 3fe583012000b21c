"""Run logging: ``metrics.jsonl`` (one JSON object per update or evaluation) + TensorBoard.

Crash safety: every record is one line, flushed and fsynced before :meth:`MetricsLogger.log`
returns, so a crash loses at most the line being written. :func:`read_metrics` skips such a
truncated last line with one warning; any other damage (a corrupt line in the middle, a
record that is not an object or lacks its ``kind``/``update``, a directory in the file's
place) raises :class:`MetricsError`. :func:`truncate_metrics` cuts the file back to a
resumed checkpoint's update, so a resumed run never glues lines or repeats update numbers.
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Callable

from navrl.fileio import atomic_write_bytes

log = logging.getLogger("navrl.metrics")

KINDS = ("update", "eval")


class MetricsError(ValueError):
    """``metrics.jsonl`` is unreadable or holds a malformed record."""


class MetricsLogger:
    def __init__(self, run_dir: str | Path, tensorboard: bool = True):
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "metrics.jsonl"
        self.tb = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
                self.tb = SummaryWriter(str(self.dir / "tb"))
            except Exception:  # tensorboard missing: jsonl is the record of truth anyway
                self.tb = None

    def log(self, record: dict) -> None:
        # one line per record, flushed and fsynced: a crash loses at most the line being written
        line = (json.dumps(record, default=float) + "\n").encode("utf-8")
        with open(self.path, "ab") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        if self.tb is not None:
            step = int(record.get("update", 0))
            for k, v in _flat(record).items():
                if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "update":
                    self.tb.add_scalar(k, v, step)
            self.tb.flush()

    def truncate_after(self, update: int) -> int:
        """Keep only the records up to ``update`` (see :func:`truncate_metrics`)."""
        return truncate_metrics(self.dir, update)

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flat(v, key + "/"))
        else:
            out[key] = v
    return out


def _check_record(rec: object, where: str) -> dict:
    if not isinstance(rec, dict):
        raise MetricsError(f"{where}: expected a JSON object per line, got {type(rec).__name__}")
    kind = rec.get("kind")
    if kind not in KINDS:
        raise MetricsError(f"{where}: field 'kind' must be one of {list(KINDS)}, got {kind!r}")
    u = rec.get("update")
    if isinstance(u, bool) or not isinstance(u, int) or u < 0:
        raise MetricsError(f"{where}: field 'update' must be an int >= 0, got {u!r}")
    return rec


def _parse(p: Path, warn: Callable[[str], None]) -> list[dict]:
    """The records of ``p``, checked; a bad last line is skipped with a warning."""
    if p.is_dir():
        raise MetricsError(f"{p} is a directory, not a metrics file")
    try:
        data = p.read_bytes()
    except OSError as e:
        raise MetricsError(f"cannot read {p}: {e.strerror or e}") from None
    lines = data.split(b"\n")
    nonempty = [i for i, ln in enumerate(lines) if ln.strip()]
    recs: list[dict] = []
    for i, raw in enumerate(lines):
        if raw.strip():
            try:
                rec = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError):
                if i == nonempty[-1]:
                    warn(f"{p}: skipped a truncated or corrupt last line ({len(raw)} bytes; "
                         "the run was probably interrupted while writing it)")
                    break
                raise MetricsError(f"{p}: line {i + 1} is not a JSON record (corrupt or not a metrics file)") from None
            recs.append(_check_record(rec, f"{p}: line {i + 1}"))
    return recs


def read_metrics(run_dir: str | Path, warn: Callable[[str], None] | None = None) -> list[dict]:
    """The records of ``run_dir/metrics.jsonl`` ([] when there is none).

    A truncated last line is skipped with one warning; for an update number logged twice
    (a run resumed by an older navrl) the later record wins, with one warning.

    Raises:
        MetricsError: the file is a directory, unreadable, or holds a malformed record
        anywhere but its last line.
    """
    warn = warn or log.warning
    p = Path(run_dir) / "metrics.jsonl"
    if not p.exists():
        return []
    recs = _parse(p, warn)
    out, dup = _dedupe(recs)
    if dup:
        warn(f"{p}: {dup} records repeat an earlier update number; the later ones are used")
    return out


def _dedupe(recs: list[dict]) -> tuple[list[dict], int]:
    """One record per (kind, update), the later one winning (it comes from the resumed run)."""
    last = {(r["kind"], r["update"]): i for i, r in enumerate(recs)}
    out = [r for i, r in enumerate(recs) if last[(r["kind"], r["update"])] == i]
    return out, len(recs) - len(out)


def truncate_metrics(run_dir: str | Path, update: int, warn: Callable[[str], None] | None = None) -> int:
    """Rewrite ``run_dir/metrics.jsonl`` (atomically) keeping the records with update <= ``update``.

    What a resumed run calls before it appends: records written after the checkpoint it
    resumes from (and a truncated last line) are dropped, so update numbers stay unique.
    Returns the number of records kept.
    """
    p = Path(run_dir) / "metrics.jsonl"
    if not p.exists():
        return 0
    recs = _parse(p, warn or log.warning)
    kept, _ = _dedupe([r for r in recs if r["update"] <= update])
    text = "".join(json.dumps(r, default=float) + "\n" for r in kept)
    atomic_write_bytes(p, text.encode("utf-8"))
    return len(kept)
