"""Run logging: ``metrics.jsonl`` (one JSON object per update or evaluation) + TensorBoard."""
from __future__ import annotations

import json
from pathlib import Path


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
        # one line per record, flushed: a crash loses at most the line being written
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, default=float) + "\n")
        if self.tb is not None:
            step = int(record.get("update", 0))
            for k, v in _flat(record).items():
                if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "update":
                    self.tb.add_scalar(k, v, step)
            self.tb.flush()

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


def read_metrics(run_dir: str | Path) -> list[dict]:
    p = Path(run_dir) / "metrics.jsonl"
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
