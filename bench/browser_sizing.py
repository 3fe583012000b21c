"""How many browser pages a core carries: MiniWoB++ episodes/s against pages per core.

For each page count, a fixed-size pool (no adaptive limit: the raw curve) runs ``--batches``
batches of ``--episodes`` scripted MiniWoB++ episodes (the tasks of ``--tasks``, fresh seeds;
no model, so the figures are the browser side) after one warm-up batch. Printed per page
count: episodes/s, environment steps/s, masked episodes, peak renderer processes (``ps``
sampled every 0.2 s), the browser's CPU seconds per step, and the browser's own time per
call (restore = lease; act and observe on the page's loop), mean and 90th percentile.
The sizing rule (``navrl.device.browser.backend.PAGES_PER_CORE``) is read off this table:
the fewest pages per core past which episodes/s stops rising.

    nice python bench/browser_sizing.py [--pages 1,2,4,8,12,16] [--episodes 48] [--batches 2]
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import threading
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", default="1,2,4,8,12,16")
    ap.add_argument("--episodes", type=int, default=48)
    ap.add_argument("--batches", type=int, default=2)
    ap.add_argument("--tasks", default="click-test,click-button,enter-text")
    ap.add_argument("--phone", default="160x210@1", help="the screen (iphone: what navrl train uses by default)")
    ap.add_argument("--screenshots", default="off", help="off, or eager (a PNG per observation: GiGPO's hashes)")
    args = ap.parse_args()

    from navrl.device.browser import chromium_or_none
    if chromium_or_none() is None:
        print("no Chromium here: skipped")
        return 0
    from navrl.agent.grounders.accessibility import AccessibilityGrounder
    from navrl.device.browser import BrowserBackend
    from navrl.device.browser.backend import machine_cores
    from navrl.device.browser.chromium import renderer_processes
    from navrl.device.browser.device import BrowserDevice
    from navrl.device.pool import DevicePool, PoolConfig
    from navrl.experiments.common import child_cpu_seconds
    from navrl.judge.web import web_judges
    from navrl.rollout.runner import EpisodeRunner
    from navrl.tasks.web import ScriptedWebPlanner, miniwob_task

    calls: dict[str, list[float]] = {"restore": [], "act": [], "observe": []}

    def timed(name: str, fn):
        async def wrapper(self, *a):
            t0 = time.perf_counter()
            try:
                return await fn(self, *a)
            finally:
                calls[name].append(time.perf_counter() - t0)
        return wrapper
    BrowserDevice._a_restore = timed("restore", BrowserDevice._a_restore)   # type: ignore[method-assign]
    BrowserDevice._a_act = timed("act", BrowserDevice._a_act)               # type: ignore[method-assign]
    BrowserDevice._a_observe = timed("observe", BrowserDevice._a_observe)   # type: ignore[method-assign]

    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.2):
            peak[0] = max(peak[0], len(renderer_processes()))
    threading.Thread(target=sample, daemon=True).start()

    names = args.tasks.split(",")
    sj, aj, tj = web_judges()
    runner = EpisodeRunner(ScriptedWebPlanner(), AccessibilityGrounder(), sj, aj, tj)
    cores = machine_cores()
    print(f"{cores} cores, load {os.getloadavg()[0]:.1f}; {args.batches} x {args.episodes} scripted episodes of "
          f"{','.join(names)} per row (after a warm-up batch); screen {args.phone}, screenshots {args.screenshots}\n")
    print(f"{'pages':>5s} {'/core':>5s} {'eps/s':>6s} {'steps/s':>7s} {'masked':>6s} {'renderers':>9s} "
          f"{'CPU ms/step':>11s} {'restore ms':>12s} {'act ms':>12s} {'observe ms':>12s} {'load':>5s}")

    def ms(xs: list[float]) -> str:
        if not xs:
            return "-"
        xs = sorted(xs)
        return f"{1000 * statistics.mean(xs):.0f}/{1000 * xs[int(0.9 * (len(xs) - 1))]:.0f}"

    rng = random.Random(0)
    for pages in [int(x) for x in args.pages.split(",")]:
        pool = DevicePool(BrowserBackend(screenshots=args.screenshots), PoolConfig(size=pages))
        try:
            tot_s = cpu = 0.0
            reasons: dict = {}
            eps = steps = masked = 0
            for b in range(args.batches + 1):
                tasks = [miniwob_task(rng.choice(names), rng.randrange(2**31), phone=args.phone)
                         for _ in range(args.episodes)]
                if b == 1:
                    for v in calls.values():
                        v.clear()
                    peak[0] = 0
                c0, t0 = child_cpu_seconds(), time.perf_counter()
                trajs = runner.run(tasks, devices=pool)
                dt, c1 = time.perf_counter() - t0, child_cpu_seconds()
                if b == 0:
                    continue
                tot_s += dt
                eps += len(trajs)
                steps += sum(1 for tr in trajs for st in tr.steps if st.kind == "device")
                masked += sum(not tr.valid for tr in trajs)
                for tr in trajs:
                    if not tr.valid:
                        reasons[tr.invalid_reason] = reasons.get(tr.invalid_reason, 0) + 1
                cpu += (c1 - c0) if c0 is not None and c1 is not None else 0.0
        finally:
            pool.close()
        print(f"{pages:5d} {pages / cores:5.1f} {eps / tot_s:6.2f} {steps / tot_s:7.1f} {masked:6d} {peak[0]:9d} "
              f"{1000 * cpu / max(1, steps):11.1f} {ms(calls['restore']):>12s} {ms(calls['act']):>12s} "
              f"{ms(calls['observe']):>12s} {os.getloadavg()[0]:5.1f} {reasons or ''}", flush=True)
    stop.set()
    print("\nms columns: mean/90th percentile of the browser's own time per call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
