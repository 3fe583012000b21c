"""Save trajectories as JSONL plus PNG frames; load them back."""
from __future__ import annotations

import shutil
from pathlib import Path

from navrl.fileio import atomic_write_bytes, atomic_write_text
from navrl.rollout.records import Trajectory


def save_trajectories(trajs: list[Trajectory], out_dir: str | Path, frames: bool = True) -> Path:
    """Write ``trajectories.jsonl`` (atomically) and, with ``frames``, ``frames/NNNN/KK.png``.

    Frames of an earlier save into the same directory are removed first: they would no
    longer match the trajectories (a longer episode leaves stale frames behind)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if (out / "frames").is_dir():
        shutil.rmtree(out / "frames")
    if frames:
        for i, tr in enumerate(trajs):
            for k, png in enumerate(tr.frames):
                atomic_write_bytes(out / "frames" / f"{i:04d}" / f"{k:02d}.png", png)
    path = out / "trajectories.jsonl"
    atomic_write_text(path, "".join(tr.to_json() + "\n" for tr in trajs))
    return path


def load_trajectories(path: str | Path) -> list[Trajectory]:
    p = Path(path)
    if p.is_dir():
        p = p / "trajectories.jsonl"
    out = []
    with open(p, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    out.append(Trajectory.from_json(line))
                except (ValueError, TypeError, KeyError) as e:
                    raise ValueError(f"{p}:{n}: not a trajectory record ({e})") from None
    frames_dir = p.parent / "frames"
    for i, tr in enumerate(out):
        d = frames_dir / f"{i:04d}"
        if d.is_dir():
            tr.frames = [f.read_bytes() for f in sorted(d.glob("*.png"))]
    return out
