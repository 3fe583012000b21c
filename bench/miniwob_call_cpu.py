"""Where MiniWoB++ browser CPU goes, per device call type, on one page (no planner, no pool).

One :class:`BrowserDevice` on MiniWoB's 160x210@1 screen runs the episodes of the
experiment's tasks one call at a time, and the CPU seconds of every process of the stack are
read from ``/proc`` before and after each call: Chromium's browser process, its renderers,
its GPU and utility processes ("other"), Playwright's Node driver, and this Python process
(its host loop thread speaks CDP). Calls are sequential, so each delta is that call's (the
tick granularity of ``/proc`` averages out over hundreds of calls). Call types, as the pool
makes them in RL:

- **load**: the episode start on a page that showed another task (a navigation in the same
  browser context, then the page's reset hook);
- **restore**: the episode start on a page that shows the task (the page's own reset hook,
  a new seed);
- **health**: the pool's probe after each restore;
- **act**: a tap on a random tappable node (or typing a goal word into a focused field),
  with the settle before and after;
- **observe**: the observation the runner reads after the act (prefetched by the act),
  in ``--screenshots`` mode (``eager``: a PNG with every observation, what GiGPO's perceptual
  hashes read until 2026-12; ``on_read``: no image until one is read);
- **shot**: with ``on_read``, the screenshot read the way the runner reads it: once per
  distinct UI tree (its perceptual-hash cache).

Then per environment step at the mix of RL (``--loads-per-step``, ``--restores-per-step``,
``--shots-per-step``, as counted in ``bench/miniwob_rl_speed.py``'s setting; defaults: this
checkout's counts): the Chromium CPU an environment step costs. Also ``idle``: the page
left alone. Prints figures; asserts nothing.

    python bench/miniwob_call_cpu.py [--episodes 3] [--steps 6] [--screenshots on_read|eager|off]
    # 0e2e04c's mix (eager screenshots; 198 page loads, 256 restores and ~220 more reads in 905 steps):
    python bench/miniwob_call_cpu.py --screenshots eager --loads-per-step 0.219 --extra-reads-per-step 0.24
"""
from __future__ import annotations

import argparse
import os
import random
import re
import time
from pathlib import Path

KINDS = ("renderer", "browser", "gpu", "other", "node", "python")
CHROMIUM = ("renderer", "browser", "gpu", "other")


class Procs:
    """CPU seconds by process kind of this process and its descendants."""

    def __init__(self) -> None:
        self.me = os.getpid()
        self.tck = os.sysconf("SC_CLK_TCK")
        self.pids: dict[int, str] = {}
        self.rescan()

    def rescan(self) -> None:
        parent, cmd = {}, {}
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                cmd[int(d.name)] = (d / "cmdline").read_bytes()
            except (OSError, IndexError, ValueError):
                continue
        self.pids = {}
        for pid, c in cmd.items():
            p, seen = pid, 0
            while p and p != self.me and seen < 64:
                p, seen = parent.get(p), seen + 1
            if p != self.me:
                continue
            if pid == self.me:
                k = "python"
            elif b"node" in c.split(b"\0")[0]:
                k = "node"
            elif b"--type=renderer" in c:
                k = "renderer"
            elif b"--type=gpu-process" in c:
                k = "gpu"
            elif b"--type=" in c:
                k = "other"
            else:
                k = "browser"
            self.pids[pid] = k

    def read(self) -> dict[str, float]:
        out = dict.fromkeys(KINDS, 0.0)
        for pid, k in self.pids.items():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    rest = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            out[k] += (int(rest[11]) + int(rest[12])) / self.tck
        return out


