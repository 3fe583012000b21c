"""How many browser pages a core carries: MiniWoB++ episodes/s against pages per core.

One fixed-size pool per page count (no adaptive limit: the raw curve), all alive at once;
``--batches`` rounds after a warm-up round, each round one batch of ``--episodes`` MiniWoB++
episodes (the tasks of ``--tasks``, fresh seeds) on every pool in turn (order reversed every
other round), so the machine's load drift (other jobs) hits every page count alike.
Planner: the scripted solutions (the browser side alone), or ``--policy sft.pt`` (the RL
learner's planner on this CPU, with perceptual hashes of ``--screenshots`` as GiGPO takes
them). Printed per page count: episodes/s, environment steps/s, masked episodes, the
browser's CPU ms per step, the share of wall time in the planner and waiting on devices,
the browser's own time per call (restore = lease; act and observe on the page's loop),
mean/90th percentile, and the load average. The sizing rule
(``navrl.device.browser.backend.PAGES_PER_CORE``) is read off this table: the fewest pages
per core past which episodes/s stops rising.

    nice python bench/browser_sizing.py [--pages 1,2,4,8,16] [--episodes 48] [--batches 2]
    nice python bench/browser_sizing.py --policy runs/bc3/sft.pt --phone iphone --screenshots thumb
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
    ap.add_argument("--policy", default=None, help="a policy file (sft.pt): its planner plans, as in RL (else the "
                    "scripted solutions: the browser side alone)")
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
    from navrl.worlds.web.judges import web_judges
    from navrl.rollout.runner import EpisodeRunner, RunnerConfig
    from navrl.worlds.web.tasks import miniwob_task
    from navrl.agent.planner import ExpertPlanner

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
    cores = machine_cores()
    print(f"{cores} cores, load {os.getloadavg()[0]:.1f}; {args.batches} x {args.episodes} episodes "
          f"({'policy ' + args.policy if args.policy else 'scripted'}) of "
          f"{','.join(names)} per row (after a warm-up batch); screen {args.phone}, screenshots {args.screenshots}\n")

    def ms(xs: list[float]) -> str:
        if not xs:
            return "-"
        xs = sorted(xs)
        return f"{1000 * statistics.mean(xs):.0f}/{1000 * xs[int(0.9 * (len(xs) - 1))]:.0f}"

    rng = random.Random(0)
    planner = ExpertPlanner()
    if args.policy:
        from navrl.experiments.pipeline import load_policy
        planner = load_policy(args.policy)             # the RL learner's planner, on this CPU
    runner = EpisodeRunner(planner, AccessibilityGrounder(), sj, aj, tj,
                           config=RunnerConfig(phash=args.screenshots != "off", max_steps=20))
    counts = [int(x) for x in args.pages.split(",")]
    pools = {p: DevicePool(BrowserBackend(screenshots=args.screenshots), PoolConfig(size=p)) for p in counts}
    tot = {p: {"s": 0.0, "cpu": 0.0, "eps": 0, "steps": 0, "masked": 0, "reasons": {}, "load": [],
               "calls": {k: [] for k in calls}, "planner": 0.0, "device": 0.0} for p in counts}
    try:
        for b in range(args.batches + 1):         # round-robin: every page count sees the same load drift
            for pages in (counts if b % 2 else counts[::-1]):
                tasks = [miniwob_task(rng.choice(names), rng.randrange(2**31), phone=args.phone)
                         for _ in range(args.episodes)]
                for v in calls.values():
                    v.clear()
                tm0 = dict(runner.timings)
                c0, t0 = child_cpu_seconds(), time.perf_counter()
                trajs = runner.run(tasks, devices=pools[pages])
                dt, c1 = time.perf_counter() - t0, child_cpu_seconds()
                if b == 0:
                    continue                       # warm-up: every page opens its first context
                t = tot[pages]
                t["s"] += dt
                t["eps"] += len(trajs)
                t["steps"] += sum(1 for tr in trajs for st in tr.steps if st.kind == "device")
                t["cpu"] += (c1 - c0) if c0 is not None and c1 is not None else 0.0
                t["load"].append(os.getloadavg()[0])
                t["planner"] += runner.timings["planner"] - tm0["planner"]
                t["device"] += runner.timings["device"] - tm0["device"]
                for k, v in calls.items():
                    t["calls"][k] += v
                for tr in trajs:
                    if not tr.valid:
                        t["masked"] += 1
                        t["reasons"][tr.invalid_reason] = t["reasons"].get(tr.invalid_reason, 0) + 1
            print(f"round {b} done", flush=True)
    finally:
        for pool in pools.values():
            pool.close()
    print(f"\n{'pages':>5s} {'/core':>5s} {'eps/s':>6s} {'steps/s':>7s} {'masked':>6s} {'CPU ms/step':>11s} "
          f"{'planner %':>9s} {'waiting %':>9s} {'restore ms':>12s} {'act ms':>12s} {'observe ms':>12s} {'load':>5s}")
    for pages in counts:
        t = tot[pages]
        print(f"{pages:5d} {pages / cores:5.1f} {t['eps'] / t['s']:6.2f} {t['steps'] / t['s']:7.1f} {t['masked']:6d} "
              f"{1000 * t['cpu'] / max(1, t['steps']):11.1f} {100 * t['planner'] / t['s']:9.0f} "
              f"{100 * t['device'] / t['s']:9.0f} {ms(t['calls']['restore']):>12s} {ms(t['calls']['act']):>12s} "
              f"{ms(t['calls']['observe']):>12s} {statistics.mean(t['load']):5.1f} {t['reasons'] or ''}")
    print(f"peak renderer processes (all pools together, {sum(counts)} pages): {peak[0]}")
    stop.set()
    print("\nms columns: mean/90th percentile of the browser's own time per call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
