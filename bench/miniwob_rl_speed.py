"""MiniWoB++ RL throughput: environment steps/s of `navrl experiment miniwob`'s BC + RL stage
in the committed run's setting (23 tasks, one pointer planner, 16 browser pages, MiniWoB's
160x210 frame, the `demo` preset, GiGPO, 16 tasks x 4 rollouts x <= 12 steps per update), for
this checkout and for a previous commit measured in the same run, as a ratio; also the
shares of rollout time spent waiting on the browser and in the planner, and CPU seconds of
the browser vs the learner.

Each implementation runs the experiment (BC from a few scripted episodes per scripted task,
then ``--updates`` RL updates, one evaluation episode per task) in its own subprocess with
``PYTHONPATH`` at its ``src`` (the previous commit from a temporary ``git worktree add
--detach``, removed after) and the figures are read from the run's ``results.json``
(``throughput.bc_rl``, the numbers the committed `docs/results/miniwob/results.md` reports:
9.6 steps/s over 40 updates at fb39021). Implementations run one after the other: on a
2-core machine the browser pages of two runs side by side would measure contention.

Prints; asserts nothing. Usage: python bench/miniwob_rl_speed.py [--updates 4] [--bc 10]
[--ref f0ad593 | --ref none] [--ref-src PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "docs" / "results" / "miniwob" / "results.json"
_MAIN = "import sys; from navrl.cli.main import main; sys.exit(main(sys.argv[1:]))"


def _config(updates: int, bc: int) -> dict:
    base = yaml.safe_load((ROOT / "src" / "navrl" / "experiments" / "configs" / "miniwob.yaml").read_text())
    return {**base, "updates": updates, "bc_episodes_per_task": bc, "eval_episodes": 1, "methods": ["bc_rl"]}


def _run(src: Path, cfg_path: Path, out: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    subprocess.run([sys.executable, "-c", _MAIN, "experiment", "miniwob", "--config", str(cfg_path), "--out", str(out),
                    "--overwrite"], env=env, check=True, stdout=subprocess.DEVNULL)
    return json.loads((out / "results.json").read_text())["throughput"]["bc_rl"]


def _line(name: str, t: dict) -> str:
    cpu = ""
    if t.get("browser_cpu_s") is not None:
        total = t["browser_cpu_s"] + t["learner_cpu_s"]
        cpu = (f"; CPU browser {t['browser_cpu_s']:.0f} core-s ({100 * t['browser_cpu_s'] / max(1e-9, total):.0f}%), "
               f"learner {t['learner_cpu_s']:.0f}")
    return (f"{name:>28}: {t['env_steps_per_s']:6.1f} env steps/s ({t['env_steps']} steps in {t['seconds']:.0f} s); "
            f"rollout time browser {100 * t['rollout_share_browser']:.0f}%, planner "
            f"{100 * t['rollout_share_planner']:.0f}%{cpu}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--updates", type=int, default=4, help="RL updates per implementation")
    ap.add_argument("--bc", type=int, default=10, help="scripted BC episodes per scripted task")
    ap.add_argument("--ref", default="f0ad593", help="previous commit to measure too ('none': only this checkout)")
    ap.add_argument("--ref-src", help="a checkout's src of the previous implementation (instead of a worktree)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="navrl-mwspeed-") as tmp:
        cfg_path = Path(tmp) / "miniwob.yaml"
        cfg_path.write_text(yaml.safe_dump(_config(a.updates, a.bc)))
        results: dict[str, dict] = {}
        tree = None
        if a.ref_src:
            ref_src: Path | None = Path(a.ref_src)
        elif a.ref != "none":
            tree = Path(tmp) / "ref"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), a.ref], check=True)
            ref_src = tree / "src"
        else:
            ref_src = None
        try:
            if ref_src is not None:
                results[f"{a.ref} (previous)"] = _run(ref_src, cfg_path, Path(tmp) / "out-ref")
            results["this checkout"] = _run(ROOT / "src", cfg_path, Path(tmp) / "out-new")
        finally:
            if tree is not None:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    print(f"MiniWoB++ BC + RL, 23 tasks, 16 pages, 160x210, {a.updates} RL updates of 16 x 4 rollouts; "
          f"load average now {os.getloadavg()[0]:.1f}")
    if COMMITTED.exists():
        committed = json.loads(COMMITTED.read_text())["throughput"]["bc_rl"]
        print(_line("committed run (40 updates)", committed))
    else:
        committed = None
    for name, t in results.items():
        print(_line(name, t))
    new = results["this checkout"]["env_steps_per_s"]
    for name, t in results.items():
        if name != "this checkout":
            print(f"ratio this checkout / {name}: {new / max(1e-9, t['env_steps_per_s']):.2f}x")
    if committed:
        print(f"ratio this checkout / committed run: {new / max(1e-9, committed['env_steps_per_s']):.2f}x")


if __name__ == "__main__":
    main()