class Meter:
    def __init__(self, procs: Procs) -> None:
        self.procs = procs
        self.cpu: dict[str, dict[str, float]] = {}
        self.n: dict[str, int] = {}
        self.wall: dict[str, float] = {}

    def call(self, name: str, fn, *args):
        g0, w0 = self.procs.read(), time.perf_counter()
        try:
            return fn(*args)
        finally:
            w = time.perf_counter() - w0
            g1 = self.procs.read()
            acc = self.cpu.setdefault(name, dict.fromkeys(KINDS, 0.0))
            for k in KINDS:
                acc[k] += g1[k] - g0[k]
            self.n[name] = self.n.get(name, 0) + 1
            self.wall[name] = self.wall.get(name, 0.0) + w

    def per_call(self, name: str) -> dict[str, float]:
        return {k: 1000 * v / max(1, self.n[name]) for k, v in self.cpu[name].items()}

    def print(self) -> None:
        print(f"{'call':>8} {'n':>5} " + " ".join(f"{k:>8}" for k in KINDS) + f" {'chromium':>8} {'wall':>8}"
              "   (ms per call)")
        for name in self.n:
            d = self.per_call(name)
            print(f"{name:>8} {self.n[name]:>5} " + " ".join(f"{d[k]:8.2f}" for k in KINDS)
                  + f" {sum(d[k] for k in CHROMIUM):8.2f} {1000 * self.wall[name] / self.n[name]:8.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=3, help="episodes per task and visit")
    ap.add_argument("--visits", type=int, default=2, help="times each task's page is loaded")
    ap.add_argument("--steps", type=int, default=6, help="random steps per episode at most")
    ap.add_argument("--screenshots", default="on_read")
    ap.add_argument("--phone", default="160x210@1")
    ap.add_argument("--loads-per-step", type=float, default=25 / 916,
                    help="page loads per environment step in RL (this checkout: ~25 in ~916 steps; 0e2e04c: 198 in 905)")
    ap.add_argument("--restores-per-step", type=float, default=256 / 916, help="episode starts per environment step")
    ap.add_argument("--shots-per-step", type=float, default=0.23,
                    help="on_read screenshots per step (the runner hashes one per distinct UI tree: 202-219 in 892-972)")
    ap.add_argument("--extra-reads-per-step", type=float, default=0.0,
                    help="observations read and thrown away per step (0e2e04c: the prefetch after a restore, ~0.24)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    import yaml

    from navrl.actions import Action, ActionKind
    from navrl.device.browser.app import WebSnapshot
    from navrl.device.browser.device import BrowserDevice
    from navrl.rollout.step import ui_hash
    from navrl.worlds.web.tasks import miniwob_app

    load0 = os.getloadavg()[0]
    cfg = yaml.safe_load((Path(__file__).resolve().parents[1] / "src/navrl/experiments/configs/miniwob.yaml")
                         .read_text())
    tasks = cfg["tasks"]
    rng = random.Random(a.seed)
    dev = BrowserDevice(phone=a.phone, screenshots=a.screenshots)
    dev.restore(WebSnapshot.start(miniwob_app(tasks[-1]), 0, a.phone))
    dev.observe()
    procs = Procs()
    m = Meter(procs)
    seed = 1000
    hashed: set[str] = set()
    for visit in range(a.visits):
        for name in tasks:
            app = miniwob_app(name)
            for e in range(a.episodes):
                seed += 1
                m.call("load" if e == 0 else "restore", dev.restore, WebSnapshot.start(app, seed, a.phone))
                if e == 0:
                    procs.rescan()
                m.call("health", dev.health)
                obs = dev.observe()
                goal = obs.page.get("utterance") or ""
                words = re.findall(r"[A-Za-z0-9]+", goal) or ["x"]
                for _ in range(a.steps):
                    if obs.page.get("done"):
                        break
                    foc = obs.focused_node()
                    taps = [n for n in obs.nodes if "tap" in n.actions]
                    if foc is not None and foc.role == "textfield" and rng.random() < 0.5:
                        act = Action(ActionKind.TYPE, text=rng.choice(words))
                    elif taps:
                        n = rng.choice(taps)
                        act = Action(ActionKind.TAP, x=n.center[0], y=n.center[1])
                    else:
                        break
                    m.call("act", dev.act, act)
                    obs = m.call("observe", dev.observe)
                    if a.screenshots == "on_read" and ui_hash(obs) not in hashed:
                        hashed.add(ui_hash(obs))
                        m.call("shot", lambda: obs.screenshot)
    steps = m.n.get("act", 0)
    idle_s = min(10.0, sum(m.wall.values()) / max(1, steps) * 100)
    m.call("idle", time.sleep, idle_s)
    m.n["idle"] = 100       # per a hundred steps' time
    print(f"MiniWoB++ {len(tasks)} tasks x {a.visits} visits x {a.episodes} episodes on one page, {a.phone}, "
          f"screenshots={a.screenshots}, {steps} random steps; load average {load0:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after")
    m.print()
    pc = {k: m.per_call(k) for k in m.n}
    chrom = {k: sum(pc[k][x] for x in CHROMIUM) for k in pc}
    mix = {"load": a.loads_per_step, "restore": a.restores_per_step - a.loads_per_step,
           "health": a.restores_per_step, "act": 1.0, "observe": 1.0 + a.extra_reads_per_step,
           "shot": a.shots_per_step}
    parts = {k: w * chrom[k] for k, w in mix.items() if k in chrom}
    total = sum(parts.values())
    print(f"Chromium CPU per environment step at RL's mix ({a.loads_per_step:.3f} loads, {a.restores_per_step:.3f} "
          f"episode starts, {1 + a.extra_reads_per_step:.2f} observations"
          + (f", {a.shots_per_step:.2f} screenshots" if "shot" in chrom else "") + f" per step): {total:.1f} ms = "
          + " + ".join(f"{k} {v:.1f}" for k, v in parts.items()))
    dev.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
